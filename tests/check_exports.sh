#!/usr/bin/env bash
# Fail unless libstrata's dynamic symbol table holds the public API alone:
# every defined symbol starts with strata_ and none with strata__.
# usage: check_exports.sh path/to/libstrata.so
set -euo pipefail
mapfile -t symbols < <(nm -D --defined-only "$1" | awk '{print $3}')
[ ${#symbols[@]} -gt 0 ] || { echo "no exported symbol in $1"; exit 1; }
bad=$(printf '%s\n' "${symbols[@]}" | grep -v '^strata_[^_]' || true)
if [ -n "$bad" ]; then
  echo "exported but not public API:"
  echo "$bad"
  exit 1
fi
echo "${#symbols[@]} symbols exported, all strata_*"
