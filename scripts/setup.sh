#!/usr/bin/env bash
# Installs the Debian packages xmltrain needs to build and test, only those that are missing.
# Idempotent and quiet when everything is already there.
# Usage: scripts/setup.sh [--with-peers] [--with-fuzz]
#   --with-peers  also installs PyTorch (python3-torch) for the peer benchmarks.
#   --with-fuzz   also installs clang and its libFuzzer runtime for scripts/fuzz.sh.
set -euo pipefail

packages=(build-essential cmake libtbb-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          nlohmann-json3-dev libxxhash-dev libopenblas-dev libdnnl-dev zlib1g-dev libisal-dev libzstd-dev
          python3-dev python3-matplotlib libopenmpi-dev openmpi-bin libboost-context-dev ccache)
for option in "$@"; do
  case $option in
    --with-peers) packages+=(python3-torch python3-numpy) ;;
    --with-fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "setup.sh: unknown option '$option'" >&2; exit 2 ;;
  esac
done

# The Python package (python/): nanobind builds its module beside the CLI, numpy, scipy and pytest
# run its tests; from PyPI, for the python3 on PATH, when missing.
if ! python3 -c "import nanobind, numpy, scipy, pytest" 2>/dev/null; then
  echo "setup: installing nanobind numpy scipy pytest with pip" >&2
  python3 -m pip install --quiet nanobind numpy scipy pytest 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages nanobind numpy scipy pytest
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
