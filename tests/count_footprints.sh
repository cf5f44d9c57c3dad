#!/usr/bin/env bash
# Run COMMAND with STARPU_CALIBRATE=1 in a fresh STARPU_HOME, then check
# that each CODELET's performance model has EXPECTED footprints. Tasks of
# unlike cost must not share a footprint (its mean would model none of
# them), and a task run again must add none.
#   count_footprints.sh STARPU_PERFMODEL_DISPLAY CODELET=EXPECTED... -- COMMAND...
#   (in STARPU_HOME)
set -euo pipefail
display=$1
shift
expected=()
while [ "$1" != -- ]; do
  expected+=("$1")
  shift
done
shift
export STARPU_CALIBRATE=1
rm -rf "$STARPU_HOME"
mkdir -p "$STARPU_HOME"
"$@"
status=0
for e in "${expected[@]}"; do
  codelet=${e%=*} want=${e#*=}
  got=$("$display" -s "$codelet" 2>/dev/null | grep -c '^[0-9a-f]\{8\}' || true)
  echo "$codelet: $got footprints, $want expected"
  [ "$got" -eq "$want" ] || status=1
done
exit $status
