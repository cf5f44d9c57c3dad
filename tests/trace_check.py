#!/usr/bin/env python3
"""Check a trace of `strata infer` on 2 ranks left by scripts/trace.sh.

usage: trace_check.py TRACE_DIR

tasks.rec: every phase's codelet ran, on both ranks (marking: where the
bubbles are), in both cycles (iteration numbers); the data dependencies of
the method are recorded (bubble extraction after the model on the same
probability map; the model after the population of its input).
paje.trace, read by pajeng's pj_dump: the same codelets appear as states of
the worker containers of the ranks they ran on.
"""
import collections
import subprocess
import sys

PHASES = ["strata_amr_fill", "strata_amr_ghosts", "strata_amr_prolong", "strata_amr_copy",
          "strata_infer_criterion", "strata_model", "strata_bubbles",
          "strata_infer_mark"]
ANY_RANK = {"strata_infer_mark"}
# consumer -> codelets one of its direct predecessors must have
DEPENDENCIES = {
    "strata_bubbles": {"strata_model"},
    "strata_model": {"strata_amr_copy", "strata_amr_restrict", "strata_amr_prolong"},
}


def read_tasks(path):
    tasks, record = [], {}
    with open(path) as f:
        for line in list(f) + ["\n"]:
            if line.strip() == "":
                if "JobId" in record:
                    tasks.append(record)
                record = {}
            elif ":" in line:
                key, value = line.split(":", 1)
                record[key] = value.strip()
    return tasks


def main(trace_dir):
    failures = []
    tasks = read_tasks(f"{trace_dir}/tasks.rec")
    ran = [t for t in tasks if "StartTime" in t and "Name" in t]
    by_job = {t["JobId"]: t for t in ran}
    seen = collections.defaultdict(set)
    iterations = set()
    for t in ran:
        seen[t["Name"]].add(max(int(t.get("MPIRank", "0")), 0))
        if "Iteration" in t:
            iterations.add(int(t["Iteration"].split()[0]))
    for name in PHASES:
        if not seen[name] or (name not in ANY_RANK and seen[name] != {0, 1}):
            failures.append(f"{name} ran on ranks {sorted(seen[name])}, expected [0, 1]")
    if not {0, 1} <= iterations:
        failures.append(f"iterations {sorted(iterations)}: expected cycles 0 and 1")
    for consumer, producers in DEPENDENCIES.items():
        total = matched = 0
        for t in ran:
            if t["Name"] == consumer:
                preds = {by_job[j]["Name"] for j in t.get("DependsOn", "").split() if j in by_job}
                total += 1
                matched += bool(preds & producers)
        print(f"{consumer}: {matched} of {total} tasks after one of {sorted(producers)}")
        if matched == 0:
            failures.append(f"no {consumer} task depends on one of {sorted(producers)}")
    dump = subprocess.run(["pj_dump", f"{trace_dir}/paje.trace"], capture_output=True, text=True)
    if dump.returncode != 0:
        failures.append(f"pj_dump failed: {dump.stderr.strip()[:300]}")
    states = collections.defaultdict(set)
    for line in dump.stdout.splitlines():
        f = [x.strip() for x in line.split(",")]
        if f[0] == "State" and f[2] == "Worker State":
            states[f[-1]].add(f[1])
    for name in PHASES:
        ranks = {int(c.split("_")[0]) for c in states[name]}
        if ranks != seen[name]:
            failures.append(f"paje.trace: {name} on worker containers {sorted(states[name])}")
    print(f"{len(ran)} tasks of {len(seen)} codelets, iterations {sorted(iterations)}, "
          f"{sum(len(v) for v in states.values())} (codelet, worker) pairs in paje.trace")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
