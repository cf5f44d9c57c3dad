#!/usr/bin/env bash
# Instruction counts of task submission, the noise-free companion of
# task_overhead: callgrind counts the instructions executed inside
# strata__submit() and inside starpu_task_insert() (inclusive, the
# submitting thread) and prints JSON with instructions per task and the ratio.
#   bench/task_overhead_callgrind.sh BUILD_DIR [SCHEDULER]
set -euo pipefail
build=${1:?usage: task_overhead_callgrind.sh BUILD_DIR [SCHEDULER]}
sched=${2:-lws}
tasks=2000 rounds=2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1 STARPU_NCPU=${STARPU_NCPU:-1} \
  valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
  --toggle-collect=strata__submit --toggle-collect=starpu_task_insert \
  "$build/bench/bench_task_overhead" --scheds "$sched" --rounds $rounds --tasks $tasks \
  >/dev/null 2>&1
# Both paths submit rounds*tasks tasks per pattern (2 patterns); the bare
# path also submits the warm-up batches (tasks/10+1 per pattern).
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk -v t=$tasks -v r=$rounds -v s="$sched" '
  /:strata__submit \[/ { gsub(",", "", $1); strata = $1 }
  /:starpu_task_insert \[/ { gsub(",", "", $1); bare = $1 }
  END {
    ns = 2 * r * t; nb = ns + 2 * (int(t / 10) + 1)
    printf "{\"benchmark\": \"task_overhead_callgrind\", \"scheduler\": \"%s\", ", s
    printf "\"strata_instructions_per_task\": %.0f, \"bare_instructions_per_task\": %.0f, ", strata / ns, bare / nb
    printf "\"ratio\": %.3f}\n", (strata / ns) / (bare / nb)
  }'
