#!/usr/bin/env bash
# The cross-rank merge at the Amazon-670K model's size on this machine's loopback, under mpirun:
# our rank sum and the whole hierarchical merge against a plain MPI_Allreduce of the same bytes,
# in the same run (benchmarks/mpi_rank_merge.cc says what each line times). The figures behind
# docs/benchmarks/merging.md's MPI section. Needs a build with MPI (XMLT_MPI=AUTO finds OpenMPI).
# Usage: scripts/bench-mpi.sh [--repeats N]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${XMLT_BUILD_DIR:-build}
repeats=5
[[ "${1:-}" == "--repeats" ]] && repeats=${2:?"--repeats needs a count"}
XMLT_BUILD_DIR=$build_dir bash scripts/build.sh
bench=$build_dir/benchmarks/mpi_rank_merge
[[ -x $bench ]] || { echo "bench-mpi.sh: $bench was not built (no MPI found?)" >&2; exit 1; }
# Root in a container needs these (see docs/multi-server.md).
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for transport in default none; do
  if [[ $transport == none ]]; then
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    echo "== shared memory without single copy (copy in, copy out)"
  else
    echo "== shared memory, Open MPI's default single-copy mechanism"
  fi
  mpirun --oversubscribe -np 2 "$bench" --local 2 --repeats "$repeats"
  mpirun --oversubscribe -np 3 "$bench" --local 1 --repeats "$repeats"
done
