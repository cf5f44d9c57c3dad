#!/usr/bin/env bash
# A fused group that runs as a generated kernel and the same group run as a
# program (no C compiler) cost several-fold apart, so their performance
# model histories must not mix: a second run without a compiler adds one
# footprint per group of strata_fused.
#   fused_footprints.sh BENCH_FUSION STARPU_PERFMODEL_DISPLAY HOME_DIR
set -euo pipefail
bench=$1 display=$2
export STARPU_HOME=$3 STARPU_CALIBRATE=1
rm -rf "$STARPU_HOME"
mkdir -p "$STARPU_HOME"
footprints() { "$display" -s strata_fused 2>/dev/null | grep -c '^[0-9a-f]\{8\}' || true; }
"$bench" --quick --rounds 1 >/dev/null
kernels=$(footprints)
STRATA_JIT_CC=/nonexistent/cc "$bench" --quick --rounds 1 >/dev/null 2>&1
both=$(footprints)
echo "footprints: $kernels with generated kernels, $both after a run without a compiler"
[ "$kernels" -ge 1 ] && [ "$both" -eq $((2 * kernels)) ]
