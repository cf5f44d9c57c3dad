#!/usr/bin/env python3
"""Write Strata's default model, an analytic blob detector, to models/blob_detector/.

The weights are computed, not trained: the network takes the log of the
density (in units of the mean), smooths it with two Gaussians (sigma 1 cell,
and 3 cells through a dilated kernel), subtracts a fraction of the wide one
from the narrow one (a difference of Gaussians) and maps the result through
a sigmoid:

    p = sigmoid(gain * (G_small * log(rho) - surround * G_large * log(rho) - threshold))

With surround = 1 this is a pure band-pass that also fires on bumps inside
voids and misses the centres of broad halos; surround = 0.5 keeps the
contrast with the surroundings and adds the density itself, so p > 0.5 on
compact peaks and on broad regions denser than exp(threshold / (1 - surround))
times the mean.
Standard library only: .npy files are written directly.
"""
import argparse
import json
import math
import os
import struct


def save_npy(path, shape, values):
    """float32, little-endian, C order, .npy version 1.0."""
    dims = "".join(f"{d}, " for d in shape).rstrip() if len(shape) > 1 else f"{shape[0]},"
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


def gaussian_kernel(size, sigma, dilation):
    """Normalised 3-D Gaussian sampled at the dilated taps of a size^3 kernel."""
    half = (size - 1) // 2
    taps = [dilation * (i - half) for i in range(size)]
    w = [math.exp(-(x * x + y * y + z * z) / (2 * sigma * sigma))
         for z in taps for y in taps for x in taps]
    total = sum(w)
    return [v / total for v in w]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models",
                                                      "blob_detector"))
    parser.add_argument("--gain", type=float, default=8.0)
    parser.add_argument("--surround", type=float, default=0.5,
                        help="weight of the wide Gaussian (1: pure difference of Gaussians)")
    parser.add_argument("--threshold", type=float, default=0.75,
                        help="value of the smoothed combination that gives p = 0.5")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    k = 7
    save_npy(os.path.join(args.out, "g_small.npy"), (1, 1, k, k, k), gaussian_kernel(k, 1.0, 1))
    save_npy(os.path.join(args.out, "g_large.npy"), (1, 1, k, k, k), gaussian_kernel(k, 3.0, 2))
    save_npy(os.path.join(args.out, "dog.npy"), (1, 2, 1, 1, 1), [args.gain, -args.gain * args.surround])
    save_npy(os.path.join(args.out, "dog_bias.npy"), (1,), [-args.gain * args.threshold])
    model = {
        "format": "strata-model",
        "version": 1,
        "name": "blob_detector",
        "description": "Analytic difference-of-Gaussians blob detector on log density; "
                       "weights computed by scripts/make_blob_model.py, not trained.",
        "input": {"channels": 1, "fields": ["density"]},
        "output": {"channels": 1, "kind": "probability"},
        "layers": [
            {"name": "log_density", "type": "log", "inputs": ["input"], "floor": 1e-6},
            {"name": "smooth_small", "type": "conv3d", "inputs": ["log_density"],
             "out_channels": 1, "kernel": k, "dilation": 1, "weights": "g_small.npy"},
            {"name": "smooth_large", "type": "conv3d", "inputs": ["log_density"],
             "out_channels": 1, "kernel": k, "dilation": 2, "weights": "g_large.npy"},
            {"name": "both", "type": "concat", "inputs": ["smooth_small", "smooth_large"]},
            {"name": "dog", "type": "conv3d", "inputs": ["both"], "out_channels": 1, "kernel": 1,
             "weights": "dog.npy", "bias": "dog_bias.npy"},
            {"name": "probability", "type": "sigmoid", "inputs": ["dog"]},
        ],
    }
    with open(os.path.join(args.out, "model.json"), "w") as f:
        json.dump(model, f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.normpath(args.out)}")


if __name__ == "__main__":
    main()
