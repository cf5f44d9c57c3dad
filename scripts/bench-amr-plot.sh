#!/usr/bin/env bash
# Run bench_amr in several processes and plot what they measured (gnuplot
# PNG): GB/s of memcpy and the whole-cube kernel alone, then of the kernel,
# the direct family calls and the tasks in the rounds that alternate them;
# and the issue's two ratios with their targets. Medians over the runs,
# bars from the first to the third quartile. One process alone says little
# on a shared machine: its ratios move by +-0.15 from run to run.
#   scripts/bench-amr-plot.sh [-r RUNS] [-o DIR] [-q] [JSON...]
# RUNS (default 20) processes of `bench_amr --rounds 9`, one worker each
# (-q: `--quick --rounds 3`, the 64^3 cases only, to check that it works);
# or, given files of concatenated bench_amr (or bench_amr_cuda) outputs,
# those runs instead.
# Writes DIR/amr.json (the runs), DIR/amr.dat (medians, quartiles) and
# DIR/amr.png; DIR defaults to bench-amr. STRATA_BUILD_DIR (build) holds
# bench_amr.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=bench-amr runs=20 rounds=(--rounds 9)
while [ $# -gt 0 ]; do
  case $1 in
    -r) runs=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -q) rounds=(--quick --rounds 3); shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
mkdir -p "$out"
json=$out/amr.json
if [ $# -gt 0 ]; then
  cat "$@" >"$json"
else
  build=${STRATA_BUILD_DIR:-build}
  [[ $build = /* ]] || build=$root/$build
  [ -x "$build/bench/bench_amr" ] ||
    { echo "bench-amr-plot: $build/bench/bench_amr not built (scripts/test.sh builds it)" >&2; exit 1; }
  source "$root/scripts/env.sh"
  export STARPU_NCPU=1 STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
  export STARPU_HOME=${STARPU_HOME:-$out/starpu-home}
  : >"$json"
  for ((r = 0; r < runs; r++)); do
    timeout "${STRATA_RUN_TIMEOUT:-600}" "$build/bench/bench_amr" "${rounds[@]}" >>"$json"
  done
fi

# Medians and quartiles per case, one row each, in the order bench_amr prints
# them; the table also goes to stdout.
data=$out/amr.dat
python3 - "$json" "$data" <<'EOF'
import json, statistics, sys

text, runs, at = open(sys.argv[1]).read(), [], 0
decoder = json.JSONDecoder()
while text[at:].strip():
    while text[at].isspace():
        at += 1
    run, at = decoder.raw_decode(text, at)
    runs.append(run["cases"])
    device = run.get("device")  # bench_amr_cuda's GPU
if not runs:
    sys.exit("bench-amr-plot: no runs in " + sys.argv[1])

def spread(values):
    if not values:  # a column older outputs of bench_amr lack
        return [float("nan")] * 3
    if len(values) == 1:
        return values * 3
    q1, _, q3 = statistics.quantiles(values, method="inclusive")
    return [statistics.median(values), q1, q3]

columns = ["memcpy_gbs", "kernel_gbs", "kernel_beside_tasks_gbs", "direct_gbs", "tasks_gbs",
           "kernel_vs_memcpy", "tasks_vs_kernel", "tasks_vs_direct"]
with open(sys.argv[2], "w") as dat:
    title = (f"bench_amr_cuda on an {device}, float64" if device
             else "bench_amr, float64, one worker")
    dat.write(f"#title {title}: medians of {len(runs)} runs (bars: quartiles)\n")
    dat.write(f"#copy {'device-to-device copy' if device else 'memcpy'}\n")
    # Room above the bars for the keys.
    gbs = [r[j][c] for r in runs for j in range(len(runs[0])) for c in columns[:5] if c in r[j]]
    dat.write(f"#gbsmax {1.45 * max(gbs):.4g}\n")
    ratios = [r[j][c] for r in runs for j in range(len(runs[0])) for c in columns[5:7] if c in r[j]]
    dat.write(f"#ymax {max(1.3, 1.15 * max(ratios)):.2f}\n")
    dat.write(f"# {len(runs)} runs; case, then median q1 q3 of: " + " ".join(columns) + "\n")
    print(f"{'case':<14} GB/s: {'memcpy':>6} {'kernel':>6} {'beside':>6} {'direct':>6} "
          f"{'tasks':>6}   kernel/memcpy     tasks/kernel      tasks/direct")
    for j, case in enumerate(runs[0]):
        name = f"{case['op']}_{case['n']}^3"
        row = [spread([r[j][c] for r in runs if c in r[j]]) for c in columns]
        dat.write(name + " " + " ".join(f"{v:.4g}" for s in row for v in s) + "\n")
        print(f"{name:<19} " + " ".join(f"{s[0]:6.1f}" for s in row[:5]) + "   "
              + "  ".join(f"{s[0]:.2f} ({s[1]:.2f}-{s[2]:.2f})" for s in row[5:]))
EOF

plot=$out/amr.png
title=$(sed -n 's/^#title //p' "$data") copy=$(sed -n 's/^#copy //p' "$data")
gbsmax=$(sed -n 's/^#gbsmax //p' "$data") ymax=$(sed -n 's/^#ymax //p' "$data")
gnuplot <<EOF
set terminal pngcairo size 1200,480 font "sans,11" noenhanced
set output "$plot"
set multiplot layout 1,2 title "$title"
set style data histogram
set style fill solid 0.75 border -1
set xtics rotate by -30
set yrange [0:$gbsmax]
set key top right
set title "throughput"
set ylabel "GB/s (bytes read + written)"
set style histogram clustered gap 1
plot "$data" using 2:xtic(1) title "$copy" lc rgb "#9e9e9e", \
     "" using 5 title "kernel, alone" lc rgb "#238b45", \
     "" using 8 title "kernel, beside the blocks" lc rgb "#74c476", \
     "" using 11 title "family kernels, direct" lc rgb "#c7e9c0", \
     "" using 14 title "tasks, one per family" lc rgb "#6baed6"
set title "targets: kernel >= 0.6 x $copy, tasks >= 0.8 x kernel"
set ylabel "ratio"
set yrange [0:$ymax]
set key top right
set style histogram errorbars gap 1 lw 1
plot "$data" using 17:18:19:xtic(1) title "kernel / $copy" lc rgb "#238b45", \
     "" using 20:21:22 title "tasks / kernel beside them" lc rgb "#6baed6", \
     0.6 with lines dt 2 lc rgb "#238b45" notitle, \
     0.8 with lines dt 2 lc rgb "#2171b5" notitle
unset multiplot
EOF
[ -s "$plot" ] || { echo "bench-amr-plot: gnuplot wrote no $plot" >&2; exit 1; }
echo "bench-amr-plot: $json, $data, $plot" >&2
