#!/usr/bin/env python3
"""PyTorch parity inside the inference method, and the bubbles' value
channels.

1. A small U-Net (BatchNorm, ReLU, max-pool, transposed and strided
   convolutions, trilinear resize, concatenation, sigmoid) exported to ONNX,
   run by strata_infer_run on 1 and 2 ranks with elements of 32^3 and 64^3
   cells (test_infer_onnx saves each element's input and outputs), and by
   PyTorch on the same inputs: every probability within 1e-5 of PyTorch's.
   The same for a model of 1-D, 2-D and anisotropic operators, stride-3
   convolutions both ways and general reshapes, exported at each extent.
2. A StarNet-like model with three outputs (a probability, a regression
   channel and a two-class softmax) on 1 and 2 ranks: every output channel
   within 1e-5 of PyTorch's, the value channels named after the outputs,
   and the joined bubbles equal to this script's own labelling of the whole
   periodic grid (26-connected, from Strata's saved probabilities): the
   same ids and cells, masses and probability-weighted value means within
   1e-9; the particles table of the method's HDF5 file has a column per
   value channel, named after the outputs. Again with the outputs reordered
   (the probability second) and named in the parameters, with all other
   channels or only the class channels as values.

usage: infer_onnx_parity.py TEST_INFER_ONNX MPIEXEC DIR
Exit 77 (skip) without PyTorch."""
import glob
import os
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
    import onnx
    import torch
    import torch_onnx
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


class StarNetLike(nn.Module):
    """A probability from the smoothed log density, a regression channel and
    a class softmax from features of it."""

    def __init__(self):
        super().__init__()
        self.smooth = nn.Conv3d(1, 1, 3, padding=1, bias=False)
        self.feat = nn.Conv3d(1, 4, 3, padding=1)
        self.regress = nn.Conv3d(5, 1, 1)
        self.classes = nn.Conv3d(5, 2, 1)

    def forward(self, density):
        x = torch.log(density)
        s = self.smooth(x)
        h = torch.cat([F.relu(self.feat(x)), s], 1)
        return torch.sigmoid(6 * (s - 1.2)), self.regress(h), torch.softmax(self.classes(h), 1)


class Shapes(nn.Module):
    """Operators of any shape inside the method, at one extent n (its
    reshapes have fixed sizes): a probability from a 1x3x5 convolution,
    stride-3 convolutions both ways, the field folded into a 2-D image for a
    depthwise 2-D convolution, a pool and a resize along two axes; a value
    from the field seen as a 1-D signal (strided 1-D convolution and pool,
    global average, Linear)."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        m = (n - 1) // 3 + 1
        self.aniso = nn.Conv3d(1, 2, (1, 3, 5), padding=(0, 1, 2))
        self.down3 = nn.Conv3d(1, 2, 3, stride=3, padding=1)
        self.up3 = nn.ConvTranspose3d(2, 2, 3, stride=3, padding=1,
                                      output_padding=n - (m - 1) * 3 - 1)
        self.image = nn.Conv2d(n, n, 3, padding=1, groups=n)
        self.mix = nn.Conv3d(5, 1, 1)
        self.signal = nn.Conv1d(1, 2, 5, stride=4, padding=2)
        self.fc = nn.Linear(2, 1)

    def forward(self, density):
        n, x = self.n, torch.log(density)
        a = F.relu(self.aniso(x))
        b = self.up3(F.relu(self.down3(x)))
        d2 = self.image(x.reshape(1, n, n, n)).reshape(1, 1, n, n, n)
        p = F.interpolate(F.avg_pool3d(x, (1, 2, 2), (1, 2, 2)), scale_factor=(1, 2, 2),
                          mode="nearest")
        probability = torch.sigmoid(self.mix(torch.cat([a, b, d2 + p], 1)))
        h = F.avg_pool1d(F.relu(self.signal(x.reshape(1, 1, -1))), 4, 4)
        return probability, self.fc(F.adaptive_avg_pool1d(h, 1).flatten(1))


def export(model, path, outputs, extent=None):
    """Export with free spatial axes, or fixed at `extent`."""
    shape = (1, 1) + (extent or 16,) * 3
    torch_onnx.export(model, torch.ones(shape), path, opset_version=13,
                      input_names=["density"], output_names=outputs,
                      dynamic_axes=None if extent else
                      {name: {2: "d", 3: "h", 4: "w"} for name in ["density"] + outputs})
    m = onnx.load(path)
    entry = m.metadata_props.add()
    entry.key, entry.value = "strata.fields", "density"
    onnx.save(m, path)


def run(binary, mpiexec, path, out, ranks, level_array, outputs=()):
    os.makedirs(out)
    cmd = [binary, path, out, str(level_array)] + list(outputs)
    if ranks > 1:
        cmd = [mpiexec, "-n", str(ranks)] + cmd
    result = subprocess.run(cmd, capture_output=True, text=True)
    print(result.stdout + result.stderr, end="")
    if result.returncode:
        print(f"{ranks} rank(s): exit {result.returncode}")
        return None
    return result.stdout


def outputs_error(model, out, channels):
    """Largest error of any saved output channel against PyTorch's, relative
    to the channel's largest magnitude."""
    worst = 0.0
    for f in sorted(glob.glob(f"{out}/*.in.npy")):
        x = torch.from_numpy(np.load(f))[None, None]
        with torch.no_grad():
            got = model(x)
        got = got if isinstance(got, tuple) else (got,)
        # per-array values (a head's [N, K]) are in every cell
        want = torch.cat([o if o.dim() == 5 else o[:, :, None, None, None].expand(
            -1, -1, *x.shape[2:]) for o in got], 1)[0].numpy()
        if want.shape[0] != channels:
            raise SystemExit(f"model has {want.shape[0]} channels, expected {channels}")
        for c in range(channels):
            have = np.load(f.replace(".in.npy", f".out{c}.npy"))
            scale = max(np.abs(want[c]).max(), 1e-30)
            worst = max(worst, float(np.abs(have - want[c]).max() / scale))
    return worst


