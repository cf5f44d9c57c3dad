#!/usr/bin/env bash
# Install what is missing, build, and run Strata's main job on 2 MPI ranks.
# Until the AMR inference job exists, the main job is the merge example:
# each rank accumulates 200 tasks into one array, then the ranks reduce.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
build=${STRATA_BUILD_DIR:-build}
cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j "$(nproc)"
. scripts/env.sh
export STARPU_NCPU=${STARPU_NCPU:-1}
out=$root/$build/demo
mkdir -p "$out"
mpiexec -n 2 "$build/examples/merge_ranks" --n 1000 --tasks 200 --out "$out/merge_result.csv"
echo "demo: outputs in $out (merge_result.csv: the reduced array, index,value)"
