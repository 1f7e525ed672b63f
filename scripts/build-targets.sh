#!/usr/bin/env bash
# Builds only the given targets (e.g. xmltrain) in build/, configuring it as scripts/build.sh does
# when it is not configured yet: for scripts that need one binary, not the whole project.
# Usage: scripts/build-targets.sh TARGET...   (XMLT_BUILD_DIR changes the folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
# shellcheck source=scripts/compiler-cache.sh
source scripts/compiler-cache.sh
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  bash scripts/setup.sh
  source scripts/compiler-cache.sh  # ccache may have just been installed
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${compiler_cache_args[@]}" >/dev/null
fi
cmake --build "$build_dir" -j"$(nproc)" --target "$@" >/dev/null
