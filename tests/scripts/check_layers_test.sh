#!/usr/bin/env bash
# scripts/check-layers.sh on a small planted house: it passes a clean one, and finds an include of
# a room above, one of another room on the same floor, two files including each other's headers,
# and a room the layers block names that does not exist. Then the checkout itself passes.
# Usage: check_layers_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
check=$source_dir/scripts/check-layers.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

house=$work/house
mkdir -p "$house/docs" "$house/low" "$house/mid/a" "$house/mid/b" "$house/top"
cat > "$house/docs/ARCHITECTURE.md" <<'DOC'
# A house

```layers
top
mid/a mid/b
low
```
DOC
printf '#pragma once\n' > "$house/low/base.h"
printf '#pragma once\n#include "low/base.h"\n#include <vector>\n' > "$house/mid/a/one.h"
printf '#include "mid/a/one.h"\n#include "mid/a/missing.h"\n' > "$house/mid/a/one.cc"
printf '#pragma once\n#include "low/base.h"\n' > "$house/mid/b/two.h"
printf '#pragma once\n#include "mid/a/one.h"\n#include "mid/b/two.h"\n' > "$house/top/app.h"
"$check" --root "$house" > "$work/out" || fail "a clean house was refused: $(cat "$work/out")"

# Each plant alone, then removed.
expect() {  # FILE TEXT WHAT: FILE gets TEXT appended; the check must fail naming WHAT
  local file=$1 text=$2 what=$3
  cp "$file" "$file.clean"
  printf '%s\n' "$text" >> "$file"
  if "$check" --root "$house" > "$work/out" 2>&1; then fail "not found: $what"; fi
  grep -q -- "$what" "$work/out" || fail "the finding does not say '$what': $(cat "$work/out")"
  mv "$file.clean" "$file"
}
expect "$house/low/base.h" '#include "top/app.h"' "low/base.h:2: low/ includes top/app.h, of top/, a room above its own"
expect "$house/mid/b/two.h" '#include "mid/a/one.h"' "a room on the same floor as its own"
# A one-way include between two files of a room passes; both ways is a pair.
printf '#pragma once\n' > "$house/mid/a/other.h"
printf '#include "mid/a/other.h"\n' > "$house/mid/a/other.cc"
printf '#include "mid/a/other.h"\n' >> "$house/mid/a/one.cc"
"$check" --root "$house" > "$work/out" || fail "a one-way include between files was refused: $(cat "$work/out")"
expect "$house/mid/a/other.cc" '#include "mid/a/one.h"' "mid/a/one and mid/a/other include each other's headers"
sed -i 's/^low$/low gone/' "$house/docs/ARCHITECTURE.md"
"$check" --root "$house" > "$work/out" 2>&1 && fail "a room that does not exist was accepted"
grep -q "the room gone/ of the layers block does not exist" "$work/out" || fail "no word of the missing room"
sed -i 's/^low gone$/low/' "$house/docs/ARCHITECTURE.md"

"$check" --root "$source_dir" > "$work/out" 2>&1 || fail "the checkout breaks its layers: $(cat "$work/out")"
echo "check layers: OK"
