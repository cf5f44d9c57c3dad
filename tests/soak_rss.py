#!/usr/bin/env python3
"""Soak test: run `strata infer` with a periodic evolution (the same
refinement and coarsening every period) and check that rank 0's resident
memory stops growing: the first half of the run warms up (StarPU's
allocation cache, malloc arenas per thread); over the second half the peak
of the last two periods may exceed that of the first two by at most 1 %.

usage: soak_rss.py PERIOD COMMAND...
"""
import subprocess
import sys

period = int(sys.argv[1])
out = subprocess.run(sys.argv[2:], capture_output=True, text=True)
sys.stdout.write(out.stdout)
if out.returncode != 0:
    sys.stderr.write(out.stderr)
    sys.exit(f"soak: the run failed ({out.returncode})")
rss = {}
header = None
for line in out.stdout.splitlines():
    cols = line.split()
    if cols[:1] == ["cycle"]:
        header = cols
    elif header and len(cols) == len(header) - 2 and cols[0].isdigit():  # "total s", "rss MiB"
        rss[int(cols[0])] = float(cols[-1])
cycles = max(rss) + 1 if rss else 0
if cycles < 5 * period:
    sys.exit(f"soak: {cycles} cycles read, need at least 5 periods of {period}")
half = cycles // 2
early = max(rss[c] for c in range(half, half + 2 * period))
late = max(rss[c] for c in range(cycles - 2 * period, cycles))
print(f"soak: {cycles} cycles; peak rss {early:.1f} MiB from cycle {half} on, "
      f"{late:.1f} MiB in the last two ({100 * (late - early) / early:+.2f} %)")
if late > early * 1.01:
    sys.exit("soak: resident memory grows from period to period")
