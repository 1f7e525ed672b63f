#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and end-to-end) with ctest.
# Usage: scripts/test.sh [--sanitize address|thread] [extra cmake configure arguments]
#   --sanitize address  ASan + UBSan build in build-asan/ (CUDA off)
#   --sanitize thread   TSan build in build-tsan/ (CUDA off). Debian's TBB is not instrumented,
#                       so TSan cannot see TBB's own synchronization and reports races inside
#                       every parallel loop; it needs a TSan-built TBB to be useful.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--sanitize" ]]; then
  kind=${2:?"--sanitize needs address or thread"}
  shift 2
  case $kind in
    address) export XMLT_BUILD_DIR=${XMLT_BUILD_DIR:-build-asan} ;;
    thread) export XMLT_BUILD_DIR=${XMLT_BUILD_DIR:-build-tsan} ;;
    *) echo "test.sh: --sanitize takes address or thread, not '$kind'" >&2; exit 2 ;;
  esac
  set -- -DXMLT_SANITIZE="$kind" -DXMLT_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXMLT_BUILD_BENCHMARKS=OFF "$@"
  # Leaks in third-party singletons are not ours; races and memory errors are.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
fi
bash scripts/build.sh "$@"
ctest --test-dir "${XMLT_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
