#!/usr/bin/env bash
# Strata on 16 simulated ranks (scripts/simulate.sh): the inference job finds
# the same elements and bubbles as a real run of the same problem, and the
# global indexer's exchanges match their hand-written baselines, and the
# weak-scaling benchmark's own mesh finds its clumps; a p4est application
# finds on 4 simulated ranks the bubbles of a real run; 4 ranks on
# the `vm` platform share this machine's cores; the host clock charges each
# simulated thread its own time, and the patched StarPU a rank's main thread
# its time on the host. Skipped
# (77) without the SimGrid StarPU (scripts/build-starpu.sh --simgrid).
#   simulate_smoke.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 real=$2 work=$3
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/strata/starpu-1.4-simgrid
if [ ! -f "$prefix/lib/pkgconfig/starpumpi-1.4.pc" ] || ! command -v smpicc >/dev/null; then
  echo "no SimGrid StarPU in $prefix: skipped"
  exit 77
fi
mkdir -p "$work"
export STRATA_SIM_BUILD_DIR=$work/build STRATA_SIM_LOG=$work/simulate.log
bash "$src/scripts/simulate.sh" build
# The host clock (scripts/simgrid-host-clock.c) charges each simulated thread
# its own time on the host: two threads taking turns, busy 100 and 35 ms in
# all, are charged those and not each other's.
printf '%s\n' "<?xml version='1.0'?>" '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">' \
  '<platform version="4.1"><zone id="z" routing="Full"><host id="h" speed="1Gf"/></zone></platform>' \
  >"$work/one-host.xml"
"$work/build/strata_host_clock" check "$work/one-host.xml" h --log=root.thres:critical

job=(infer --quiet --cycles 1 --png none --hdf5 none)
env -u XDG_CACHE_HOME STARPU_HOME="$work/starpu-home" STARPU_NCPU=1 STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1 \
  "$real/tools/strata" "${job[@]}" >"$work/real.txt"
bash "$src/scripts/simulate.sh" run -p cluster -n 16 tools/strata "${job[@]}" >"$work/sim.txt"
# Cycle 0: leaves, elements and bubbles (columns 2, 3 and 7 of the table).
figures() { awk '$1 == "0" && NF >= 12 { print $2, $3, $7 }' "$1"; }
real_fig=$(figures "$work/real.txt") sim_fig=$(figures "$work/sim.txt")
echo "leaves elements bubbles: real run $real_fig, 16 simulated ranks $sim_fig"
[ -n "$real_fig" ] && [ "$real_fig" = "$sim_fig" ]
grep -q "task graph, 16 rank(s)" "$work/sim.txt"
# The per-rank counters: no rank knows the whole level array (the directory
# holds it, spread over the ranks), each knows at least its own elements,
# the ranks' own elements add up to it; the bubble join moves bytes between
# ranks, but no rank receives as much as every part (10 values of 8 bytes
# at least each), which gathering them on every rank took.
elements=${sim_fig#* } elements=${elements%% *}
parts=$(awk '/^last cycle:/ { for (i = 1; i < NF; i++) if ($i == "from") print $(i + 1) }' "$work/sim.txt")
awk -v want="$elements" -v parts="$parts" '/elements known/ {
  for (i = 1; i < NF; i++) if ($(i + 1) == "elements" && $(i + 2) == "known,") known = $i
  own = $3; bytes = $(NF - 3)
  if (known >= own && known < want && bytes < 80 * parts) n++
  sum += own; moved += bytes
} END { printf "elements known and join bytes checked on %d ranks (%d bytes in all)\n", n, moved
        exit n == 16 && sum == want && moved > 0 ? 0 : 1 }' "$work/sim.txt"

