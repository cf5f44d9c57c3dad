#!/usr/bin/env bash
# Trace a Strata program with FxT and turn the trace into something to read.
#   scripts/trace.sh [-o DIR] [--no-svg] [--] command [args...]
#   e.g. scripts/trace.sh -o infer-trace mpiexec -n 2 build-starpu-1.4/tools/strata infer --cycles 2
# The program must be linked against a StarPU built with FxT
# (scripts/build-starpu.sh; scripts/test.sh --starpu 1.4 builds Strata against
# it in build-starpu-1.4/). All ranks' traces are merged by starpu_fxt_tool.
# DIR (default: trace) then holds:
#   paje.trace      open with `vite paje.trace`
#   dag.dot, dag.svg  the task graph, coloured by codelet (SVG up to 3000 tasks)
#   tasks.rec       one record per task (codelet, worker, rank, times, deps)
#   summary.txt     `strata trace-summary`: per codelet and per rank
#   fxt/            the raw per-rank FxT files
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=trace
svg=1
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift 2 ;;
    --no-svg) svg=0; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-o DIR] [--no-svg] [--] command [args...]" >&2; exit 2; }

fxt_tool=$(command -v starpu_fxt_tool ||
  ls "${XDG_CACHE_HOME:-$HOME/.cache}"/strata/starpu-*/bin/starpu_fxt_tool 2>/dev/null | head -n 1 || true)
if [ -z "$fxt_tool" ]; then
  echo "trace: starpu_fxt_tool not found; build StarPU with FxT: scripts/build-starpu.sh" >&2
  exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/fxt" && mkdir -p "$out/fxt"
# 1.3 traces whenever FxT is compiled in; 1.4 waits for STARPU_FXT_TRACE.
set +e
STARPU_FXT_PREFIX=$out/fxt/ STARPU_FXT_TRACE=1 "$@"
status=$?
set -e
mapfile -t files < <(ls "$out"/fxt/prof_file_* 2>/dev/null)
if [ ${#files[@]} -eq 0 ]; then
  echo "trace: the program wrote no FxT trace: link it against the StarPU that" \
    "scripts/build-starpu.sh builds (e.g. scripts/test.sh --starpu 1.4)" >&2
  exit 1
fi
inputs=()
for f in "${files[@]}"; do inputs+=(-i "$f"); done
(cd "$out" && "$fxt_tool" -c "${inputs[@]}" >fxt_tool.log 2>&1) ||
  { cat "$out/fxt_tool.log" >&2; exit 1; }
# Strict Paje readers (pajeng) want events in time order, no empty strings
# and no events on containers never created (StarPU 1.3 leaves a few on the
# StarPU-MPI thread); ViTE reads either form. Definitions (events without a
# time) go first. First pass: the containers; second: filter and key.
tab=$(printf '\t')
awk 'BEGIN { OFS = "\t" }
     /^%EventDef/ { name = $2; id = $3; field = 1; next }
     /^%[ \t]+[A-Za-z]/ {
       field++
       if ($2 == "Time") timed[id] = 1
       if ($2 == "Container") at[id] = field
       if ($2 == "Alias" && name == "PajeCreateContainer") create = id
       if ($2 == "Alias") alias_at[id] = field
       next }
     /^%/ { next }
     NR == FNR { if ($1 == create) known[$alias_at[create]] = 1; next }
     ($1 in at) && $1 != create && !($(at[$1]) in known) { next }
     { gsub(/\t""\t/, "\t\"-\"\t"); print (($1 in timed) ? $2 : "-1"), FNR, $0 }' \
  "$out/paje.trace" "$out/paje.trace" |
  sort -t "$tab" -k1,1g -k2,2n | cut -f3- >"$out/paje.body"
{ grep '^%' "$out/paje.trace"; cat "$out/paje.body"; } >"$out/paje.sorted"
mv "$out/paje.sorted" "$out/paje.trace" && rm "$out/paje.body"
# Graphviz lays out a few thousand tasks in seconds, not tens of thousands.
tasks=$(grep -c '^JobId:' "$out/tasks.rec" || true)
if [ $svg = 1 ] && command -v dot >/dev/null; then
  if [ "$tasks" -le "${STRATA_TRACE_SVG_MAX:-3000}" ]; then
    dot -Tsvg "$out/dag.dot" -o "$out/dag.svg"
  else
    echo "trace: $tasks tasks: dag.svg not drawn (STRATA_TRACE_SVG_MAX=${STRATA_TRACE_SVG_MAX:-3000})" >&2
  fi
fi
strata=${STRATA_TOOL:-}
if [ -z "$strata" ]; then
  strata=$(ls -t "$root"/build*/tools/strata 2>/dev/null | head -n 1 || true)
fi
if [ -n "$strata" ]; then
  "$strata" trace-summary "$out/tasks.rec" | tee "$out/summary.txt"
fi
echo "trace: ${#files[@]} rank(s) merged into $out/paje.trace (vite $out/paje.trace)" >&2
exit $status
