#!/usr/bin/env bash
# Trace a 2-rank `strata infer` with scripts/trace.sh and check the result
# (tests/trace_check.py).  usage: trace_infer.sh STRATA_TOOL MPIEXEC OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=$1 mpiexec=$2 out=$3
rm -rf "$out"
STRATA_TOOL=$tool bash "$here/../scripts/trace.sh" -o "$out" "$mpiexec" -n 2 "$tool" infer \
  --cycles 2 --block-cells 8 --max-level 3 --grid 32 --levels 1/2/3 --growth 0.3 \
  --png none --hdf5 none --quiet
python3 "$here/trace_check.py" "$out"
