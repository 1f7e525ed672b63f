#!/usr/bin/env bash
# The simulated-GPU build (-DXMLT_CUDA=SIM, gpusim/) in build-sim/ and the tests that exercise the
# CUDA backend there: every CUDA test (ctest label kernels_cuda) with XMLT_REQUIRE_GPU=1, so that
# a skip fails; the simulator's own tests and xmltrain on Bibtex against CPU devices (label gpusim);
# the engine and scheduler tests, which see two simulated GPUs (XMLT_SIM_GPUS, XMLT_SIM_GPU_MEMORY:
# see docs/gpus.md); the Python package's GPU test (label python: python/tests/test_simulated_gpus.py).
# On the simulator the backend's logic runs, not its speed. Run by scripts/test.sh (after the
# normal build) and by scripts/test.sh --gpu-sim.
# Every test runs with racecheck, initcheck and synccheck on (gpusim/access_checks.h). Then a
# second, seeded pass (plain build only): the kernel-level CUDA tests and the simulator's own once
# more, each block's threads in turn orders drawn from a seed (XMLT_SIM_ORDER, see
# gpusim/check_options.h) that changes daily (the UTC date as YYYYMMDD; XMLT_SIM_ORDER_SEED sets
# another) and is printed; a failed launch names it, and XMLT_SIM_ORDER=SEED replays it. Not in the
# seeded pass, to keep it within about three minutes of CI: the end-to-end runs of xmltrain
# (gpu_sim_*), the 4- and 8-GPU and no-peer-access variants, and the CUDA tests that run the
# whole model at full label counts or over many sort tiles (their kernels run in the seeded pass
# through the smaller tests).
# Usage: scripts/test-gpu-sim.sh [--sanitize address] [extra cmake configure arguments]
#   --sanitize address  the same build under ASan and UBSan in build-sim-asan/ (RelWithDebInfo),
#                       with the CUDA tests and the simulator's: a kernel reading past a device
#                       allocation (an exact-size heap block) or past its dynamic shared memory
#                       fails its test, as compute-sanitizer's memcheck would on a card. Reports go
#                       to BUILD/sanitizer-logs/ and are printed after the tests.
# XMLT_SIM_BUILD_DIR changes the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
targets=(kernels_cuda_tests gpusim_tests engine_tests scheduler_tests run_tests xmltrain _xmltrain)
labels='^(kernels_cuda|gpusim|engine|scheduler|run|python)$'
exclude=()
if [[ "${1:-}" == "--sanitize" ]]; then
  [[ "${2:-}" == "address" ]] || { echo "test-gpu-sim.sh: --sanitize takes address, not '${2:-}'" >&2; exit 2; }
  shift 2
  build_dir=${XMLT_SIM_BUILD_DIR:-build-sim-asan}
  set -- -DXMLT_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  # The CPU-side engine and scheduler tests run under ASan in build-asan/ already; the end-to-end
  # runs are minutes each under ASan.
  targets=(kernels_cuda_tests gpusim_tests)
  labels='^(kernels_cuda|gpusim)$'
  # The merges' property tests on 8 GPUs (5 minutes under ASan) run in the plain simulated tier;
  # here the same kernels run on 2 GPUs and on 4 without peer access.
  exclude=(-E '^gpu_sim_(train|algos|resume|merge)$|\.on_8_gpus$')
  logs=$build_dir/sanitizer-logs
  [[ $logs == /* ]] || logs=$PWD/$logs
  rm -rf "$logs" && mkdir -p "$logs"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_segv_handler=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}:log_path=$logs/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
else
  build_dir=${XMLT_SIM_BUILD_DIR:-build-sim}
fi
# shellcheck source=scripts/compiler-cache.sh
source scripts/compiler-cache.sh  # after build/, most of this build's objects are build/'s
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=SIM -DXMLT_BUILD_BENCHMARKS=OFF \
  "${compiler_cache_args[@]}" "$@" >/dev/null
start=$SECONDS
cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}"
echo "test-gpu-sim: built in $((SECONDS - start)) s" >&2
start=$SECONDS
status=0
XMLT_REQUIRE_GPU=1 ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" -L "$labels" "${exclude[@]}" ||
  status=$?
echo "test-gpu-sim: tests ran in $((SECONDS - start)) s" >&2
if [[ -z "${logs:-}" ]]; then
  seed=${XMLT_SIM_ORDER_SEED:-$(date -u +%Y%m%d)}
  echo "test-gpu-sim: the seeded pass, XMLT_SIM_ORDER=$seed (replay a failure with XMLT_SIM_ORDER=$seed)" >&2
  start=$SECONDS
  XMLT_SIM_ORDER=$seed XMLT_REQUIRE_GPU=1 ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" \
    -L '^(kernels_cuda|gpusim)$' \
    -E '^gpu_sim_|\.on_[48]_gpus$|\.without_peer_access$|^CudaMlpTable1Labels\.|^CudaDeviceAdasum\.EqualsTheHostMerger|^CudaSparseMlp\.(BiasGradientPast|GradientOfBatchSpanning|FirstLayerWider)' ||
    { status=$?; echo "test-gpu-sim: the seeded pass failed with XMLT_SIM_ORDER=$seed" >&2; }
  echo "test-gpu-sim: the seeded pass (XMLT_SIM_ORDER=$seed) ran in $((SECONDS - start)) s" >&2
fi
if [[ -n "${logs:-}" ]] && ! bash scripts/sanitizer-reports.sh "$logs" test-gpu-sim; then
  [[ $status -ne 0 ]] || status=1
fi
exit "$status"
