#!/usr/bin/env python3
"""Fused elementwise chains in Strata against numexpr, the library a NumPy
user picks to fuse such chains, at equal thread counts, in one run.

The chains are bench_fusion's: 2, 4, 8 and 16 nodes cycling y * 0.5,
y + 1, sqrt(y), y - 0.25 on 10^7 float32. Strata's time is bench_fusion's
`fused_ms` (the exported graph replayed, a new output each run) with
STARPU_NCPU=1 and 2; numexpr's is ne.evaluate of the same expression with
ne.set_num_threads(1) and (2), in its faster form: a new output each call
(as NumPy code does) or one output array reused (`out=`). Both compute in
float32 (checked), and their results are compared.

Prints JSON: per chain and thread count both medians (ms) and `speedup`,
numexpr's time over Strata's (above 1: Strata is faster), with the page
faults and load average seen. Each row also has the chain without fusion:
bench_fusion's `eager_ms` (Strata's operations one at a time, temporaries
freed) against the same chain in plain NumPy (single-threaded, temporaries
freed by reference counting), as `eager_speedup_vs_numpy`.

usage: fusion_vs_numexpr.py BENCH_FUSION [--rounds R] [--quick]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from machine_state import damon_threads_running

try:
    import numexpr as ne
    import numpy as np
except ImportError as e:
    print(json.dumps({"benchmark": "fusion_vs_numexpr", "skipped": str(e)}))
    sys.exit(77)


# The constants as float32 operands: numexpr computes a float32 array
# times a Python float in float64.
CONSTANTS = {"half": np.array(0.5, np.float32), "one": np.array(1, np.float32),
             "quarter": np.array(0.25, np.float32)}


def expression(nodes):
    """bench_fusion's chain as one numexpr expression of x."""
    y = "x"
    for i in range(nodes):
        y = ["(%s * half)", "(%s + one)", "sqrt(%s)", "(%s - quarter)"][i % 4] % y
    return y


def reference(x, nodes):
    """The chain in NumPy, rounded to float32 at every step like Strata."""
    y = x
    for i in range(nodes):
        if i % 4 == 0:
            y = (y * np.float32(0.5)).astype(np.float32)
        elif i % 4 == 1:
            y = (y + np.float32(1)).astype(np.float32)
        elif i % 4 == 2:
            y = np.sqrt(y).astype(np.float32)
        else:
            y = (y - np.float32(0.25)).astype(np.float32)
    return y


def time_numexpr(x, nodes, threads, rounds):
    """Median ms of the faster form, and its result."""
    ne.set_num_threads(threads)
    expr = expression(nodes)
    out = np.empty_like(x)
    best, result = None, None
    for form in ("new", "out"):
        times = []
        for r in range(rounds + 1):  # the first compiles and warms up
            t0 = time.perf_counter()
            y = ne.evaluate(expr, local_dict=dict(CONSTANTS, x=x), out=None if form == "new" else out)
            if r:
                times.append((time.perf_counter() - t0) * 1e3)
        median = statistics.median(times)
        if best is None or median < best:
            best, result = median, y
    return best, result


def time_numpy(x, nodes, rounds):
    """Median ms of the chain in plain NumPy (one operation at a time, each
    temporary freed as the next is made), and its result."""
    steps = [lambda y: y * np.float32(0.5), lambda y: y + np.float32(1), np.sqrt,
             lambda y: y - np.float32(0.25)]
    times = []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        y = x
        for i in range(nodes):
            y = steps[i % 4](y)
        if r:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), y


def strata_times(bench, threads, rounds, quick):
    """bench_fusion's fused and eager ms per chain length."""
    env = dict(os.environ, STARPU_NCPU=str(threads), STARPU_SILENT="1")
    args = [bench, "--rounds", str(rounds)] + (["--quick"] if quick else [])
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    return report["elements"], {r["nodes"]: (r["fused_ms"], r["eager_ms"])
                                for r in report["results"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_fusion")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    rows = []
    for threads in (1, 2):
        n, strata = strata_times(a.bench_fusion, threads, a.rounds, a.quick)
        x = ((np.arange(n, dtype=np.int64) % 1000) * 0.001 + 0.5).astype(np.float32)
        for nodes, (strata_ms, eager_ms) in sorted(strata.items()):
            ne_ms, y = time_numexpr(x, nodes, threads, a.rounds)
            np_ms, z = time_numpy(x, nodes, a.rounds)
            want = reference(x[:100000], nodes)
            rows.append({
                "nodes": nodes, "threads": threads, "strata_ms": strata_ms,
                "numexpr_ms": ne_ms, "speedup": ne_ms / strata_ms,
                "numexpr_float32": y.dtype == np.float32,
                "numexpr_max_rel_diff": float(np.max(np.abs(y[:100000] - want) /
                                                 np.maximum(np.abs(want), 1e-30))),
                "strata_eager_ms": eager_ms, "numpy_ms": np_ms,
                "eager_speedup_vs_numpy": np_ms / eager_ms,
                "numpy_same_as_reference": bool(np.array_equal(z[:100000], want))})
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "benchmark": "fusion_vs_numexpr", "numexpr": ne.__version__, "results": rows,
        "page_faults": {"minor": usage.ru_minflt, "major": usage.ru_majflt},
        "load_average": dict(zip(("1min", "5min", "15min"), os.getloadavg())),
        "damon_threads_running": damon_threads_running()}, indent=1))


if __name__ == "__main__":
    main()
