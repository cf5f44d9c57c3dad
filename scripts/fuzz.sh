#!/usr/bin/env bash
# Build the fuzzing targets with clang and libFuzzer (plus AddressSanitizer
# and UBSan), then run each for a given time.
#   scripts/fuzz.sh [seconds per target] [target...]    (default: 30, all)
# Each target starts from its committed corpus (tests/fuzz/corpus/<target>);
# new inputs go to build-fuzz/corpus/<target>. A crash leaves its input in
# tests/fuzz/crashes/<target>/ (commit it: CTest replays it from then on)
# and makes the script fail. STRATA_FUZZ_MERGE=1 merges the new inputs that
# add coverage back into the committed corpus.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then # every tests/fuzz/fuzz_<target>.c
  for f in tests/fuzz/fuzz_*.c; do
    f=${f##*/fuzz_}
    targets+=("${f%.c}")
  done
fi
bash scripts/setup.sh
build=${STRATA_BUILD_DIR:-build-fuzz}
CC=clang cmake -S . -B "$build" -DSTRATA_FUZZ=ON -DBUILD_TESTING=ON -DSTRATA_CUDA=OFF \
  -DSTRATA_SANITIZE=fuzzer-no-link,address,undefined >/dev/null
cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
source scripts/sanitizer-env.sh
source scripts/env.sh
export STARPU_NCPU=1 STARPU_HOME=$root/$build/starpu-home
failed=()
for t in "${targets[@]}"; do
  work=$build/corpus/$t crashes=tests/fuzz/crashes/$t
  mkdir -p "$work" "$crashes"
  log=$build/fuzz_$t.log
  if "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
       -print_final_stats=1 -artifact_prefix="$crashes/" "$work" "tests/fuzz/corpus/$t" \
       >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz $t: ${runs:-?} executions in ${seconds} s, ${cov:-cov: ?}, no crash"
  else
    echo "fuzz $t: FAILED; input saved in $crashes/ (log: $log)"
    tail -30 "$log"
    failed+=("$t")
  fi
  if [ "${STRATA_FUZZ_MERGE:-0}" = 1 ]; then
    "$build/tests/fuzz/fuzz_$t" -merge=1 "tests/fuzz/corpus/$t" "$work" >/dev/null 2>&1
  fi
  rmdir "$crashes" 2>/dev/null || true
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failures in ${failed[*]}"; exit 1; }
