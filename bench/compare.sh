#!/usr/bin/env bash
# Run every benchmark N times and print one table: each figure a benchmark
# reports as a ratio or speed-up, as the median and range over the runs.
#   bench/compare.sh [--runs N] [--quick] [--build DIR] [--out DIR]
# Each benchmark runs as its documented command (bench_infer, bench_infer_weak and
# bench_gindexer on 2 ranks of one worker, each rank bound to a core of its
# own where there are two, as STRATA_BIND_RANKS=1 binds them; bench_amr with
# one worker); the JSON of every run stays in the output directory
# (default: DIR/bench-compare).
# Medians of >= 5 runs are what to quote: these machines are noisy.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 quick=() build=$root/build out=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    *) echo "usage: bench/compare.sh [--runs N] [--quick] [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
out=${out:-$build/bench-compare}
mkdir -p "$out"
source "$root/scripts/env.sh" >/dev/null
export STARPU_HOME=${STARPU_HOME:-$out/starpu-home} STRATA_JIT_CACHE=${STRATA_JIT_CACHE:-$out/jit}
# Two ranks of one worker each. Unbound, Linux places the ranks' workers and
# StarPU-MPI threads two per core with no regard to which is which, at times
# both workers on one core (docs/tuning.md).
two_ranks() {
  if [ "$(nproc)" -ge 2 ]; then
    (export STARPU_NCPU=1 STRATA_BIND_RANKS=1; source "$root/scripts/env.sh" >/dev/null
     mpiexec -n 2 "$@")
  else
    STARPU_NCPU=1 mpiexec -n 2 "$@"
  fi
}
for ((i = 1; i <= runs; i++)); do
  for b in task_overhead model sharded deferred fusion amr gindexer infer infer_weak; do
    exe=$build/bench/bench_$b
    [ -x "$exe" ] || { echo "compare: no $exe (build first)" >&2; exit 1; }
    args=("${quick[@]}")
    if [ $b = task_overhead ]; then
      args=()
      [ ${#quick[@]} -gt 0 ] && args=(--tasks 200 --rounds 1)
    fi
    status=0
    case $b in
      gindexer | infer | infer_weak) two_ranks "$exe" "${args[@]}" >"$out/$b-$i.json" || status=$? ;;
      amr) STARPU_NCPU=1 "$exe" "${args[@]}" >"$out/$b-$i.json" || status=$? ;;
      *) STARPU_NCPU=2 "$exe" "${args[@]}" >"$out/$b-$i.json" || status=$? ;;
    esac
    if [ $status -ne 0 ]; then # a benchmark's failed check (results differ) stops the table
      echo "compare: bench_$b failed (exit $status) in run $i; its output: $out/$b-$i.json" >&2
      exit 1
    fi
  done
  # Against PyTorch (skipped without it): the exported U-Net, the default
  # model (the trained U-Net) and the analytic detector.
  if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    size=(--extent 64 --rounds 5)
    [ ${#quick[@]} -gt 0 ] && size=(--extent 16 --rounds 1)
    vs_torch=(/usr/bin/python3 "$root/bench/model_vs_torch.py" "$build/bench/bench_model_throughput"
              "${size[@]}")
    "${vs_torch[@]}" >"$out/model_vs_torch-$i.json"
    "${vs_torch[@]}" --model "$root/models/blob_unet/model.onnx" \
      >"$out/model_vs_torch_default-$i.json"
    "${vs_torch[@]}" --model "$root/models/blob_detector/model.json" \
      >"$out/model_vs_torch_detector-$i.json"
  fi
  # Fused chains against numexpr at 1 and 2 threads (skipped without it).
  if /usr/bin/python3 -c "import numexpr" 2>/dev/null; then
    /usr/bin/python3 "$root/bench/fusion_vs_numexpr.py" "$build/bench/bench_fusion" "${quick[@]}" \
      >"$out/fusion_vs_numexpr-$i.json"
  fi
  echo "compare: run $i of $runs done" >&2
done
python3 "$root/bench/compare_table.py" "$out"
