#!/usr/bin/env bash
# Fail when an include crosses the layers the wrong way (CONTRIBUTING.md):
# - a core/<subsystem>/ header included from outside that folder (core/internal/
#   is the interface the layers above may use);
# - the umbrella header strata/strata.h included by the library's own sources;
# - amr/ and graphs/ including each other; a layer including tools/.
# usage: check_layers.sh   (run from the repository root)
set -euo pipefail
fail=0
report() { echo "$1"; fail=1; }
for dir in core/*/; do
  sub=$(basename "$dir")
  [ "$sub" = internal ] && continue
  for h in "$dir"*.h; do
    [ -e "$h" ] || continue
    name=$(basename "$h")
    while IFS= read -r hit; do
      report "$hit: includes $h, private to core/$sub/"
    done < <(git grep -n "#include \".*$name\"" -- ':!'"$dir" || true)
  done
done
while IFS= read -r hit; do
  report "$hit: library sources include the headers they use, not the umbrella"
done < <(git grep -n '#include <strata/strata.h>' -- codelets core amr graphs || true)
while IFS= read -r hit; do report "$hit: amr/ and graphs/ never include each other"; done \
  < <(git grep -nE '#include ".*(graph_impl|graphs/)' -- amr; git grep -nE '#include ".*(amr_internal|amr/)' -- graphs)
while IFS= read -r hit; do report "$hit: no layer includes tools/"; done \
  < <(git grep -nE '#include ".*tools/' -- codelets core amr graphs || true)
[ $fail -eq 0 ] && echo "layers: every include goes down"
exit $fail
