#!/usr/bin/env bash
# Calibrate the performance models of Strata's codelets on this machine.
#   scripts/calibrate.sh [-r ROUNDS] [STARPU_HOME]
# Runs Strata's workloads (the inference job on 2 ranks, the AMR, global
# indexer, sharding, fusion and deferred-compute benchmarks) ROUNDS times
# (default 2) with STARPU_CALIBRATE=1 under dmda, so every codelet gets at
# least StarPU's 10 measurements per footprint, into STARPU_HOME (default
# build/starpu-home/calibrated; STRATA_BUILD_DIR chooses the build). Then
# lists the models with starpu_perfmodel_display.
# Use the result:   STARPU_HOME=<that dir> STARPU_SCHED=dmda <program>
# Models are filed per host name: set STARPU_HOSTNAME to share them between
# identical nodes. STARPU_CALIBRATE=2 here drops earlier measurements first.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=2
if [ "${1:-}" = -r ]; then
  rounds=$2
  shift 2
fi
build=${STRATA_BUILD_DIR:-build}
[[ $build = /* ]] || build=$root/$build
export STARPU_HOME=${1:-$build/starpu-home/calibrated}
mkdir -p "$STARPU_HOME"
source "$root/scripts/env.sh"
export STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1 STARPU_NCPU=${STARPU_NCPU:-1}
export STARPU_SCHED=dmda STARPU_CALIBRATE=${STARPU_CALIBRATE:-1}
workloads=(
  "mpiexec -n 2 $build/tools/strata infer --cycles 3 --max-level 4 --levels 2/3/4 --grid 64 --png none --hdf5 none --quiet"
  "$build/bench/bench_amr --rounds 3"
  "mpiexec -n 2 $build/bench/bench_gindexer --rounds 3"
  "$build/bench/bench_sharded --rounds 3"
  "$build/bench/bench_fusion --rounds 3"
  "$build/bench/bench_deferred --rounds 3"
)
for ((r = 1; r <= rounds; r++)); do
  for w in "${workloads[@]}"; do
    echo "calibrate: round $r: ${w#"$build/"}" >&2
    # shellcheck disable=SC2086
    $w >/dev/null 2>"$STARPU_HOME/calibrate.log" ||
      { cat "$STARPU_HOME/calibrate.log" >&2; exit 1; }
  done
done
display=$(command -v starpu_perfmodel_display || true)
if [ -z "$display" ]; then
  echo "calibrate: models in $STARPU_HOME (starpu_perfmodel_display not found)" >&2
  exit 0
fi
echo "calibrate: models in $STARPU_HOME:" >&2
"$display" -l 2>/dev/null | grep -o 'strata_[a-z_]*' | sort -u | while read -r model; do
  # One line per (footprint, size) measured on the CPU: mean and deviation in us.
  entries=$("$display" -s "$model" 2>/dev/null | grep -c '^[0-9a-f]\{8\}' || true)
  echo "  $model: $entries footprint(s)"
done
