#!/usr/bin/env python3
"""Soak test: run `strata infer` with a periodic evolution (the same
refinement and coarsening every period) and check that rank 0's heap in use
(glibc's mallinfo2: live allocations, unlike the resident size, which moves
with malloc's arenas and trimming) does not grow: over the second half of
the run, the peak of the last two periods may exceed that of the first two
by at most 1 %. The resident size is reported alongside.

usage: soak_heap.py PERIOD COMMAND...
"""
import subprocess
import sys

period = int(sys.argv[1])
out = subprocess.run(sys.argv[2:], capture_output=True, text=True)
sys.stdout.write(out.stdout)
if out.returncode != 0:
    sys.stderr.write(out.stderr)
    sys.exit(f"soak: the run failed ({out.returncode})")

def number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


rss, heap = {}, {}
table = 0
for line in out.stdout.splitlines():
    cols = line.split()
    if cols[:1] == ["cycle"] and cols[-2:] == ["heap", "MiB"]:
        table = len(cols) - 3  # figures per row: "total s", "rss MiB", "heap MiB" are one each
    elif table and len(cols) == table and cols[0].isdigit() and all(map(number, cols)):
        rss[int(cols[0])], heap[int(cols[0])] = float(cols[-2]), float(cols[-1])
cycles = max(heap) + 1 if heap else 0
if cycles < 4 * period or min(heap.values()) < 0:
    sys.exit(f"soak: {cycles} cycles with heap figures read, need 4 periods of {period}")
if max(heap.values()) == 0:  # a sanitizer's allocator: LeakSanitizer checks that run instead
    print(f"soak: {cycles} cycles; no heap figures from this allocator, growth not checked")
    sys.exit(0)
half = cycles // 2


def peaks(first, last):
    return (max(heap[c] for c in range(first, last)), max(rss[c] for c in range(first, last)))


(early, early_rss), (late, late_rss) = peaks(half, half + 2 * period), peaks(cycles - 2 * period, cycles)
print(f"soak: {cycles} cycles; peak heap {early:.1f} MiB from cycle {half} on, {late:.1f} MiB in "
      f"the last two periods ({100 * (late - early) / early:+.2f} %); resident {early_rss:.1f} "
      f"-> {late_rss:.1f} MiB")
if late > early * 1.01:
    sys.exit("soak: the heap grows from period to period")
