#!/usr/bin/env bash
# The simulated-GPU build (-DXMLT_CUDA=SIM, gpusim/) in build-sim/ and the tests that exercise the
# CUDA backend there: every CUDA test (ctest label kernels_cuda) with XMLT_REQUIRE_GPU=1, so that
# a skip fails; the simulator's own tests and xmltrain on Bibtex against CPU devices (label gpusim);
# the engine and scheduler tests, which see two simulated GPUs (XMLT_SIM_GPUS, XMLT_SIM_GPU_MEMORY:
# see README). On the simulator the backend's logic runs, not its speed. Run by scripts/test.sh (after the normal build) and by
# scripts/test.sh --gpu-sim. Extra arguments go to cmake's configure step; XMLT_SIM_BUILD_DIR
# changes the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build_dir=${XMLT_SIM_BUILD_DIR:-build-sim}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=SIM -DXMLT_BUILD_BENCHMARKS=OFF "$@" >/dev/null
start=$SECONDS
cmake --build "$build_dir" -j"$(nproc)" --target kernels_cuda_tests gpusim_tests engine_tests scheduler_tests xmltrain
echo "test-gpu-sim: built in $((SECONDS - start)) s" >&2
start=$SECONDS
status=0
XMLT_REQUIRE_GPU=1 ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" -L '^(kernels_cuda|gpusim|engine|scheduler)$' || status=$?
echo "test-gpu-sim: tests ran in $((SECONDS - start)) s" >&2
exit "$status"
