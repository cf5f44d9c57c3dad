#!/usr/bin/env bash
# Run a workload under each StarPU scheduler and worker count; print a table
# of median wall times and plot it (gnuplot PNG).
#   scripts/sched-sweep.sh [-o DIR] [-r REPEATS] [-n RANKS] [-w "NCPU..."]
#                          [-s "SCHED..."] WORKLOAD
# WORKLOAD: infer (the inference main job, 3 cycles, 4 levels), amr (AMR benchmark),
# fusion (fused element-wise chains), or `-- command [args...]` for any
# program. Defaults: DIR sweep, 3 repeats, 2 ranks, STARPU_NCPU 1 and 2,
# schedulers eager lws prio dmda dmdas heteroprio. STRATA_BUILD_DIR (build)
# holds the programs. Models for dmda/dmdas come from STARPU_HOME (default:
# the one scripts/calibrate.sh fills, build/starpu-home/calibrated).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=sweep repeats=3 ranks=2 ncpus="1 2" scheds="eager lws prio dmda dmdas heteroprio"
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift 2 ;;
    -r) repeats=$2; shift 2 ;;
    -n) ranks=$2; shift 2 ;;
    -w) ncpus=$2; shift 2 ;;
    -s) scheds=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
build=${STRATA_BUILD_DIR:-build}
[[ $build = /* ]] || build=$root/$build
case ${1:-} in
  infer) name=infer
    cmd=("$build/tools/strata" infer --cycles 3 --max-level 4 --levels 2/3/4 --grid 64
         --png none --hdf5 none --quiet) ;;
  amr) name=amr; cmd=("$build/bench/bench_amr" --rounds 3) ;;
  fusion) name=fusion; ranks=1; cmd=("$build/bench/bench_fusion") ;;
  --) shift; name=$(basename "$1"); cmd=("$@") ;;
  *) echo "usage: $0 [options] infer|amr|fusion|-- command..." >&2; exit 2 ;;
esac
[ -x "${cmd[0]}" ] || { echo "sched-sweep: ${cmd[0]} not built (scripts/test.sh builds it)" >&2; exit 1; }
source "$root/scripts/env.sh"
source "$root/scripts/timing.sh"
export STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
export STARPU_HOME=${STARPU_HOME:-$build/starpu-home/calibrated}
launch=()
[ "$ranks" -gt 1 ] && launch=(mpiexec -n "$ranks")
mkdir -p "$out"
data=$out/$name.dat
echo "# scheduler ncpu median_s min_s max_s (workload: $name, $ranks rank(s), $repeats runs)" >"$data"
printf '%-11s' scheduler
for n in $ncpus; do printf ' %12s' "ncpu=$n s"; done
echo
for s in $scheds; do
  printf '%-11s' "$s"
  for n in $ncpus; do
    stats=$(STARPU_SCHED=$s STARPU_NCPU=$n timed_runs "$repeats" "$out/$name-$s-$n.log" \
      "${launch[@]}" "${cmd[@]}")
    echo "$s $n $stats" >>"$data"
    printf ' %12.3f' "${stats%% *}"
  done
  echo
done
plot=$out/$name.png
if command -v gnuplot >/dev/null; then
  gnuplot <<EOF
set terminal pngcairo size 900,500 font "sans,11" noenhanced
set output "$plot"
set title "$name: median wall time per scheduler ($ranks rank(s), $repeats runs; bars: min-max)"
set ylabel "seconds"
set yrange [0:*]
set xrange [-0.5:$(echo $scheds | wc -w)-0.5]
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.7 border -1
set key top left
plot $(first=1; for n in $ncpus; do
  [ $first = 1 ] || printf ', '
  first=0
  printf "\"< awk '\\\$2 == %s' %s\" using 3:4:5:xtic(1) title \"STARPU_NCPU=%s\"" "$n" "$data" "$n"
done)
EOF
  echo "sched-sweep: $data, $plot" >&2
fi
