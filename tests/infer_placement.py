#!/usr/bin/env python3
"""`strata infer --placement measured` on the default job (3 cycles) on N
ranks: every cycle moves at most 10 % of the kept arrays, the predicted
work per rank stays within 3 % of the mean, and the per-cycle table reports
both; the curve policy on the same job moves at least as many.

usage: infer_placement.py STRATA MPIEXEC NRANKS WORKDIR
"""
import os
import shutil
import sys

import tool_checks
from tool_checks import check, finish

STRATA, MPIEXEC, NRANKS, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
TIMEOUT = 240


def cycles(policy):
    """Per cycle: elements, created, migrated, predicted max/mean."""
    cmd = [MPIEXEC, "-n", str(NRANKS), STRATA, "infer", "--cycles", "3", "--quiet", "--png",
           "none", "--hdf5", "none", "--placement", policy]
    p = tool_checks.run(cmd, WORK, TIMEOUT)
    check(p is not None and p.returncode == 0, f"--placement {policy} runs")
    rows, header = [], None
    for line in (p.stdout if p else "").splitlines():
        cols = line.split()
        if cols[:1] == ["cycle"]:
            header = cols
        elif header and cols[:1] and cols[0].isdigit() and len(cols) == len(header) - 3:
            # cycle ... messages pred meas: the one-word columns before "total s"
            at = {name: float(cols[k]) for k, name in enumerate(header[:11])}
            rows.append(at)
    check(len(rows) == 3, f"--placement {policy}: 3 cycles reported")
    return rows


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
measured, curve = cycles("measured"), cycles("curve")
for c, (m, k) in enumerate(zip(measured, curve)):
    kept = m["elements"] - m["created"]
    check(m["migrated"] * 10 <= kept,
          f"cycle {c}: {m['migrated']:.0f} of {kept:.0f} kept arrays moved (at most 10 %)")
    check(m["migrated"] <= k["migrated"],
          f"cycle {c}: no more moves than the curve ({k['migrated']:.0f})")
    check(m["pred"] <= 1.03, f"cycle {c}: predicted max/mean {m['pred']:.2f} (at most 1.03)")
finish(f"all placement checks pass on {NRANKS} ranks")