def whole_grid(out, channels, n):
    """The saved output channels assembled into [channels, S, S, S] (z, y, x)."""
    files = sorted(glob.glob(f"{out}/*.out0.npy"))
    side = round(len(files) ** (1 / 3)) * n
    grid = np.zeros((channels, side, side, side), dtype=np.float32)
    for f in files:
        ex, ey, ez = (int(v) for v in os.path.basename(f)[1:].split(".")[0].split("_"))
        for c in range(channels):
            grid[c, ez * n:(ez + 1) * n, ey * n:(ey + 1) * n, ex * n:(ex + 1) * n] = \
                np.load(f.replace(".out0.npy", f".out{c}.npy"))
    return grid


def label(mask):
    """26-connected labels of a periodic mask: each cell above threshold gets
    the smallest scan index (z, y, x) of its region, the others -1."""
    big = np.iinfo(np.int64).max
    index = np.arange(mask.size, dtype=np.int64).reshape(mask.shape)
    lab = np.where(mask, index, big)
    offsets = [(dz, dy, dx) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
               if (dz, dy, dx) != (0, 0, 0)]
    while True:
        new = lab
        for o in offsets:
            new = np.minimum(new, np.roll(lab, o, axis=(0, 1, 2)))
        new = np.where(mask, new, big)
        flat = new.reshape(-1)
        inside = flat != big
        flat[inside] = np.minimum(flat[inside], flat[flat[inside]])  # jump to the label's label
        if np.array_equal(new, lab):
            return np.where(mask, lab, -1)
        lab = new


