#!/usr/bin/env bash
# Calibrate the performance models of Strata's codelets on this machine.
#   scripts/calibrate.sh [-r ROUNDS] [-w WORKLOADS] [-g] [STARPU_HOME]
# Runs Strata's workloads (the inference job on 2 ranks, the AMR, global
# indexer, sharding, fusion and deferred-compute benchmarks; or those listed
# in the file WORKLOADS, a line each: RANKS PROGRAM ARGS, the program
# relative to the build) ROUNDS times (default 2) with STARPU_CALIBRATE=1
# under dmda, so every codelet gets at least StarPU's 10 measurements per
# footprint, into STARPU_HOME (default build/starpu-home/calibrated;
# STRATA_BUILD_DIR chooses the build). A rank writes its models when it
# shuts down, so ranks sharing a STARPU_HOME would overwrite each other's:
# each rank of each workload records into its own, and
# scripts/simulate_models.py pools them into STARPU_HOME. Then lists the
# models with starpu_perfmodel_display.
# Use the result:   STARPU_HOME=<that dir> STARPU_SCHED=dmda <program>
# Models are filed per host name: set STARPU_HOSTNAME to share them between
# identical nodes (scripts/simulate.sh calibrate sets `simulated`).
# STARPU_CALIBRATE=2 here drops earlier measurements first.
# -g: also the models of each rank count N alone, pooled from the workloads
# of N ranks only, into STARPU_HOME/ranks-N/.starpu/... (ranks that share
# this machine share its caches and memory too, which a simulation of them
# does not model: their tasks' costs are taken as measured so).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=2 workloads_file='' by_ranks=0
while [ $# -gt 0 ]; do
  case $1 in
    -r) rounds=$2; shift 2 ;;
    -w) workloads_file=$2; shift 2 ;;
    -g) by_ranks=1; shift ;;
    *) break ;;
  esac
done
build=${STRATA_BUILD_DIR:-build}
[[ $build = /* ]] || build=$root/$build
home=${1:-$build/starpu-home/calibrated}
mkdir -p "$home"
source "$root/scripts/env.sh"
export STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1 STARPU_NCPU=${STARPU_NCPU:-1}
export STARPU_SCHED=dmda STARPU_CALIBRATE=${STARPU_CALIBRATE:-1}
workloads=(
  "2 tools/strata infer --cycles 3 --max-level 4 --levels 2/3/4 --grid 64 --png none --hdf5 none --quiet"
  "1 bench/bench_amr --rounds 3"
  "2 bench/bench_gindexer --rounds 3"
  "1 bench/bench_sharded --rounds 3"
  "1 bench/bench_fusion --rounds 3"
  "1 bench/bench_deferred --rounds 3"
)
[ -z "$workloads_file" ] || mapfile -t workloads <"$workloads_file"
ranks_homes=$home/ranks
rm -rf "$ranks_homes"
for ((r = 1; r <= rounds; r++)); do
  for k in "${!workloads[@]}"; do
    read -r -a words <<<"${workloads[$k]}"
    echo "calibrate: round $r: ${words[*]}" >&2
    # Each rank's own home, the same in every round (it loads what it wrote).
    # shellcheck disable=SC2016
    STRATA_CALIBRATE_HOME=$ranks_homes/$k mpiexec -n "${words[0]}" -x STRATA_CALIBRATE_HOME \
      bash -c 'STARPU_HOME=$STRATA_CALIBRATE_HOME-$OMPI_COMM_WORLD_RANK exec "$@"' calibrate \
      "$build/${words[1]}" "${words[@]:2}" >/dev/null 2>"$home/calibrate.log" ||
      { cat "$home/calibrate.log" >&2; exit 1; }
  done
done
# Earlier calibrations into this home are pooled too, unless dropped.
earlier=("$home")
[ "$STARPU_CALIBRATE" != 2 ] || earlier=()
python3 "$root/scripts/simulate_models.py" "$home/.starpu/sampling/codelets/45" "$ranks_homes"/* "${earlier[@]}"
if [ "$by_ranks" = 1 ]; then
  mapfile -t counts < <(printf '%s\n' "${workloads[@]}" | awk '{ print $1 }' | sort -un)
  for n in "${counts[@]}"; do
    homes=()
    for k in "${!workloads[@]}"; do
      read -r -a words <<<"${workloads[$k]}"
      [ "${words[0]}" != "$n" ] || homes+=("$ranks_homes/$k"-*)
    done
    echo "calibrate: the workloads of $n rank(s) alone:" >&2
    python3 "$root/scripts/simulate_models.py" "$home/ranks-$n/.starpu/sampling/codelets/45" "${homes[@]}"
  done
fi
rm -rf "$ranks_homes"
display=$(command -v starpu_perfmodel_display || true)
if [ -z "$display" ]; then
  echo "calibrate: models in $home (starpu_perfmodel_display not found)" >&2
  exit 0
fi
export STARPU_HOME=$home
echo "calibrate: models in $STARPU_HOME:" >&2
# The listing only informs: a display that cannot read these models (the
# SimGrid StarPU's, first on the PATH inside scripts/simulate.sh) lists none.
{ "$display" -l 2>/dev/null || true; } | { grep -o 'strata_[a-z_]*' || true; } | sort -u | while read -r model; do
  # One line per (footprint, size) measured on the CPU: mean and deviation in us.
  entries=$("$display" -s "$model" 2>/dev/null | grep -c '^[0-9a-f]\{8\}' || true)
  echo "  $model: $entries footprint(s)"
done
