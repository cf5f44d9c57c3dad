#!/usr/bin/env bash
# Run bench_gindexer several times on 2 and 4 ranks and plot its ratios
# (gnuplot PNG): each exchange's time over its hand-written MPI baseline
# (Take and Put against one MPI_Alltoallv, Take_v and Put_v against an
# Alltoallv of the counts and one of the data), per rank count and `count`,
# the median with bars from the least to the largest run, against the
# target of 1.5.
#   scripts/bench-gindexer-plot.sh [-r RUNS] [-o DIR] [-q] [DIR_OF_JSON]
# RUNS (default 5) runs of `bench_gindexer --rounds 5` per rank count, one
# worker per rank (-q: `--quick --rounds 1`, to check that it works); or,
# given a directory of outputs named gi-npP-I.json, those runs instead.
# Writes DIR/gindexer.dat (medians and ranges) and DIR/gindexer.png; DIR
# defaults to bench-gindexer. STRATA_BUILD_DIR (build) holds the benchmark.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=bench-gindexer runs=5 rounds=(--rounds 5)
while [ $# -gt 0 ]; do
  case $1 in
    -r) runs=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -q) rounds=(--quick --rounds 1); shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
mkdir -p "$out"
if [ $# -gt 0 ]; then
  runs_dir=$1
else
  runs_dir=$out/runs
  mkdir -p "$runs_dir"
  build=${STRATA_BUILD_DIR:-build}
  [[ $build = /* ]] || build=$root/$build
  [ -x "$build/bench/bench_gindexer" ] ||
    { echo "bench-gindexer-plot: $build/bench/bench_gindexer not built" >&2; exit 1; }
  source "$root/scripts/env.sh" >/dev/null
  export STARPU_NCPU=1 STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
  export STARPU_HOME=${STARPU_HOME:-$out/starpu-home}
  for np in 2 4; do
    for ((r = 1; r <= runs; r++)); do
      timeout "${STRATA_RUN_TIMEOUT:-600}" mpiexec -n "$np" "$build/bench/bench_gindexer" \
        "${rounds[@]}" >"$runs_dir/gi-np$np-$r.json"
    done
  done
fi

data=$out/gindexer.dat
python3 - "$runs_dir" "$data" <<'EOF'
import glob, json, os, re, statistics, sys

keys = [("take_vs_alltoallv", "Take"), ("put_vs_alltoallv", "Put last"),
        ("put_sum_vs_alltoallv", "Put sum"), ("take_v_vs_baseline", "Take_v"),
        ("put_v_vs_baseline", "Put_v")]
values, nruns = {}, {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "gi-np*-*.json"))):
    np = int(re.search(r"gi-np(\d+)-", os.path.basename(path)).group(1))
    with open(path) as f:
        run = json.load(f)
    nruns[np] = nruns.get(np, 0) + 1
    for case in run["counts"]:
        for key, _ in keys:
            values.setdefault((np, case["count"], key), []).append(case[key])
if not values:
    sys.exit("bench-gindexer-plot: no runs in " + sys.argv[1])
cases = sorted({(np, count) for np, count, _ in values})
top = max(1.7, 1.1 * max(v for vs in values.values() for v in vs))
with open(sys.argv[2], "w") as dat:
    dat.write(f"#title bench_gindexer, 10^6 items per rank, one worker per rank: "
              f"medians of {min(nruns.values())} runs (bars: least to largest)\n")
    dat.write(f"#ymax {top:.2f}\n")
    dat.write("# case, then median min max of: " + " ".join(k for k, _ in keys) + "\n")
    print(f"{'case':<18}" + "".join(f"{name:>20}" for _, name in keys))
    for np, count in cases:
        row = [values.get((np, count, key), [float("nan")]) for key, _ in keys]
        name = f"{np} ranks, count {count}"
        dat.write(f'"{name}" ' + " ".join(f"{statistics.median(v):.4g} {min(v):.4g} {max(v):.4g}"
                                         for v in row) + "\n")
        print(f"{name:<18}" + "".join(f"{statistics.median(v):8.2f} ({min(v):.2f}-{max(v):.2f})"
                                      for v in row))
EOF

source "$root/scripts/plot-lib.sh"
histogram_png "$data" "$out/gindexer.png" 1000,480 \
  "time / hand-written MPI baseline (below 1: Strata faster)" \
  "\"$data\" using 2:3:4:xtic(1) title \"Take\" lc rgb \"#238b45\", \
   \"\" using 5:6:7 title \"Put last\" lc rgb \"#6baed6\", \
   \"\" using 8:9:10 title \"Put sum\" lc rgb \"#2171b5\", \
   \"\" using 11:12:13 title \"Take_v\" lc rgb \"#fd8d3c\", \
   \"\" using 14:15:16 title \"Put_v\" lc rgb \"#d94701\", \
   1.5 with lines dt 2 lc rgb \"#e31a1c\" title \"target 1.5\", \
   1 with lines dt 3 lc rgb \"#636363\" notitle" \
  "set key top left horizontal"
