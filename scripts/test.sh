#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and end-to-end) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir "${XMLT_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
