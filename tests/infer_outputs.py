#!/usr/bin/env python3
"""`strata infer`'s outputs on N ranks: bad paths and options refused before
any work, on every rank and without a hang; ranks given different
parameters refused; a write that fails (a file size limit, as on a full
disk) removes its partial file, keeps the previous one, and does not stop
the other outputs; a writer killed with SIGKILL mid-write leaves the
previous file intact.

usage: infer_outputs.py STRATA MPIEXEC NRANKS WORKDIR
"""
import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import tool_checks
from tool_checks import check, finish

STRATA, MPIEXEC, NRANKS, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
SMALL = ["--max-level", "4", "--levels", "2/3/4", "--grid", "64", "--cycles", "1", "--quiet"]
TIMEOUT = 90
def mpi(args, ranks=NRANKS):
    return [MPIEXEC, "-n", str(ranks), STRATA, "infer"] + SMALL + args


def run(cmd, preexec=None):
    return tool_checks.run(cmd, WORK, TIMEOUT, preexec)


def refused(args, *expect, cmd=None):
    """The run fails, says every expected text, and did no cycle."""
    p = run(cmd or mpi(args))
    if p is None:
        return
    what = " ".join(args) if cmd is None else "MPMD " + " ".join(args)
    check(p.returncode != 0, f"{what}: non-zero exit ({p.returncode})")
    for e in expect:
        check(e in p.stderr, f"{what}: says '{e}'" + ("" if e in p.stderr else f"\n{p.stderr}"))
    check("\n    0 " not in p.stdout, f"{what}: refused before the first cycle")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def temp_files(name):
    return [f for f in os.listdir(WORK) if f.startswith("." + name + ".")]


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
os.makedirs(os.path.join(WORK, "a_directory"))

# Checked before any work, named with the option and the path.
refused(["--bubbles", "/nonexistent/b.txt"], "--bubbles /nonexistent/b.txt", "No such file")
refused(["--png", "missing/x.png"], "--png missing/x.png", "missing of missing/x.png")
refused(["--hdf5", "a_directory"], "--hdf5 a_directory", "is a directory")
refused(["--hdf5", "same.out", "--bubbles", "same.out"], "--hdf5 and --bubbles both write")
refused(["--slice", "1"], "--slice wants a number in [0, 1)")
refused(["--grid", "2000"], "--grid wants a whole number in [2, 1024]")
refused(["--root-blocks", "16", "--max-level", "5", "--levels", "2/4/5"],
        "pixels wide, at most 4096")

# Ranks given different parameters (MPMD): refused on every rank, no hang.
for option, a, b in (("--cycles", "1", "2"), ("--seed", "1", "2")):
    first = [STRATA, "infer"] + SMALL + [option, a, "--png", "none", "--hdf5", "none"]
    rest = [STRATA, "infer"] + SMALL + [option, b, "--png", "none", "--hdf5", "none"]
    cmd = [MPIEXEC, "-n", "1"] + first + [":", "-n", str(NRANKS - 1)] + rest
    refused([option, a, "/", b], "ranks were given different parameters", cmd=cmd)

# A good run gives the files the next runs must not destroy.
p = run(mpi(["--hdf5", "old.h5", "--bubbles", "old.txt", "--png", "old.png"]))
check(p is not None and p.returncode == 0, "a good run writes its outputs")
if p is not None:
    check("parameters:" in p.stdout and "  seed         2026" in p.stdout,
          "the effective parameters are echoed")
with open(os.path.join(WORK, "old.txt")) as f:
    check(f.readline() == "# id element x y z radius mass peak cells parts\n", "bubbles header line")
old_h5 = digest(os.path.join(WORK, "old.h5"))


def small_files():
    """As on a full disk: files beyond 16 MiB (the HDF5 file has 34) fail with
    EFBIG; strata ignores SIGXFSZ, which mpiexec resets for its children."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))


p = run(mpi(["--hdf5", "old.h5", "--bubbles", "new.txt", "--png", "new.png"]), small_files)
if p is not None:
    check(p.returncode != 0, "a failed HDF5 write fails the run")
    check("--hdf5 old.h5" in p.stderr and "File too large" in p.stderr
          and "partial file was removed" in p.stderr and "previous file is unchanged" in p.stderr,
          "the HDF5 failure names the option, the path, the cause and the removal\n" + p.stderr)
    check(os.path.getsize(os.path.join(WORK, "new.txt")) > 40
          and os.path.getsize(os.path.join(WORK, "new.png")) > 1000,
          "the other outputs are written anyway")
    check(digest(os.path.join(WORK, "old.h5")) == old_h5, "the previous HDF5 file is unchanged")
    check(not temp_files("old.h5"), "no partial file left behind")

# SIGKILL to the writing process once its temporary file has 1 MiB.
proc = subprocess.Popen(mpi(["--hdf5", "old.h5", "--png", "none", "--seed", "7"]), cwd=WORK,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
killed = False
deadline = time.time() + TIMEOUT
while not killed and proc.poll() is None and time.time() < deadline:
    for t in temp_files("old.h5"):
        path = os.path.join(WORK, t)
        try:
            if os.path.getsize(path) < (1 << 20):
                continue
        except FileNotFoundError:
            continue
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == path for fd in fds):
                    os.kill(int(pid), signal.SIGKILL)
                    killed = True
            except OSError:
                pass
    time.sleep(0.0005)
try:
    proc.wait(timeout=TIMEOUT)
except subprocess.TimeoutExpired:
    proc.kill()
    check(False, "the job ends after its writer is killed")
check(killed, "the HDF5 writer was killed mid-write")
check(digest(os.path.join(WORK, "old.h5")) == old_h5, "the previous HDF5 file survives the kill")
try:
    import h5py
    with h5py.File(os.path.join(WORK, "old.h5"), "r") as f:
        check(f.attrs["format"] == b"strata-amr" or f.attrs["format"] == "strata-amr",
              "h5py opens the previous file after the kill")
        check(f["parameters"].attrs["seed"] in (b"2026", "2026"),
              "the file keeps the run's parameters")
        # The particles table holds the bubbles of the text list, each in a
        # leaf of the file whose box contains its centre.
        table = f["particles"][:]
        with open(os.path.join(WORK, "old.txt")) as t:
            rows = [line.split() for line in t if not line.startswith("#")]
        check(len(table) == len(rows) > 0 and
              all(int(r[0]) == p["id"] and float(r[6]) == p["mass"] and int(r[9]) == p["parts"]
                  for r, p in zip(rows, table)),
              "the particles table holds the bubbles of --bubbles")
        leaves = {(int(l), tuple(int(v) for v in i)): (lo, hi) for l, i, lo, hi in
                  zip(f["level"][:], f["index"][:], f["lower"][:], f["upper"][:])}
        inside = 0
        for p in table:
            box = leaves.get((int(p["leaf_level"]), tuple(int(v) for v in p["leaf_index"])))
            inside += box is not None and all(box[0][a] <= p[c] < box[1][a]
                                              for a, c in enumerate("xyz"))
        check(inside == len(table), "each particle lies in the leaf it names")
except ImportError:  # scripts/setup.sh installs python3-h5py: its absence is a failure
    check(False, "h5py (python3-h5py) reads the previous file back")

finish(f"all output checks pass on {NRANKS} ranks")
