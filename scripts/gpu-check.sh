#!/usr/bin/env bash
# Everything that needs a GPU: unpacks the carried Debian packages (.debs/, made by
# scripts/fetch-gpu-debs.sh) into a private prefix, builds with CUDA (and MPI, if two ranks start),
# then runs the phases asked for, each short enough for one call on a lent machine (10 minutes):
#   test      every test, with XMLT_REQUIRE_GPU=1 (a CUDA test that would skip fails)
#   sanitize  compute-sanitizer memcheck, racecheck, initcheck and synccheck on the CUDA tests
#   bench     the GPU benchmarks and the PyTorch peer on the same card; among them the merge of 4
#             and 8 Amazon-670K replicas by the ring all-reduce against the copy floor of the
#             measured peer copy rate (bench_cuda's CudaMerge), and Adasum's merge of the same
#             replicas against the ring's in one run (CudaMergeAdasum): the measured figures that
#             replace the projections of docs/benchmarks/merging.md ("Merge time on GPUs: projections")
# No phase named: all three. Each phase builds first (incremental on a machine still warm).
# $OUT (default gpu-results/) gets three files, whatever the phase and even when a step is cut
# short: run.log (card, driver, CUDA version, commit; each step's outcome and figures), figures.json
# (the same header and every figure, scripts/gpu-run-figures.py) and steps.tar.gz (each step's
# full log). Commit run.log and figures.json under docs/gpu-runs/<date>-<card>/.
# Usage: scripts/gpu-check.sh [test] [sanitize] [bench]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-results}
phases=("$@")
[[ ${#phases[@]} -gt 0 ]] || phases=(test sanitize bench)
for phase in "${phases[@]}"; do
  case $phase in test | sanitize | bench) ;; *) echo "gpu-check.sh: unknown phase '$phase'" >&2; exit 2 ;; esac
done
build=build-gpu
# Every step's log and JSON, kept in the build tree between calls; $OUT only gets them packed.
work=$build/gpu-check
mkdir -p "$out" "$work"
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
if ! command -v mpirun > /dev/null || ! timeout 60 mpirun --oversubscribe -np 2 true > "$work/mpi-smoke.log" 2>&1; then
  mpi=OFF
  echo "MPI does not start here (see mpi-smoke.log): building without it" | tee -a "$work/mpi-smoke.log"
fi
status=0
# Every CUDA test must run: a skip for want of a GPU is a failure on the machine that has one.
export XMLT_REQUIRE_GPU=1
# The header of this call's log: what ran, on what, so that docs/gpu-runs/ can say so.
{
  echo "xmltrain GPU run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), phases: ${phases[*]}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  nvcc --version | tail -2 | head -1 | sed 's/^/cuda: /'
  echo "mpi: $mpi"
} >> "$work/run.log" 2>&1
tail -4 "$work/run.log"
# What $OUT holds, brought up to date after every step, so that a call cut short still returns it.
publish() {
  cp "$work/run.log" "$out/run.log"
  tar czf "$out/steps.tar.gz" -C "$work" --exclude run.log . 2>/dev/null
  python3 scripts/gpu-run-figures.py "$work" > "$out/figures.json" 2>> "$work/run.log" || status=1
}
step() {  # step NAME COMMAND...: runs it into $work/NAME.log, records the outcome in run.log
  local name=$1
  shift
  local start=$SECONDS
  "$@" > "$work/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$work/run.log"
  [[ $rc -eq 0 ]] || status=1
  publish
  return $rc
}
step build bash -c "cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DXMLT_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} -DXMLT_MPI=$mpi && cmake --build $build -j$(nproc)" ||
  { tail -50 "$work/build.log"; exit 1; }

for phase in "${phases[@]}"; do
  case $phase in
    test)
      step ctest ctest --test-dir $build --output-on-failure -j8 --timeout 400
      tail -5 "$work/ctest.log" | tee -a "$work/run.log"
      ;;
    sanitize)
      # Less the long trajectories (hundreds of steps each, which run tens of times slower under a
      # sanitizer and test no kernel the short tests do not) and the full-size tests (the same
      # kernels at 670,091 labels and 200,000 sort entries), and the lost-context tests (an
      # illegal address on purpose, and whole runs on the engine's threads).
      for tool in memcheck racecheck initcheck synccheck; do
        step sanitizer-$tool timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
          $build/tests/kernels_cuda_tests --gtest_filter=-*OverManySteps*:CudaMlpTable1Labels.*:*ManySortTiles*:*ContextLost*
        tail -2 "$work/sanitizer-$tool.log" | tee -a "$work/run.log"
      done
      ;;
    bench)
      for bench in $build/benchmarks/bench_cuda*; do
        [[ -x $bench ]] || continue
        name=$(basename "$bench")
        step "$name" "$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
          --benchmark_out="$work/$name.json" --benchmark_out_format=json
        cat "$work/$name.log" >> "$work/run.log"
      done
      # The merges on their own lines: time, bus bandwidth, and the fraction of the copy floor
      # (goal: 70% or more), to set beside the projection.
      grep -h '^CudaMerge.*_mean' "$work"/bench_cuda*.log 2>/dev/null | sed 's/^/merge: /' | tee -a "$work/run.log"
      # The PyTorch peer on the same GPU, same shapes and batch, for the samples/s ratio.
      if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        for preset in amazon670k delicious200k; do
          data=$build/gpu-data/$preset
          [[ -s $data/train.txt ]] || $build/apps/xmltrain gen --preset $preset --scale 1 --test-rows 1 \
            --rows 65536 --out "$data" > /dev/null
          step torch-$preset python3 scripts/peers/torch_mlp.py --train "$data/train.txt" --device cuda \
            --batch 256 --max-steps 200 --warmup-steps 20
          tail -1 "$work/torch-$preset.log" | sed "s/^/$preset torch: /" | tee -a "$work/run.log"
        done
      else
        echo "torch: no CUDA PyTorch here, no peer figures" | tee -a "$work/run.log"
      fi
      ;;
  esac
done
echo "gpu-check ${phases[*]}: $([[ $status -eq 0 ]] && echo passed || echo FAILED)" | tee -a "$work/run.log"
publish
exit $status
