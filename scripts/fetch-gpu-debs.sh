#!/usr/bin/env bash
# Downloads the Debian packages the build needs but a bare GPU machine lacks into .debs/ (ignored
# by git), so that a GPU run can carry them and unpack them into a private prefix with
# scripts/gpu-check.sh. Run it here, on a machine with the Debian package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.debs
mkdir -p "$dir"
packages="libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libcli11-dev libgtest-dev libgmock-dev
          libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libxxhash-dev libxxhash0
          libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libgfortran5
          libdnnl-dev libdnnl2 ocl-icd-libopencl1"
apt-get update -qq >/dev/null 2>&1 || true
( cd "$dir" && for p in $packages; do apt-get download -qq "$p" 2>/dev/null || echo "skip: $p"; done )
ls "$dir"
