#!/usr/bin/env bash
# Installs the Debian packages xmltrain needs to build and test, only those that are missing.
# Idempotent and quiet when everything is already there.
# Usage: scripts/setup.sh [--with-peers] [--with-fuzz]
#   --with-peers  also installs PyTorch (python3-torch) for the peer benchmarks.
#   --with-fuzz   also installs clang and its libFuzzer runtime for scripts/fuzz.sh.
set -euo pipefail

packages=(build-essential cmake libtbb-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          nlohmann-json3-dev libxxhash-dev libopenblas-dev libdnnl-dev zlib1g-dev libisal-dev libzstd-dev
          python3-matplotlib libopenmpi-dev openmpi-bin libboost-context-dev)
for option in "$@"; do
  case $option in
    --with-peers) packages+=(python3-torch python3-numpy) ;;
    --with-fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "setup.sh: unknown option '$option'" >&2; exit 2 ;;
  esac
done

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
