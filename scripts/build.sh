#!/usr/bin/env bash
# Configures and builds xmltrain into build/ (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck source=scripts/compiler-cache.sh
source scripts/compiler-cache.sh
build_dir=${XMLT_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${compiler_cache_args[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
