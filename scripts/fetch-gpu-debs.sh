#!/usr/bin/env bash
# Downloads the Debian packages the build needs but a bare GPU machine lacks into .debs/ (ignored
# by git), so that a GPU run can carry them and unpack them into a private prefix with
# scripts/gpu-check.sh. Run it here, on a machine with the Debian package registry. OpenMPI and
# what it loads at run time come too (about 7 MiB), so the GPU run builds and tests the MPI ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.debs
mkdir -p "$dir"
packages="libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libcli11-dev libgtest-dev libgmock-dev
          libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libxxhash-dev libxxhash0
          libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libgfortran5
          libdnnl-dev libdnnl2 ocl-icd-libopencl1
          libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-2.1-7
          libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2
          libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libltdl7 libpciaccess0
          libxnvctrl0 libjansson4"
apt-get update -qq >/dev/null 2>&1 || true
( cd "$dir" && for p in $packages; do apt-get download -qq "$p" 2>/dev/null || echo "skip: $p"; done )
ls "$dir"
