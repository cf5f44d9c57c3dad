#!/usr/bin/python3
"""Check the documented HDF5 layout of AMR files written on 1..4 ranks and
that they hold the same hierarchy and bitwise-equal fields; and that each
equals its twin PREFIX_serial_N.h5, written by the serial way (gathered to
rank 0) where the first was written by every rank (parallel HDF5)."""
import sys

import h5py
import numpy as np

prefix, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
files = [h5py.File(f"{prefix}_{n}.h5", "r") for n in counts]
ref = files[0]
assert ref.attrs["format"] == b"strata-amr" or ref.attrs["format"] == "strata-amr"
dim, m = int(ref.attrs["dim"]), int(ref.attrs["block_cells"])
nblocks = ref["level"].shape[0]
assert ref["index"].shape == (nblocks, 3) and ref["lower"].shape == (nblocks, 3)
for name in ref["fields"]:
    assert ref["fields"][name].shape == (nblocks,) + (m,) * dim, name
# The blocks tile the unit domain.
volume = np.prod((ref["upper"][:] - ref["lower"][:])[:, :dim], axis=1).sum()
assert abs(volume - 1) < 1e-12, volume
for n, f in zip(counts, files):
    assert int(f.attrs["ranks"]) == n
    assert set(np.unique(f["rank"][:])) == set(range(n)), "every rank owns blocks"
    for key in ("level", "index", "lower", "upper", "name"):
        assert np.array_equal(f[key][:], ref[key][:]), (n, key)
    for name in ref["fields"]:
        a, b = f["fields"][name][:], ref["fields"][name][:]
        assert a.tobytes() == b.tobytes(), (n, name)
for n, f in zip(counts, files):
    with h5py.File(f"{prefix}_serial_{n}.h5", "r") as twin:
        assert dict(twin.attrs) == dict(f.attrs), n
        for key in ("level", "rank", "index", "lower", "upper", "name"):
            assert np.array_equal(twin[key][:], f[key][:]), (n, key, "serial")
        assert set(twin["fields"]) == set(f["fields"]), n
        for name in f["fields"]:
            assert twin["fields"][name][:].tobytes() == f["fields"][name][:].tobytes(), (n, name)
print(f"{nblocks} blocks, levels {sorted(set(ref['level'][:]))}: identical on {counts} ranks")
