#!/usr/bin/env bash
# The fill tasks of six problems of unlike cost (fill_footprints.c) have six
# performance model footprints, however many times each is filled: a
# footprint shared by problems would model none of them (a cosmology fill
# costs several times a zero fill of the same block).
#   fill_footprints.sh STARPU_PERFMODEL_DISPLAY COMMAND...   (in STARPU_HOME)
set -euo pipefail
display=$1
shift
export STARPU_CALIBRATE=1
rm -rf "$STARPU_HOME"
mkdir -p "$STARPU_HOME"
"$@"
footprints=$("$display" -s strata_amr_fill 2>/dev/null | grep -c '^[0-9a-f]\{8\}' || true)
echo "strata_amr_fill: $footprints footprints for 6 problems"
[ "$footprints" -eq 6 ]
