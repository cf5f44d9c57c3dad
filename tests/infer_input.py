#!/usr/bin/env python3
"""`strata infer --input`: a hierarchy that `strata infer --hdf5` wrote on
WRITERS ranks, re-analysed on 1 to 3 ranks, gives the same elements and the
same bubbles (byte-identical bubble list) as the run that wrote it; a file
of another layout, a truncated file, a missing field and a field of the
wrong shape are refused on every rank with the cause named, without a hang.

usage: infer_input.py STRATA MPIEXEC WRITERS WORKDIR
"""
import os
import re
import shutil
import sys

import tool_checks
from tool_checks import check, finish

STRATA, MPIEXEC, WRITERS, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
SMALL = ["--max-level", "4", "--levels", "2/3/4", "--grid", "64", "--quiet", "--png", "none"]
TIMEOUT = 120


def run(ranks, args):
    cmd = [MPIEXEC, "-n", str(ranks), STRATA, "infer"] + SMALL + args
    return tool_checks.run(cmd, WORK, TIMEOUT)


def elements(stdout):
    m = re.search(r"last cycle: (\d+) elements", stdout)
    return int(m.group(1)) if m else None


def read(path):
    with open(os.path.join(WORK, path), "rb") as f:
        return f.read()


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# Two cycles, so that the saved hierarchy is an evolved and re-adapted one.
w = run(WRITERS, ["--cycles", "2", "--hdf5", "saved.h5", "--bubbles", "written.txt"])
check(w is not None and w.returncode == 0, f"the writing run on {WRITERS} ranks succeeds")
written = elements(w.stdout) if w else None
check(written is not None and written > 0, f"the writing run has elements ({written})")
bubbles = read("written.txt") if w and w.returncode == 0 else b""
check(bubbles.count(b"\n") > 1, "the writing run has bubbles")

for n in (1, 2, 3):
    r = run(n, ["--input", "saved.h5", "--hdf5", "none", "--bubbles", f"read{n}.txt"])
    ok = r is not None and r.returncode == 0
    check(ok, f"--input on {n} ranks succeeds" + ("" if ok or r is None else "\n" + r.stderr))
    if ok:
        check(elements(r.stdout) == written,
              f"--input on {n} ranks: the same elements ({elements(r.stdout)} vs {written})")
        check(read(f"read{n}.txt") == bubbles, f"--input on {n} ranks: the same bubbles, bytewise")

r = run(2, ["--input", "saved.h5", "--cycles", "2"])
check(r is not None and r.returncode != 0 and "--cycles must be 1" in r.stderr,
      "--input with --cycles 2 is refused")


def refused(path, expect):
    r = run(2, ["--input", path, "--hdf5", "none"])
    if r is None:
        return
    check(r.returncode != 0, f"{path}: non-zero exit")
    check(expect in r.stderr, f"{path}: says '{expect}'" + ("" if expect in r.stderr else
                                                               "\n" + r.stderr))
    check("\n    0 " not in r.stdout, f"{path}: refused before the cycle")


import h5py  # noqa: E402  (scripts/setup.sh installs python3-h5py)

with h5py.File(os.path.join(WORK, "other.h5"), "w") as f:
    f["data"] = [1.0, 2.0]
refused("other.h5", "not a Strata AMR file")

size = os.path.getsize(os.path.join(WORK, "saved.h5"))
with open(os.path.join(WORK, "truncated.h5"), "wb") as f:
    f.write(read("saved.h5")[: size // 2])
refused("truncated.h5", "truncated")

shutil.copy(os.path.join(WORK, "saved.h5"), os.path.join(WORK, "no_density.h5"))
with h5py.File(os.path.join(WORK, "no_density.h5"), "a") as f:
    del f["fields/density"]
refused("no_density.h5", "field number 0 of 2 is missing")

shutil.copy(os.path.join(WORK, "saved.h5"), os.path.join(WORK, "bad_shape.h5"))
with h5py.File(os.path.join(WORK, "bad_shape.h5"), "a") as f:
    index = f["fields/density"].attrs["index"]
    del f["fields/density"]
    f["fields/density"] = [[1.0]]
    f["fields/density"].attrs["index"] = index
refused("bad_shape.h5", "field 'density' is not [")

refused("missing.h5", "No such file")

finish("all input checks pass")
