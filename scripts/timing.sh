# Sourced by the measuring scripts (sched-sweep.sh, env-compare.sh).
# timed_runs REPEATS LOG command [args...]: run the command REPEATS times
# (output to LOG) and print "median min max" of the wall times in seconds;
# fails, naming LOG, when a run fails or outlasts STRATA_RUN_TIMEOUT seconds
# (default 600).
timed_runs() {
  local repeats=$1 log=$2 times=() r t0
  shift 2
  for ((r = 0; r < repeats; r++)); do
    t0=$(date +%s.%N)
    timeout "${STRATA_RUN_TIMEOUT:-600}" "$@" >"$log" 2>&1 </dev/null ||
      { echo "failed or timed out: see $log" >&2; return 1; }
    times+=("$(awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { print t1 - t0 }')")
  done
  printf '%s\n' "${times[@]}" | sort -g |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                              printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
