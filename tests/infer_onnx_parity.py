#!/usr/bin/env python3
"""PyTorch parity inside the inference method: a small U-Net (BatchNorm,
ReLU, max-pool, transposed and strided convolutions, trilinear resize,
concatenation, sigmoid) exported to ONNX, run by strata_infer_run on 1 and
2 ranks with elements of 32^3 and 64^3 cells (test_infer_onnx saves each
element's input and probability), and by PyTorch on the same inputs: every
probability within 1e-5 of PyTorch's.

usage: infer_onnx_parity.py TEST_INFER_ONNX MPIEXEC DIR
Exit 77 (skip) without PyTorch."""
import glob
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Conv3d(1, 6, 3, padding=1)
        self.bn = nn.BatchNorm3d(6)
        self.down = nn.Conv3d(6, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.head = nn.Conv3d(6 + 4 + 8, 1, 3, padding=1)

    def forward(self, density):
        e = F.relu(self.bn(self.e(torch.log(density))))
        d = F.relu(self.down(e))
        pooled = F.max_pool3d(d, 2)
        smooth = F.interpolate(F.interpolate(pooled, scale_factor=2, mode="trilinear"),
                               scale_factor=2, mode="trilinear")
        return torch.sigmoid(self.head(torch.cat([e, self.up(d), smooth], 1)))


def main():
    binary, mpiexec, folder = sys.argv[1:4]
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    torch.manual_seed(3)
    model = Detector().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    path = f"{folder}/detector.onnx"
    torch.onnx.export(model, torch.ones(1, 1, 16, 16, 16), path, opset_version=13,
                      input_names=["density"], output_names=["probability"],
                      dynamic_axes={"density": {2: "d", 3: "h", 4: "w"},
                                    "probability": {2: "d", 3: "h", 4: "w"}})
    m = onnx.load(path)
    entry = m.metadata_props.add()
    entry.key, entry.value = "strata.fields", "density"
    onnx.save(m, path)
    worst, checked = 0.0, 0
    for ranks in (1, 2):
        for level_array, cells in ((1, 32), (0, 64)):
            out = f"{folder}/np{ranks}_n{cells}"
            os.makedirs(out)
            cmd = [binary, path, out, str(level_array)]
            if ranks > 1:
                cmd = [mpiexec, "-n", str(ranks)] + cmd
            run = subprocess.run(cmd, capture_output=True, text=True)
            print(run.stdout + run.stderr, end="")
            if run.returncode:
                print(f"{ranks} rank(s), {cells}^3: exit {run.returncode}")
                return 1
            inputs = sorted(glob.glob(f"{out}/*.in.npy"))
            if len(inputs) != (64 if cells == 32 else 8):
                print(f"{ranks} rank(s), {cells}^3: {len(inputs)} elements saved")
                return 1
            for f in inputs:
                x = torch.from_numpy(np.load(f))[None, None]
                with torch.no_grad():
                    want = model(x)[0, 0].numpy()
                got = np.load(f.replace(".in.npy", ".prob.npy"))
                err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
                worst = max(worst, err)
                checked += 1
            print(f"{ranks} rank(s), elements of {cells}^3: max error {worst:.2e}")
    ok = worst <= 1e-5
    print(f"{checked} elements inside strata_infer_run match PyTorch within 1e-5: "
          f"{'yes' if ok else 'NO'} (max error {worst:.2e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
