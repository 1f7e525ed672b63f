#!/usr/bin/env bash
# Prints the sanitizer reports a sanitized test run left in LOGS, if any, and exits 1 when there
# were some (a test that passed may still have been reported); 0 when there were none.
# Usage: scripts/sanitizer-reports.sh LOGS NAME   (NAME: the calling script, in the last line)
set -euo pipefail
logs=$1 name=$2
compgen -G "$logs/*" >/dev/null || exit 0
for log in "$logs"/*; do
  echo "==== $log" >&2
  cat "$log" >&2
done
echo "$name: sanitizer reports (above, and in $logs)" >&2
exit 1
