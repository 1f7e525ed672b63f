#!/usr/bin/env bash
# Everything that needs a GPU, in one call: unpacks the carried Debian packages (.debs/, made by
# scripts/fetch-gpu-debs.sh) into a private prefix, builds with CUDA (and MPI, if two ranks start),
# runs the whole test suite with XMLT_REQUIRE_GPU=1 (a CUDA test that skips fails), the four
# compute-sanitizer tools on the CUDA kernel tests, the GPU benchmarks and the PyTorch peer.
# Everything goes to $OUT (default gpu-results/): run.log (card, driver, CUDA version, commit, each
# step's outcome and figures), figures.json (the same header and every figure), and a log per step.
# Commit run.log and figures.json under docs/gpu-runs/<date>-<card>/. Usage: scripts/gpu-check.sh [--quick]
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
# Every CUDA test must run: a skip for want of a GPU is a failure on the machine that has one.
export XMLT_REQUIRE_GPU=1
# The header of this run's log and figures: what ran, on what, so that docs/gpu-runs/ can say so.
{
  echo "xmltrain GPU run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  nvcc --version | tail -2 | head -1 | sed 's/^/cuda: /'
  echo "mpi: $mpi"
} > "$out/run.log" 2>&1
cat "$out/run.log"
step() {  # step NAME COMMAND...: runs it into $out/NAME.log, records the outcome in run.log
  local name=$1
  shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/run.log"
  [[ $rc -eq 0 ]] || status=1
  return $rc
}
step build bash -c "cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} -DXMLT_MPI=$mpi && cmake --build $build -j$(nproc)" ||
  { tail -50 "$out/build.log"; exit 1; }

step ctest ctest --test-dir $build --output-on-failure -j8
tail -5 "$out/ctest.log" | tee -a "$out/run.log"
# The four sanitizers on the CUDA tests, less the long trajectories (hundreds of steps each, which
# run tens of times slower under a sanitizer and test no kernel the short tests do not).
sanitized=-*OverManySteps*
for tool in memcheck racecheck initcheck synccheck; do
  step sanitizer-$tool timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
    $build/tests/kernels_cuda_tests --gtest_filter="$sanitized"
  tail -2 "$out/sanitizer-$tool.log" | tee -a "$out/run.log"
done
if [[ "${1:-}" != "--quick" ]]; then
  for bench in $build/benchmarks/bench_cuda*; do
    [[ -x $bench ]] || continue
    step "$(basename "$bench")" "$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_out="$out/$(basename "$bench").json" --benchmark_out_format=json
    cat "$out/$(basename "$bench").log" >> "$out/run.log"
  done
  # The PyTorch peer on the same GPU, same shapes and batch, for the samples/s ratio.
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for preset in amazon670k delicious200k; do
      data=$build/gpu-data/$preset
      [[ -s $data/train.txt ]] || $build/apps/xmltrain gen --preset $preset --scale 1 --test-rows 1 \
        --rows 65536 --out "$data" > /dev/null
      step torch-$preset python3 scripts/peers/torch_mlp.py --train "$data/train.txt" --device cuda \
        --batch 256 --max-steps 200 --warmup-steps 20
      tail -1 "$out/torch-$preset.log" | sed "s/^/$preset torch: /" | tee -a "$out/run.log"
    done
  else
    echo "torch: no CUDA PyTorch here, no peer figures" | tee -a "$out/run.log"
  fi
fi
# Every figure of this run in one JSON beside the log, with the same header.
python3 scripts/gpu-run-figures.py "$out" > "$out/figures.json" || status=1
echo "gpu-check: $([[ $status -eq 0 ]] && echo passed || echo FAILED); logs and figures.json in $out" |
  tee -a "$out/run.log"
exit $status
