#!/usr/bin/env bash
# Measure what environment settings do to a command: median wall time of
# REPEATS runs per setting, and its ratio to the first setting.
#   scripts/env-compare.sh [-r REPEATS] SETTING... -- command [args...]
# A SETTING is a space-separated list of VAR=VALUE ("" or - for none), e.g.
#   scripts/env-compare.sh -r 5 STARPU_WORKERS_NOBIND=1 STARPU_WORKERS_NOBIND=0 \
#     -- mpiexec -n 2 build/tools/strata infer --quiet --png none --hdf5 none
# scripts/env.sh is sourced first (MPI settings for small nodes), and
# STARPU_SILENT=1; a setting overrides them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repeats=5
if [ "${1:-}" = -r ]; then
  repeats=$2
  shift 2
fi
settings=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  settings+=("$1")
  shift
done
[ $# -gt 1 ] && [ ${#settings[@]} -gt 0 ] ||
  { echo "usage: $0 [-r REPEATS] SETTING... -- command [args...]" >&2; exit 2; }
shift
source "$root/scripts/env.sh"
source "$root/scripts/timing.sh"
export STARPU_SILENT=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
printf '%-50s %9s %9s %9s %7s\n' setting "median s" "min s" "max s" ratio
base=
for s in "${settings[@]}"; do
  env_args=()
  [ "$s" = - ] || read -r -a env_args <<<"$s"
  stats=$(env "${env_args[@]}" bash -c 'source "$0"; timed_runs "$@"' "$root/scripts/timing.sh" \
    "$repeats" "$log" "$@") || { cat "$log" >&2; exit 1; }
  read -r median min max <<<"$stats"
  [ -n "$base" ] || base=$median
  printf '%-50s %9.3f %9.3f %9.3f %7.2f\n' "${s:--}" "$median" "$min" "$max" \
    "$(awk -v m="$median" -v b="$base" 'BEGIN { print m / b }')"
done