def check_bubbles(out, channels, n, probability, values, names):
    """Strata's bubbles (bubbles.txt) against a labelling of the whole grid:
    the probability in channel `probability`, the value channels `values`,
    named `names` in the particles table."""
    grid = whole_grid(out, channels, n)
    prob = grid[probability].astype(np.float64)
    labels = label(prob > 0.5).reshape(-1)
    inside = labels >= 0
    ids, where = np.unique(labels[inside], return_inverse=True)
    p = prob.reshape(-1)[inside]
    cells = np.bincount(where)
    mass = np.bincount(where, weights=p)
    means = [np.bincount(where, weights=p * grid[c].reshape(-1)[inside].astype(np.float64)) / mass
             for c in values]
    rows = np.loadtxt(f"{out}/bubbles.txt", ndmin=2)
    with h5py.File(f"{out}/infer.h5", "r") as f:
        particles = np.sort(f["particles"][:], order="id")
    in_file = (len(particles) == len(rows) and
               np.array_equal(particles["id"], rows[:, 0].astype(np.int64)) and
               all(np.array_equal(particles[name], rows[:, 3 + k]) for k, name in enumerate(names)))
    print(f"the particles table of infer.h5 has the value columns {names}, equal to the "
          f"bubbles': {'yes' if in_file else 'NO'}")
    if len(rows) != len(ids):
        print(f"{len(rows)} bubbles from Strata, {len(ids)} regions in the grid")
        return False
    ok = (in_file and np.array_equal(rows[:, 0].astype(np.int64), ids) and
          np.array_equal(rows[:, 1].astype(np.int64), cells) and
          np.allclose(rows[:, 2], mass, rtol=1e-9, atol=0))
    ok = ok and rows.shape[1] == 3 + len(values)
    for k in range(len(values)):
        ok = ok and np.allclose(rows[:, 3 + k], means[k], rtol=1e-9, atol=1e-9)
    print(f"{len(ids)} bubbles (the largest {cells.max()} cells) with "
          f"{len(values)} value channels equal the whole-grid labelling: {'yes' if ok else 'NO'}")
    return ok


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
    export(model, path, ["probability"])
    worst, checked = 0.0, 0
    for ranks in (1, 2):
        for level_array, cells in ((1, 32), (0, 64)):
            out = f"{folder}/np{ranks}_n{cells}"
            if run(binary, mpiexec, path, out, ranks, level_array) is None:
                return 1
            inputs = glob.glob(f"{out}/*.in.npy")
            if len(inputs) != (64 if cells == 32 else 8):
                print(f"{ranks} rank(s), {cells}^3: {len(inputs)} elements saved")
                return 1
            worst = max(worst, outputs_error(model, out, 1))
            checked += len(inputs)
            print(f"{ranks} rank(s), elements of {cells}^3: max error {worst:.2e}")
    ok = worst <= 1e-5
    print(f"{checked} elements inside strata_infer_run match PyTorch within 1e-5: "
          f"{'yes' if ok else 'NO'} (max error {worst:.2e})")

    # operators of any shape, exported at each element extent
    for cells, level_array in ((32, 1), (64, 0)):
        shapes = Shapes(cells).eval()
        path = f"{folder}/shapes_{cells}.onnx"
        export(shapes, path, ["probability", "signal"], cells)
        for ranks in (1, 2):
            out = f"{folder}/shapes_np{ranks}_n{cells}"
            if run(binary, mpiexec, path, out, ranks, level_array) is None:
                return 1
            err = outputs_error(shapes, out, 2)
            print(f"operators of any shape, {ranks} rank(s), elements of {cells}^3: "
                  f"2 output channels, max error {err:.2e}")
            ok = ok and err <= 1e-5
    # made for 32^3 elements, refused for 64^3 ones with the layer named
    out = f"{folder}/shapes_refused"
    os.makedirs(out)
    result = subprocess.run([binary, f"{folder}/shapes_32.onnx", out, "0"], capture_output=True,
                            text=True, env=dict(os.environ, EXPECT_REFUSAL="reshape, node"))
    refused = result.returncode == 0 and "refused:" in result.stdout
    print(f"the 32^3 export on elements of 64^3: refused naming its reshape: "
          f"{'yes' if refused else 'NO ' + result.stdout + result.stderr}")
    ok = ok and refused

    star = StarNetLike().eval()
    with torch.no_grad():
        star.smooth.weight.fill_(1 / 27)
    path = f"{folder}/starnet.onnx"
    export(star, path, ["probability", "log_mass", "class"])
    for ranks in (1, 2):
        out = f"{folder}/starnet_np{ranks}"
        stdout = run(binary, mpiexec, path, out, ranks, 1)
        if stdout is None:
            return 1
        named = "values: log_mass class_0 class_1" in stdout
        err = outputs_error(star, out, 4)
        print(f"StarNet-like, {ranks} rank(s): value channels named after the outputs: "
              f"{'yes' if named else 'NO'}; 4 output channels, max error {err:.2e}")
        ok = (check_bubbles(out, 4, 32, 0, [1, 2, 3], ["log_mass", "class_0", "class_1"]) and
              ok and named and err <= 1e-5)
    # The outputs named in the parameters: the probability not first, the
    # values only some of the channels.
    class Reordered(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, density):
            probability, log_mass, classes = self.inner(density)
            return log_mass, probability, classes

    reordered = Reordered(star).eval()
    path = f"{folder}/starnet_reordered.onnx"
    export(reordered, path, ["log_mass", "probability", "class"])
    for args, values, names in (((), [0, 2, 3], ["log_mass", "class_0", "class_1"]),
                                (("class",), [2, 3], ["class_0", "class_1"])):
        out = f"{folder}/reordered_{len(values)}"
        stdout = run(binary, mpiexec, path, out, 1, 1, ("probability",) + args)
        if stdout is None:
            return 1
        named = f"values: {' '.join(names)}" in stdout
        print(f"probability_output 'probability' (channel 1), value_outputs "
              f"{args[0] if args else '(default)'}: named {names}: {'yes' if named else 'NO'}")
        ok = check_bubbles(out, 4, 32, 1, values, names) and ok and named
    # Names that do not fit the model are refused, with the reason.
    for args, reason in (((), "does not output a probability first"),
                         (("nosuch",), "has no output 'nosuch'"),
                         (("probability", "class,nosuch"), "has no output 'nosuch'")):
        out = f"{folder}/refused_{len(args)}"
        os.makedirs(out)
        result = subprocess.run([binary, path, out, "1"] + list(args), capture_output=True,
                                text=True, env=dict(os.environ, EXPECT_REFUSAL=reason))
        refused = result.returncode == 0 and "refused:" in result.stdout
        print(f"outputs {args or '(default)'}: refused with '{reason}': "
              f"{'yes' if refused else 'NO ' + result.stdout + result.stderr}")
        ok = ok and refused
    print("infer_onnx_parity: all checks passed" if ok else "infer_onnx_parity: a check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
