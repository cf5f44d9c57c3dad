#!/usr/bin/env python3
"""Train Strata's blob U-Net, the default model of `strata infer`, and export it to ONNX.

The fields are the ones `strata infer` analyses, made by Strata's own test
problems through libstrata (ctypes): the cosmology-like log-normal density
(strata_amr_problem_cosmology_field, a 128^3 generation grid, log-density
sigma 1.0-2.2 around the job's 1.5-1.65) plus collapsed clumps
(strata_amr_problem_add_clumps: Gaussians of width 1.0-2.5 cells holding
4-32 root cells' mean mass, added as cell means), sampled on 32^3 windows
of the level-5 grid (1024^3 cells) aligned as the job's inference arrays
are. A cell belongs to a clump's core where the clump is denser there than
the background and than e^-2 of its own peak (within about two widths of
its centre): a clump's far tail still dominates a void's background, so
the first condition alone would make a void's clump a bubble of hundreds
of cells. Half the windows hold 1 to 4 clumps; the others sit on
the background's densest peaks with none, so the network learns the
compact clumps and not dense structure. The network (log, two 3-D
convolution levels, a transposed convolution up, a skip concatenation, a
sigmoid) learns that mask; precision and recall are then measured on
held-out 64^3 windows (other seeds, 8 clumps) by the rule that `strata
infer` applies to the planted clumps: each connected region of probability
> 0.5 counts, and finds the nearest unfound clump whose centre lies within
2.5 cells of its probability-weighted centre.

usage: train_blob_unet.py LIBSTRATA.so OUT.onnx [--steps N] [--seed S] [--windows W]
                          [--held-out H]
Takes a few minutes on 2 CPU cores (Debian's python3-torch); exits 77
without PyTorch. The shipped model: the defaults (800 steps, seed 7, 128
windows, 4 held-out fields).
"""
import argparse
import ctypes
import math
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"train_blob_unet: {e}: skipped")
    sys.exit(77)

ROOT_CELLS, LEVEL = 32, 5  # the job's root grid and level_infer
CELLS = ROOT_CELLS << LEVEL  # cells per axis at level_infer
H = 1.0 / CELLS


class CosmologyParams(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("spectral_index", ctypes.c_double),
                ("sigma", ctypes.c_double), ("cutoff", ctypes.c_double)]


def doubles(values):
    a = np.ascontiguousarray(values, dtype=np.float64)
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


class Job:
    """The job's Gaussian field of one seed, and problems made from it."""

    def __init__(self, lib, seed, grid=128):
        self.lib = lib
        p = CosmologyParams()
        lib.strata_cosmology_params_init(ctypes.byref(p))
        p.seed = seed
        self.field = ctypes.c_void_p()
        self.check(lib.strata_cosmology_field_create(ctypes.c_int64(grid), ctypes.byref(p),
                                                     ctypes.byref(self.field)))

    def check(self, ret):
        if ret:
            raise RuntimeError(f"libstrata returned {ret}")

    def problem(self, sigma, clumps=()):
        """The background at sigma (None: zero), plus clumps ((x, y, z), width, mass) in
        domain units."""
        prob = ctypes.c_void_p()
        if sigma is None:
            zero = (ctypes.c_double * 4)()
            self.check(self.lib.strata_amr_problem_linear(zero, ctypes.byref(prob)))
        else:
            self.check(self.lib.strata_amr_problem_cosmology_field(
                self.field, ctypes.c_double(sigma), ctypes.byref(prob)))
        if clumps:
            c, cp = doubles([x for k in clumps for x in k[0]])
            w, wp = doubles([k[1] for k in clumps])
            m, mp = doubles([k[2] for k in clumps])
            out = ctypes.c_void_p()
            self.check(self.lib.strata_amr_problem_add_clumps(prob, len(clumps), cp, wp, mp,
                                                              ctypes.byref(out)))
            prob = out
        return prob

    def sample(self, prob, origin, n):
        """The problem at the centres of an n^3 window of level-5 cells from cell `origin`."""
        out = np.zeros((n, n, n))
        row = (ctypes.c_double * n)()
        for z in range(n):
            for y in range(n):
                centre = (ctypes.c_double * 3)((origin[0] + 0.5) * H, (origin[1] + y + 0.5) * H,
                                               (origin[2] + z + 0.5) * H)
                self.check(self.lib.strata_amr_problem_eval(prob, 0, centre, ctypes.c_double(H),
                                                            ctypes.c_int64(n), row))
                out[z, y] = row[:]
        return out

    def destroy(self, prob):
        self.lib.strata_amr_problem_destroy(prob)


