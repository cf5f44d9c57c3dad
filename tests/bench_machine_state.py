#!/usr/bin/env python3
"""Every benchmark JSON in DIR (bench/compare.sh's output) says how many of
the kernel's DAMON threads ran, and the count is the one this check reads
itself from sysfs (no test changes their state).
    bench_machine_state.py DIR"""
import glob
import json
import os
import sys

directory = sys.argv[1]
running = 0
for state in glob.glob("/sys/kernel/mm/damon/admin/kdamonds/*/state"):
    with open(state) as f:
        running += f.read().strip() == "on"
paths = sorted(glob.glob(os.path.join(directory, "*-*.json")))
assert paths, f"no benchmark output in {directory}"
for path in paths:
    with open(path) as f:
        doc = json.load(f)
    assert doc.get("damon_threads_running") == running, (path, doc.get("damon_threads_running"),
                                                         running)
print(f"{len(paths)} benchmark outputs report {running} DAMON thread(s) running, as sysfs does")
