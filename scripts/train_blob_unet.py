#!/usr/bin/env python3
"""Train Strata's blob U-Net and export it to ONNX.

The fields are Strata's own test problems: the cosmology-like log-normal
density of strata_cosmology_density() (called from libstrata through ctypes,
log-density sigma 0.35, whose peaks stay below the blobs) as a background, plus Gaussian blobs planted as
strata_amr_problem_blobs() plants them, a exp(-r^2 / (2 s^2)) with
amplitude a in [6, 15] and width s in [1.2, 2.5] cells. A cell belongs to a
blob where the blob adds more than twice the mean density. The network
(log, two 3-D convolution levels, a transposed convolution up, a skip
concatenation, a sigmoid) learns that mask on 32^3 patches; precision and
recall are then measured on held-out 64^3 fields by the rule that
tests/test_model_trained.c applies to the exported model: connected regions
of probability > 0.5 of at least 4 cells, each matched to the nearest unmatched blob centre
within 2.5 cells.

usage: train_blob_unet.py LIBSTRATA.so OUT.onnx [--steps N] [--seed S]
Takes a few minutes on 2 CPU cores (Debian's python3-torch).
"""
import argparse
import ctypes
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class CosmologyParams(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("spectral_index", ctypes.c_double),
                ("sigma", ctypes.c_double), ("cutoff", ctypes.c_double)]


def background(lib, n, seed):
    """strata_cosmology_density at sigma 0.35: [n, n, n], z slowest."""
    p = CosmologyParams()
    lib.strata_cosmology_params_init(ctypes.byref(p))
    p.seed, p.sigma = seed, 0.35
    rho = np.zeros(n * n * n, dtype=np.float64)
    ret = lib.strata_cosmology_density(ctypes.c_int64(n), ctypes.byref(p),
                                       rho.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    if ret:
        raise RuntimeError(f"strata_cosmology_density: {ret}")
    return rho.reshape(n, n, n)


def plant(rng, n, count, margin):
    """Blob centres (x, y, z) at least 10 cells apart, widths, amplitudes."""
    blobs = []
    while len(blobs) < count:
        c = rng.uniform(margin, n - margin, 3)
        if all(np.linalg.norm(c - b[0]) >= 10 for b in blobs):
            blobs.append((c, rng.uniform(1.2, 2.5), rng.uniform(6, 15)))
    return blobs


def field(lib, n, seed, count):
    """A field and its blob mask (cells where a blob adds > 2x the mean)."""
    rng = np.random.default_rng(seed)
    rho = background(lib, n, seed)
    z, y, x = np.meshgrid(*(np.arange(n) + 0.5,) * 3, indexing="ij")
    added = np.zeros_like(rho)
    blobs = plant(rng, n, count, 4 if n <= 32 else 6)
    for c, s, a in blobs:
        r2 = (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2
        added += a * np.exp(-r2 / (2 * s * s))
    return (rho + added).astype(np.float32), (added > 2.0).astype(np.float32), blobs


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


def precision_recall(prob, blobs, radius=2.5, min_cells=4):
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
    args = ap.parse_args()
    lib = ctypes.CDLL(args.libstrata)
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    model = BlobUNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    # 64 training patches, re-used: fields are cheap but FFTs are not free.
    patches = [field(lib, 32, 1000 + i, 1 + i % 4) for i in range(128)]
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
        for i in range(4):  # held out: other seeds, 64^3, 8 blobs each
            rho, _, blobs = field(lib, 64, 5000 + i, 8)
            prob = model(torch.from_numpy(rho)[None, None])[0, 0].numpy()
            h, f, b = precision_recall(prob, blobs)
            hits, found, planted = hits + h, found + f, planted + b
    precision, recall = hits / max(found, 1), hits / planted
    print(f"held-out: {found} regions found, {hits} on the {planted} planted blobs: "
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
