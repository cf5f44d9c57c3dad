#!/usr/bin/env python3
"""The table of bench/compare.sh: every ratio or speed-up the benchmarks
report (keys with ratio, speedup, _vs_ or _over_), as the median and range
over the runs in DIR (files BENCH-RUN.json)."""
import glob
import json
import os
import re
import statistics
import sys

FIGURE = re.compile(r"(ratio|speedup|_vs_|_over_)")
# Fields that name an entry of a list of results (a case, a size, ...).
LABELS = ("op", "n", "nodes", "shards", "in_channels", "out_channels", "kernel", "scheduler",
          "pattern", "count", "threads", "strata")


def flatten(value, prefix=""):
    """Numeric leaves of a JSON document, by path."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else key))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            label = str(i)
            if isinstance(item, dict):
                label = ",".join(f"{k}={item[k]}" for k in LABELS if k in item) or label
            out.update(flatten(item, f"{prefix}[{label}]"))
        return out
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {prefix: float(value)}
    return {}


def machine_line(docs):
    """What the machine did over the runs: the 1-minute load average and how
    many runs had DAMON paging memory out (bench_util.h, machine_state.py)."""
    loads = [d["load_average"]["1min"] if isinstance(d.get("load_average"), dict)
             else d["load_average"][0] for d in docs if "load_average" in d]
    damon = sum(1 for d in docs if d.get("damon_threads_running", 0) > 0)
    load = f"load average (1 min) {min(loads):.2f}–{max(loads):.2f}; " if loads else ""
    return f"machine: {load}DAMON running during {damon} of {len(docs)} benchmark runs"


def main(directory):
    figures = {}
    docs = []
    for path in sorted(glob.glob(os.path.join(directory, "*-*.json"))):
        bench = os.path.basename(path).rsplit("-", 1)[0]
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"compare: {path}: {e}", file=sys.stderr)
            return 1
        docs.append(doc)
        for key, value in flatten(doc).items():
            if FIGURE.search(key):
                figures.setdefault((bench, key), []).append(value)
    if not figures:
        print(f"compare: no benchmark output in {directory}", file=sys.stderr)
        return 1
    print("| benchmark | figure | median | min | max | runs |")
    print("|---|---|---|---|---|---|")
    for (bench, key), values in sorted(figures.items()):
        print(f"| {bench} | {key} | {statistics.median(values):.3g} | {min(values):.3g} | "
              f"{max(values):.3g} | {len(values)} |")
    print()
    print(machine_line(docs))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: compare_table.py DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