def densest_window(job, sigma, n, rng, tries=64):
    """The window (aligned on n cells) around the densest of a few random samples."""
    prob = job.problem(sigma)
    best, origin = -1.0, None
    centre = (ctypes.c_double * 3)()
    value = ctypes.c_double()
    for _ in range(tries):
        cell = rng.integers(0, CELLS, 3)
        centre[:] = [(c + 0.5) * H for c in cell]
        job.lib.strata_amr_problem_eval(prob, 0, centre, ctypes.c_double(H), ctypes.c_int64(1),
                                        ctypes.byref(value))
        if value.value > best:
            best, origin = value.value, [int(c) // n * n for c in cell]
    job.destroy(prob)
    return origin


def field(lib, n, seed, count, rng_seed=None, margin=-2):
    """A window of the job's field, its clump mask and the clumps (centres in
    cells) that lie in it; clump centres keep `margin` cells from its faces."""
    rng = np.random.default_rng(seed if rng_seed is None else rng_seed)
    job = Job(lib, seed)
    sigma = rng.uniform(1.0, 2.2)
    if count:
        origin = [int(c) * n for c in rng.integers(0, CELLS // n, 3)]
    else:
        origin = densest_window(job, sigma, n, rng)
    clumps, cells = [], []
    while len(clumps) < count:  # centres 10 cells apart
        c = rng.uniform(margin, n - margin, 3)
        if all(np.linalg.norm(c - b) >= 10 for b in cells):
            cells.append(c)
            width = rng.uniform(1.0, 2.5) * H
            mass = rng.uniform(4, 32) / ROOT_CELLS ** 3
            clumps.append(([(origin[a] + c[a]) * H for a in range(3)], width, mass))
    background = job.problem(sigma)
    bg = job.sample(background, origin, n)
    job.destroy(background)
    rho, core = bg.copy(), np.zeros(bg.shape, dtype=bool)
    for clump in clumps:
        alone = job.problem(None, [clump])
        own = job.sample(alone, origin, n)
        job.destroy(alone)
        peak = clump[2] / ((2 * math.pi) ** 1.5 * clump[1] ** 3)
        rho += own
        core |= (own > bg) & (own > math.exp(-2) * peak)
    lib.strata_cosmology_field_destroy(job.field)
    blobs = [(c, None, None) for c in cells if (c >= 0).all() and (c < n).all()]
    return rho.astype(np.float32), core.astype(np.float32), blobs


class BlobUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv3d(1, 8, 3, padding=1)
        self.e2 = nn.Conv3d(8, 8, 3, padding=1)
        self.down = nn.Conv3d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
        self.d1 = nn.Conv3d(16, 8, 3, padding=1)
        self.head = nn.Conv3d(8, 1, 1)

    def forward(self, density):
        x = torch.log(density)
        e = F.relu(self.e2(F.relu(self.e1(x))))
        b = F.relu(self.down(F.max_pool3d(e, 2)))
        d = F.relu(self.d1(torch.cat([e, self.up(b)], 1)))
        return torch.sigmoid(self.head(d))


def components(mask):
    """26-connected labels of a boolean [n, n, n] mask (max-label flooding)."""
    n = mask.shape[0]
    m = torch.from_numpy(mask)
    labels = torch.where(m, torch.arange(1, n ** 3 + 1, dtype=torch.float64).reshape(n, n, n),
                         torch.zeros(1, dtype=torch.float64))
    while True:
        grown = F.max_pool3d(labels[None, None], 3, stride=1, padding=1)[0, 0] * m
        if torch.equal(grown, labels):
            return labels.numpy()
        labels = grown


def precision_recall(prob, blobs, radius=2.5, min_cells=1):
    labels = components(prob > 0.5)
    z, y, x = np.meshgrid(*(np.arange(prob.shape[0]) + 0.5,) * 3, indexing="ij")
    unmatched = list(range(len(blobs)))
    found = hits = 0
    for lab in np.unique(labels[labels > 0]):
        cells = labels == lab
        if cells.sum() < min_cells:
            continue
        w = prob[cells]
        centre = np.array([(x[cells] * w).sum(), (y[cells] * w).sum(), (z[cells] * w).sum()]) / w.sum()
        found += 1
        near = [(np.linalg.norm(centre - blobs[i][0]), i) for i in unmatched]
        if near and min(near)[0] <= radius:
            unmatched.remove(min(near)[1])
            hits += 1
    return hits, found, len(blobs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libstrata")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--windows", type=int, default=128, help="training windows")
    ap.add_argument("--held-out", type=int, default=4, help="held-out 64^3 fields")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.libstrata)
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    model = BlobUNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    # Training windows, re-used: the FFTs of a field are not free. Even ones
    # hold 1 to 4 clumps, odd ones sit on dense background with none.
    patches = [field(lib, 32, 1000 + i // 2, (1 + i // 2 % 4) * (1 - i % 2), 1000 + i)
               for i in range(args.windows)]
    start = time.time()
    for step in range(args.steps):
        batch = [patches[(step * 8 + j) % len(patches)] for j in range(8)]
        x = torch.from_numpy(np.stack([b[0] for b in batch]))[:, None]
        t = torch.from_numpy(np.stack([b[1] for b in batch]))[:, None]
        p = model(x)
        loss = F.binary_cross_entropy(p, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f} ({time.time() - start:.0f} s)", flush=True)
    model.eval()
    hits = found = planted = 0
    with torch.no_grad():
        for i in range(args.held_out):  # held out: other seeds, 64^3, 8 clumps each
            rho, _, blobs = field(lib, 64, 5000 + i, 8, margin=4)
            prob = model(torch.from_numpy(rho)[None, None])[0, 0].numpy()
            h, f, b = precision_recall(prob, blobs)
            hits, found, planted = hits + h, found + f, planted + b
    precision, recall = hits / max(found, 1), hits / planted
    print(f"held-out: {found} regions found, {hits} on the {planted} planted clumps: "
          f"precision {precision:.3f}, recall {recall:.3f}")
    torch.onnx.export(model, torch.ones(1, 1, 32, 32, 32), args.out, opset_version=13,
                      input_names=["density"], output_names=["probability"],
                      dynamic_axes={"density": {2: "d", 3: "h", 4: "w"},
                                    "probability": {2: "d", 3: "h", 4: "w"}})
    import onnx
    m = onnx.load(args.out)
    m.graph.name = "blob_unet"
    for key, value in (("strata.output", "probability"), ("strata.fields", "density"),
                       ("strata.training", f"{args.steps} steps, seed {args.seed}, held-out "
                        f"precision {precision:.3f} recall {recall:.3f}")):
        entry = m.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(m, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