# A p4est application in the simulation (the p4est that build-starpu.sh
# --simgrid builds, its point-to-point messages through Strata's simulated
# MPI): examples/p4est_infer on 4 simulated ranks, its bubbles at every step
# those of Strata's octree refined to the same leaves, and its last bubbles
# the same file as a real run's on one rank.
p4est=(--steps 3 --compare --model "$src/models/blob_detector/model.json")
[ -x "$work/build/examples/p4est_infer" ] || { echo "p4est_infer not built for the simulation"; exit 1; }
env -u XDG_CACHE_HOME STARPU_HOME="$work/starpu-home" STARPU_NCPU=1 STARPU_NCUDA=0 STARPU_SILENT=1 \
  STARPU_WORKERS_NOBIND=1 "$real/examples/p4est_infer" "${p4est[@]}" --bubbles "$work/p4est-real.txt" \
  >"$work/p4est-real.log"
timeout 300 bash "$src/scripts/simulate.sh" run -p cluster -n 4 examples/p4est_infer "${p4est[@]}" \
  --bubbles "$work/p4est-sim.txt" >"$work/p4est-sim.log"
[ "$(grep -c "the octree's bubbles: the same, byte for byte" "$work/p4est-sim.log")" = 3 ]
cmp "$work/p4est-real.txt" "$work/p4est-sim.txt"
echo "p4est_infer on 4 simulated ranks: $(grep -c . "$work/p4est-sim.txt") bubble lines, as a real run's"

# On the `vm` platform every rank's workers share one host's cores (the
# patched StarPU computes their tasks there), here 2 whatever this machine
# has: the same cycle on 4 ranks takes about twice what it takes on 4 nodes
# of their own, where the sleep StarPU injects by default gave the same time.
# (The host clock off on both, so that only the sharing differs.)
cycle() { awk '$1 == "0" && NF >= 12 { print $(NF - 2) }' "$1"; }
STRATA_SIM_HOST_CLOCK=0 STRATA_SIM_VM_CORES=2 bash "$src/scripts/simulate.sh" run -p vm -n 4 \
  tools/strata "${job[@]}" >"$work/vm-4.txt"
STRATA_SIM_HOST_CLOCK=0 bash "$src/scripts/simulate.sh" run -p cluster -n 4 tools/strata "${job[@]}" \
  >"$work/cluster-4.txt"
python3 - "$(cycle "$work/vm-4.txt")" "$(cycle "$work/cluster-4.txt")" <<'EOF'
import sys
vm, cluster = float(sys.argv[1]), float(sys.argv[2])
print(f"4 ranks: cycle {vm:.3f} s sharing 2 cores, {cluster:.3f} s on 4 nodes")
assert vm > 1.4 * cluster, (vm, cluster)
EOF

# The patched StarPU charges a rank's main thread its host time: on one rank
# the time it takes to submit a cycle's tasks (simulated) is 0.09 s with only
# StarPU's microsecond per task and 0.15 s with the clock, against 0.13-0.14
# measured (docs/scaling.md). The tasks last their models' means, so that
# only the clock differs: with measured durations the submission without the
# clock took 0.131 s in one run and 0.154 s in the next (a busy machine), and
# the second missed the margin below (0.191 s with the clock); with the
# models it takes 0.102 s every time, and 0.164-0.176 s with the clock.
for clock in 0 1; do
  STRATA_SIM_DURATIONS=model STRATA_SIM_HOST_CLOCK=$clock bash "$src/scripts/simulate.sh" run -p vm \
    -n 1 bench/bench_infer --quick --rounds 1 >"$work/infer-clock-$clock.json"
done
python3 - "$work/infer-clock-0.json" "$work/infer-clock-1.json" <<'EOF'
import json, sys
without, charged = (json.load(open(p))["task_graph_s"]["submit"] for p in sys.argv[1:])
print(f"1 rank: submitting {without:.3f} s simulated without the host clock, {charged:.3f} s with it")
assert charged > 1.25 * without, (without, charged)
EOF

bash "$src/scripts/simulate.sh" run -p cluster -n 16 bench/bench_gindexer --quick --rounds 1 \
  >"$work/gindexer.json"
python3 - "$work/gindexer.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 16, d["ranks"]
assert d["results_match_baselines"] is True
print("gindexer on 16 simulated ranks: Take %.3g s, Put %.3g s (simulated)"
      % (d["counts"][0]["take_s"], d["counts"][0]["put_s"]))
EOF
# The validation's indexer (4 ranks of 10^6 items) with durations from the
# models: its exchanges' pieces differ in size by a few items from rank to
# rank, and their rounded footprints find the models all the same. (No host
# clock: under a loaded machine it would charge preemptions, and the runs
# are compared below.)
rm -f "$work/gindexer-4.log"
STRATA_SIM_HOST_CLOCK=0 STRATA_SIM_DURATIONS=model STRATA_SIM_LOG=$work/gindexer-4.log \
  bash "$src/scripts/simulate.sh" run -p vm -n 4 bench/bench_gindexer --rounds 1 >"$work/gindexer-4.json"
python3 - "$work/gindexer-4.json" "$work/gindexer-4.log" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 4 and d["results_match_baselines"] is True, d["ranks"]
found = re.findall(r"task durations: (\d+) from performance models, (\d+) measured",
                   open(sys.argv[2]).read())
modeled, measured = (sum(int(f[k]) for f in found) for k in (0, 1))
print(f"gindexer on 4 ranks of 10^6 items: {modeled} of {modeled + measured} durations from the models")
assert len(found) == 4 and measured < 0.02 * (modeled + measured), (modeled, measured)
EOF
# On `vm` each message charges its sender the CPU time this machine's MPI
# spends on it (patch 0004): the same Take without that charge is shorter by
# at least half of a rank's 3 MB of messages at the rate charged.
STRATA_SIM_HOST_CLOCK=0 STRATA_SIM_DURATIONS=model STRATA_SIM_MPI_SECONDS_PER_BYTE=0 \
  bash "$src/scripts/simulate.sh" run -p vm -n 4 bench/bench_gindexer --rounds 1 \
  >"$work/gindexer-4-uncharged.json"
python3 - "$work/gindexer-4.json" "$work/gindexer-4-uncharged.json" <<'EOF'
import json, sys
charged, uncharged = (json.load(open(f))["counts"][0]["take_s"] for f in sys.argv[1:])
print(f"4-rank Take: {charged * 1e3:.2f} ms with the messages' copies charged, {uncharged * 1e3:.2f} without")
assert charged - uncharged > 0.5 * 3e6 * 3.7e-10, (charged, uncharged)
EOF
# The weak-scaling benchmark's mesh, made by each rank for itself (one root
# block and one clump a rank, 253 leaves each): every clump found, and no
# rank knows the whole level array.
bash "$src/scripts/simulate.sh" run -p cluster -n 16 bench/bench_infer_weak --quick --rounds 1 \
  >"$work/infer-weak.json"
python3 - "$work/infer-weak.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 16 and d["leaves"] == 16 * 253, (d["ranks"], d["leaves"])
assert d["all_clumps_found"] is True, d["clumps_found"]
assert 0 < d["elements_known_max_per_rank"] < d["elements"], d
print("weak mesh on 16 simulated ranks: %d elements, at most %d known on a rank, cycle %.3g s"
      % (d["elements"], d["elements_known_max_per_rank"], d["task_graph_s"]))
EOF
# Durations from the performance models kept in the repository
# (STRATA_SIM_DURATIONS=model): the tasks still run, so the clumps are found
# on 16 ranks, where nearly every task finds its footprint in the models
# (stale models, after a codelet's footprint changed, fail here:
# scripts/simulate.sh calibrate) and the others a duration by size (patch
# 0006), so no task keeps its measured time; and two runs simulate the same
# cycle to the nanosecond, on one rank and on 16, where measured durations
# differ by this machine's noise.
modeled_run() { # NAME RANKS
  rm -f "$work/modeled-$1.log" # the log is appended to
  STRATA_SIM_DURATIONS=model STRATA_SIM_LOG=$work/modeled-$1.log bash "$src/scripts/simulate.sh" \
    run -p cluster -n "$2" bench/bench_infer_weak --quick --rounds 2 >"$work/modeled-$1.json"
}
modeled_run 16 16
modeled_run 16b 16
modeled_run 1a 1
modeled_run 1b 1
python3 - "$work" <<'EOF'
import json, re, sys
work = sys.argv[1]
def counts(name):
    found = re.findall(r"task durations: (\d+) from performance models, (\d+) measured "
                       r"\(no model entry\); (\d+) of the modeled by size",
                       open(f"{work}/modeled-{name}.log").read())
    return len(found), *(sum(int(f[k]) for f in found) for k in range(3))
ranks, modeled, measured, by_size = counts("16")
assert ranks == 16 and json.load(open(f"{work}/modeled-16.json"))["all_clumps_found"]
print(f"durations from models on 16 ranks: {modeled} of {modeled + measured} tasks, "
      f"{by_size} of them by size")
assert measured == 0 and by_size < 0.02 * modeled, (modeled, measured, by_size)
assert counts("1a")[2:] == (0, 0), counts("1a")
for one, two, what in (("1a", "1b", "1 rank"), ("16", "16b", "16 ranks")):
    a, b = (json.load(open(f"{work}/modeled-{k}.json"))["task_graph_s"] for k in (one, two))
    print(f"{what}, every duration from the models: cycle {a:.9f} s and {b:.9f} s in two runs")
    assert abs(a - b) <= 1e-9 * a, (what, a, b)
EOF
# The models of several ranks pool a footprint's measurements: the same home
# twice gives every footprint twice the samples and the same mean.
mkdir -p "$work/pool/a/.starpu/sampling/codelets/45"
cp "$src/scripts/simulate-models/strata_infer_criterion.simulated" "$work/pool/a/.starpu/sampling/codelets/45/"
python3 "$src/scripts/simulate_models.py" "$work/pool/out" "$work/pool/a" "$work/pool/a"
python3 - "$src/scripts/simulate-models/strata_infer_criterion.simulated" \
  "$work/pool/out/strata_infer_criterion.simulated" <<'EOF'
import sys
def table(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("# hash"))
    return {f[0]: (float(f[3]), int(f[7])) for f in (l.split() for l in lines[start + 1:]) if f}
one, two = (table(p) for p in sys.argv[1:])
assert one.keys() == two.keys() and one, (one, two)
for key, (mean, n) in one.items():
    assert two[key][1] == 2 * n and abs(two[key][0] - mean) <= 1e-6 * mean, (key, one[key], two[key])
print(f"models pooled: {len(one)} footprints, samples doubled, means kept")
EOF
# The validation with paired models (docs/scaling.md): one run of each side
# on one rank, the models of each benchmark recorded just before its
# measured run; every task of the simulated indexer finds one. (Its log
# appends: a run before in this build directory would count twice.)
rm -rf "$work/paired"
STRATA_BUILD_DIR=$real python3 "$src/scripts/simulate_studies.py" validate --durations model \
  --models paired -r 1 -n 1 -o "$work/paired" 2>"$work/paired.err" || { cat "$work/paired.err"; exit 1; }
python3 - "$work/paired" <<'EOF'
import json, re, sys
d = json.load(open(f"{sys.argv[1]}/validation_paired.json"))
assert d["models"] == "paired" and len(d["rows"]) == 3, d
found = re.findall(r"task durations: (\d+) from performance models, (\d+) measured",
                   open(f"{sys.argv[1]}/simulate.log").read())
assert len(found) == 2 and int(found[1][0]) > 0 and int(found[1][1]) == 0, found
for r in d["rows"]:
    print(f"paired: {r['benchmark']} {r['figure']} on 1 rank: error {100 * r['error']:+.0f} %")
EOF
echo "simulation smoke test passed"
