#!/usr/bin/env bash
# Run bench/model_vs_torch.py several times on the CPU and plot Strata's
# throughput over PyTorch's best form per configuration (gnuplot PNG): the
# median over the runs with bars from the least to the largest, against
# parity (1). JSON files of `--device cuda` runs (from a GPU machine) given
# with -g add their rows: float32 configurations over PyTorch's fastest
# float32 form, TF32 over its default (TF32) form.
#   scripts/bench-model-plot.sh [-r RUNS] [-o DIR] [-q] [-g GPU.json]... [DIR_OF_JSON]
# RUNS (default 5) runs of `model_vs_torch.py --rounds 5` (-q: at 16^3, one
# round, to check that it works); or, given a directory of outputs named
# run-I.json, those runs instead. Writes DIR/model.dat and DIR/model.png;
# DIR defaults to bench-model. STRATA_BUILD_DIR (build) holds
# bench_model_throughput. Exits 77 without PyTorch.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=bench-model runs=5 gpu=() rounds=(--rounds 5)
while getopts "r:o:g:qh" opt; do
  case $opt in
    r) runs=$OPTARG ;;
    o) out=$OPTARG ;;
    g) gpu+=("$OPTARG") ;;
    q) rounds=(--extent 16 --rounds 1) ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; [ "$opt" = h ]; exit ;;
  esac
done
shift $((OPTIND - 1))
runs_dir=${1:-$out/runs}
mkdir -p "$out" "$runs_dir"
if [ $# -eq 0 ]; then # run the benchmark RUNS times into runs_dir
  bin=${STRATA_BUILD_DIR:-build}/bench/bench_model_throughput
  [[ $bin = /* ]] || bin=$root/$bin
  for ((r = 1; r <= runs; r++)); do
    status=0
    timeout "${STRATA_RUN_TIMEOUT:-900}" /usr/bin/python3 "$root/bench/model_vs_torch.py" "$bin" \
      "${rounds[@]}" >"$runs_dir/run-$r.json" || status=$?
    if [ $status -eq 77 ]; then
      echo "bench-model-plot: skipped (no PyTorch)" >&2
      exit 77
    fi
    [ $status -eq 0 ] || exit $status
  done
fi

data=$out/model.dat
python3 - "$runs_dir" "$data" "${gpu[@]}" <<'PY'
import glob, json, os, statistics, sys

rows, nruns = {}, 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "run-*.json"))):
    with open(path) as f:
        run = json.load(f)
    nruns += 1
    for r in run["rows"]:
        name = r["strata"].replace("(s)", "").split(",")[0]
        rows.setdefault(f"CPU {run['extent']}^3 {name.replace(' rank x ', 'r x ')}", []).append(
            r["speedup_vs_torch"])
for path in sys.argv[3:]:  # one GPU run: its rounds' medians
    with open(path) as f:
        run = json.load(f)
    for r in run["rows"]:
        label = r["strata"].split(" STRATA_CUDNN=")
        kind = {"1 0": "cuDNN", "1 1": "cuDNN TF32", "0 0": "im2col"}[
            label[1].replace("STRATA_CUDNN_TF32=", "")]
        workers = label[0].split(" CUDA")[0]
        arrays = label[0].split(", ")[1].split(" ")[0]
        name = f"GPU {run['extent']}^3 {kind} {workers}w {arrays}a"
        # TF32 against PyTorch's default (TF32), float32 against its float32
        rows[name] = [r["speedup_vs_torch_default" if "TF32" in kind else
                        "speedup_vs_torch_float32"]]
if not rows:
    sys.exit("bench-model-plot: no runs in " + sys.argv[1])
top = max(1.6, 1.1 * max(v for vs in rows.values() for v in vs))
with open(sys.argv[2], "w") as dat:
    dat.write(f"#title U-Net, Strata over PyTorch's best form: CPU medians of {nruns} runs "
              f"(bars: least to largest); GPU one run (w: CUDA workers, a: arrays in flight)\n")
    dat.write(f"#ymax {top:.2f}\n")
    dat.write("# configuration, median, min, max\n")
    for name, v in rows.items():
        dat.write(f'"{name}" {statistics.median(v):.4g} {min(v):.4g} {max(v):.4g}\n')
        print(f"{name:<40} {statistics.median(v):6.2f} ({min(v):.2f}-{max(v):.2f})")
PY

source "$root/scripts/plot-lib.sh"
histogram_png "$data" "$out/model.png" 1150,660 "throughput / PyTorch (above 1: Strata faster)" \
  "\"$data\" using 2:3:4:xtic(1) notitle lc rgb \"#2171b5\", \
   1 with lines dt 2 lc rgb \"#e31a1c\" title \"parity\"" \
  $'set xtics rotate by -35\nset bmargin 10\nset rmargin 14'
