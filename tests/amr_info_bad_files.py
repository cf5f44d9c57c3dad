#!/usr/bin/env python3
"""`strata amr-info` on files that lie: a small hierarchy written by h5py in
the layout of docs/amr.md is accepted (an independent writer), then each
damaged copy is refused with its own message, a clean exit 1 and no crash.

usage: amr_info_bad_files.py STRATA WORKDIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

STRATA, WORK = sys.argv[1], sys.argv[2]
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def write_good(path):
    """2^3 root blocks of 4^3 cells, the first refined once: 15 leaves."""
    leaves = [(1, (x, y, z)) for z in range(2) for y in range(2) for x in range(2)]
    leaves += [(0, (x, y, z)) for z in range(2) for y in range(2) for x in range(2)][1:]
    n, m = len(leaves), 4
    with h5py.File(path, "w") as f:
        f.attrs["format"] = np.bytes_("strata-amr")
        for k, v in dict(version=1, dim=3, root_blocks=2, block_cells=m, ghost_depth=1,
                         max_level=1, ranks=2, nfields=1).items():
            f.attrs[k] = np.int64(v)
        f.attrs["boundary"] = np.bytes_("periodic")
        f["level"] = np.array([l for l, _ in leaves], dtype=np.int32)
        f["rank"] = np.array([i % 2 for i in range(n)], dtype=np.int32)
        f["index"] = np.array([i for _, i in leaves], dtype=np.int64)
        side = np.array([2.0 ** -(l + 1) for l, _ in leaves])[:, None]
        f["lower"] = np.array([i for _, i in leaves], dtype=np.float64) * side
        f["upper"] = f["lower"][:] + side
        f["name"] = np.array([b"B%d" % i for i in range(n)], dtype="S64")
        f["fields/density"] = np.ones((n, m, m, m))


def amr_info(path):
    try:
        return subprocess.run([STRATA, "amr-info", path], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        return None


good = os.path.join(WORK, "good.h5")
write_good(good)
p = amr_info(good)
check(p is not None and p.returncode == 0 and "15 blocks on 2 ranks" in p.stdout
      and "integral (mean) 1" in p.stdout, "a file h5py wrote in the documented layout is read")


def damaged(name, expect, change):
    path = os.path.join(WORK, name + ".h5")
    shutil.copy(good, path)
    if callable(change):
        with h5py.File(path, "r+") as f:
            change(f)
    else:
        with open(path, "r+b") as f:
            f.truncate(change)
    p = amr_info(path)
    if p is None:
        return check(False, f"{name}: amr-info ends")
    check(p.returncode == 1, f"{name}: exit 1 (got {p.returncode})")
    check(expect in p.stderr, f"{name}: says '{expect}'" + ("" if expect in p.stderr else
                                                          "\n" + p.stderr))
    check(p.stdout == "", f"{name}: prints no summary")


def set_attr(key, value):
    def change(f):
        del f.attrs[key]
        f.attrs[key] = value
    return change


def replace(key, value):
    def change(f):
        del f[key]
        f[key] = value
    return change


damaged("dim_array", "attribute 'dim' is not a scalar integer",
        set_attr("dim", np.arange(64, dtype=np.int64)))
damaged("dim_real", "attribute 'dim' is not a scalar integer", set_attr("dim", 3.7))
damaged("ranks_huge", "attribute 'ranks' is 1000000000, outside 1..1048576",
        set_attr("ranks", np.int64(10 ** 9)))
damaged("root_blocks_huge", "attribute 'root_blocks' is 4611686018427387904",
        set_attr("root_blocks", np.int64(2 ** 62)))
damaged("root_blocks_zero", "attribute 'root_blocks' is 0", set_attr("root_blocks", np.int64(0)))
damaged("block_cells_huge", "attribute 'block_cells' is 2097152",
        set_attr("block_cells", np.int64(2 ** 21)))
damaged("no_max_level", "attribute 'max_level' is missing or damaged", lambda f: f.attrs.__delitem__("max_level"))
damaged("not_strata", "not a Strata AMR file", set_attr("format", np.bytes_("other-amr")))
damaged("level_garbage", "leaf 3 has level 99", lambda f: f["level"].__setitem__(3, 99))
damaged("rank_garbage", "leaf 2 has rank 7", lambda f: f["rank"].__setitem__(2, 7))
damaged("outside", "leaf 0 lies outside the domain",
        lambda f: f["index"].__setitem__(0, [9, 0, 0]))
damaged("overlap", "the leaves overlap or leave a gap", lambda f: f["level"].__setitem__(14, 1))
# Same volume, one cell covered twice and one not at all: a volume sum passes.
damaged("shifted", "the leaves overlap or leave a gap",
        lambda f: f["index"].__setitem__(0, [1, 0, 0]))
damaged("short_rank", "dataset 'rank' has 14 along axis 0, expected 15",
        replace("rank", np.zeros(14, dtype=np.int32)))
damaged("rank_as_float", "dataset 'rank' has the wrong element type",
        replace("rank", np.zeros(15)))
damaged("no_index", "dataset 'index' is missing", lambda f: f.__delitem__("index"))
damaged("field_missing", "'fields' holds 0 fields, attribute nfields says 1",
        lambda f: f.__delitem__("fields/density"))
damaged("field_shape", "dataset 'density' has 2 along axis 1, expected 4",
        replace("fields/density", np.ones((15, 2, 4, 4))))
damaged("truncated", "HDF5 cannot open it", os.path.getsize(good) // 2)
damaged("empty", "not an HDF5 file", 0)
# A container whose attribute messages were mutated byte-wise: libhdf5 1.10
# crashes parsing it, in amr-info's reader process, which is reported.
container = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hdf5",
                         "damaged_container.h5")
p = amr_info(container)
check(p is not None and p.returncode == 1
      and ("libhdf5 crashed reading it" in p.stderr or "AddressSanitizer" in p.stderr),
      "a container libhdf5 crashes on: exit 1 with a message"
      + ("" if p is None or p.returncode == 1 else "\n" + p.stderr[-2000:]))
p = amr_info(os.path.join(WORK, "absent.h5"))
check(p is not None and p.returncode == 1 and "No such file or directory" in p.stderr,
      "a missing file says so")

print(f"{len(failures)} failed" if failures else "every damaged file refused with its reason")
sys.exit(1 if failures else 0)
