#!/usr/bin/env bash
# Fails when a file includes a header of a room above its own, or when two files include each
# other's headers. The rooms and floors are docs/ARCHITECTURE.md's (Layers); see check_layers.py.
# Usage: scripts/check-layers.sh [--root DIR]
set -euo pipefail
exec python3 "$(dirname "$0")/check_layers.py" "$@"
