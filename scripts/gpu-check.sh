#!/usr/bin/env bash
# Everything that needs a GPU, in one call: unpacks the carried Debian packages (.debs/, made by
# scripts/fetch-gpu-debs.sh) into a private prefix, builds with CUDA (and MPI, if two ranks start),
# runs the whole test suite, compute-sanitizer memcheck and racecheck on the CUDA kernel tests,
# and the GPU benchmarks.
# Logs go to $OUT (default gpu-results/). Usage: scripts/gpu-check.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-results}
mkdir -p "$out"
prefix=${XMLT_DEPS_PREFIX:-/opt/xmlt-deps}
if [[ -d .debs ]]; then
  mkdir -p "$prefix"
  for f in .debs/*.deb; do dpkg -x "$f" "$prefix"; done
  export CMAKE_PREFIX_PATH=$prefix/usr:${CMAKE_PREFIX_PATH:-}
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
  export CPATH=$prefix/usr/include:$prefix/usr/include/x86_64-linux-gnu/openblas-pthread:${CPATH:-}
  export LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread:${LIBRARY_PATH:-}
  # OpenMPI unpacked away from /usr: its tools under their plain names, and told where it lives.
  if [[ -x $prefix/usr/bin/orterun ]]; then
    for tool in mpirun mpiexec mpicc mpicxx; do
      [[ -e $prefix/usr/bin/$tool ]] || ln -s "$tool.openmpi" "$prefix/usr/bin/$tool"
    done
    export PATH=$prefix/usr/bin:$PATH OPAL_PREFIX=$prefix/usr OPAL_SYSCONFDIR=$prefix/etc/openmpi
    export PMIX_INSTALL_PREFIX=$prefix/usr/lib/x86_64-linux-gnu/pmix2
    # PMIx finds no compression plugin there and would print a help text for every launch.
    export PMIX_MCA_pcompress_base_silence_warning=1
    export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu/openmpi/lib:$LD_LIBRARY_PATH
  fi
fi
# The MPI tests run as root in containers, where shared-memory single copy may be refused.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# A broken MPI must not cost the GPU run: build without it, and say so, unless two ranks start.
mpi=AUTO
if ! command -v mpirun > /dev/null || ! timeout 60 mpirun --oversubscribe -np 2 true > "$out/mpi-smoke.log" 2>&1; then
  mpi=OFF
  echo "MPI does not start here (see mpi-smoke.log): building without it" | tee -a "$out/mpi-smoke.log"
fi
build=build-gpu
status=0
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} \
    -DXMLT_MPI=$mpi &&
    cmake --build $build -j"$(nproc)"
} > "$out/build.log" 2>&1 || { echo "build failed"; tail -50 "$out/build.log"; exit 1; }

ctest --test-dir $build --output-on-failure -j4 > "$out/ctest.log" 2>&1 || status=1
tail -5 "$out/ctest.log"
if command -v compute-sanitizer >/dev/null && [[ -x $build/tests/kernels_cuda_tests ]]; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 $build/tests/kernels_cuda_tests \
      > "$out/sanitizer-$tool.log" 2>&1 || status=1
    tail -2 "$out/sanitizer-$tool.log"
  done
fi
if [[ "${1:-}" != "--quick" ]]; then
  for bench in $build/benchmarks/bench_cuda*; do
    [[ -x $bench ]] && "$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      2>&1 | tee -a "$out/bench.txt"
  done
fi
# The PyTorch peer on the same GPU, same shapes and batch, for the samples/s ratio.
if [[ "${1:-}" != "--quick" ]] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  for preset in amazon670k delicious200k; do
    data=$build/gpu-data/$preset
    [[ -s $data/train.txt ]] || $build/apps/xmltrain gen --preset $preset --scale 1 --test-rows 1 \
      --rows 65536 --out "$data" > /dev/null
    python3 scripts/peers/torch_mlp.py --train "$data/train.txt" --device cuda --batch 256 \
      --max-steps 200 --warmup-steps 20 2>&1 | tail -1 | sed "s/^/$preset torch: /" | tee -a "$out/bench.txt"
  done
fi
exit $status
