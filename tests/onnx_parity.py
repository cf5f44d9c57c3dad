#!/usr/bin/env python3
"""PyTorch parity of the ONNX import: small PyTorch models that use every
operator Strata maps, exported with torch.onnx.export at opsets 11, 13 and
17 (and as PyTorch 2.11's default exporter wrote them at opsets 18 and 21,
data/torch_export), their outputs on random fields at 32^3 and 64^3 computed by PyTorch, and
damaged files that Strata must refuse with the node named. Then
test_model_onnx checks all of it.

`strata model info` must describe the U-Net and show the stem's first
BatchNorm folded into its convolution and the ReLU after it fused.

usage: onnx_parity.py <test_model_onnx> <strata tool> <scratch folder>
Exit 77 (skip) when PyTorch or onnx is missing."""
import glob
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch
    import torch_onnx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the parity test needs PyTorch
    print(f"skipped: {e}")
    sys.exit(77)

torch.manual_seed(2026)
torch.set_num_threads(1)


class Stem(nn.Module):
    """Conv (bias, dilation, groups), BatchNorm after a convolution (folded)
    and after an activation (a per-channel affine map), activations. Exported
    with its BatchNorm nodes kept (PyTorch would fuse them itself)."""

    keep_batchnorm = True

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 6, 3, padding=1)
        self.bn = nn.BatchNorm3d(6)
        self.bn2 = nn.BatchNorm3d(6)
        self.c2 = nn.Conv3d(6, 6, 3, padding=2, dilation=2, groups=3, bias=False)
        self.c3 = nn.Conv3d(6, 4, 1)
        self.c4 = nn.Conv3d(4, 4, 5, padding=2, groups=4)

    def forward(self, x):
        y = self.bn2(F.relu(self.bn(self.c1(x))))
        y = F.leaky_relu(self.c2(y), 0.2)
        y = torch.tanh(self.c3(y))
        return torch.sigmoid(self.c4(y))


class Arithmetic(nn.Module):
    """Add, Sub, Mul, Div between activations (one single-channel) and with
    scalar and per-channel constants; Clip; Log; Identity; Dropout."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv3d(1, 3, 3, padding=1)
        self.b = nn.Conv3d(1, 1, 1)
        self.scale = nn.Parameter(torch.rand(1, 3, 1, 1, 1) + 0.5)
        self.drop = nn.Dropout3d(0.3)

    def forward(self, x):
        a, b = self.a(x), self.b(x)
        y = a * b + (a - b) / (b * b + 1.0)
        y = y * self.scale - 0.25
        y = 2.0 - y
        y = torch.clamp(y, -1.5, 2.5)
        y = self.drop(y)
        return torch.log(y + 2.0)


class Pools(nn.Module):
    """Pooling windows beyond 2x2x2: kernel 3 keeping the extent and halving
    it, a dilated maximum, averages that count the pads and that do not,
    a kernel 4 whose padding leaves one cell fewer after than before."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv3d(2, 4, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        a = F.max_pool3d(y, 3, stride=1, padding=1)
        b = F.avg_pool3d(y, 3, stride=1, padding=1, count_include_pad=False)
        half = F.max_pool3d(a + b, 3, stride=2, padding=1)
        half = half + F.avg_pool3d(a - b, 3, stride=2, padding=1, count_include_pad=True)
        half = half + F.max_pool3d(y, 2, stride=2, padding=1, dilation=2)
        half = half * F.avg_pool3d(y, 4, stride=2, padding=1)
        return F.interpolate(half, scale_factor=2, mode="nearest") + a


class Shapes(nn.Module):
    """Convolutions of every rank, kernels, strides and pads that differ by
    axis, strides of 3 and 4, a transposed convolution of stride 3, pools
    and resizes by axis, and general reshapes: the field folded into a 2-D
    image (depth as channels; a per-channel constant and a concatenation
    there) and into a 1-D signal, and back. Reshapes to
    fixed sizes tie a model to one extent, so it is exported at each."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        m = (n - 1) // 3 + 1  # extent after the stride-3 convolution
        self.aniso = nn.Conv3d(2, 4, (1, 3, 5), padding=(0, 1, 2))
        self.down3 = nn.Conv3d(2, 4, 3, stride=3, padding=1)
        self.up3 = nn.ConvTranspose3d(4, 4, 3, stride=3, padding=1,
                                      output_padding=n - (m - 1) * 3 - 1)
        self.image = nn.Conv2d(2 * n, 2 * n, 3, padding=2, dilation=2, groups=2)
        self.strided = nn.Conv2d(2 * n, 8, (3, 5), stride=(2, 3), padding=(1, 2))
        self.signal = nn.Conv1d(2, 4, 5, stride=4, padding=2)
        a = (n - 1) // 2 + 1
        b = (n - 1) // 3 + 1
        self.fc_image = nn.Linear(8 * ((a - 3) // 3 + 1) * ((b - 2) // 2 + 1), 2)
        self.fc_signal = nn.Linear(4, 3)
        self.scale2d = nn.Parameter(torch.rand(2 * n, 1, 1) + 0.5)

    def forward(self, x):
        n = self.n
        a = self.aniso(x)
        b = self.up3(F.relu(self.down3(x)))
        p = F.interpolate(F.avg_pool3d(x, (1, 2, 2), (1, 2, 2)), scale_factor=(1, 2, 2),
                          mode="nearest")
        q = F.interpolate(F.max_pool3d(a, 4, 4), scale_factor=4, mode="trilinear",
                          align_corners=False)
        image = x.reshape(1, 2 * n, n, n)
        d2 = self.image(image)
        d2 = torch.cat([d2 * self.scale2d, d2], 1).reshape(1, 4, n, n, n)
        h2 = F.max_pool2d(F.relu(self.strided(image)), (3, 2), (3, 2))
        h2 = self.fc_image(torch.flatten(h2, 1))
        h1 = F.avg_pool1d(F.relu(self.signal(x.reshape(1, 2, -1))), 4, 4)
        h1 = torch.softmax(self.fc_signal(F.adaptive_avg_pool1d(h1, 1).flatten(1)), 1)
        return torch.cat([a + b, q, torch.cat([p, p], 1) * d2], 1), h1, h2


class UNet(nn.Module):
    """A 3-D U-Net: strided conv and pools down, transposed conv and both
    resizes up, instance and group norms, concatenation of five inputs,
    softmax over channels, a second (regression) output."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv3d(1, 4, 3, padding=1)
        self.n1 = nn.InstanceNorm3d(4, affine=True)
        self.down = nn.Conv3d(4, 8, 3, stride=2, padding=1)
        self.e2 = nn.Conv3d(8, 8, 3, padding=1)
        self.bottom = nn.Conv3d(8, 8, 3, padding=1)
        self.gn = nn.GroupNorm(4, 8)
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.up3 = nn.ConvTranspose3d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.d1 = nn.Conv3d(4 + 4 + 4 + 8 + 8, 6, 3, padding=1)
        self.cls = nn.Conv3d(6, 2, 1)
        self.reg = nn.Conv3d(6, 3, 1)
        with torch.no_grad():  # non-trivial affine parameters
            self.n1.weight.uniform_(0.5, 1.5)
            self.n1.bias.uniform_(-0.5, 0.5)
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        e1 = F.relu(self.n1(self.e1(x)))
        e2 = F.relu(self.e2(self.down(e1)))
        b = F.max_pool3d(e2, 2) + F.avg_pool3d(e2, 2)
        b = F.relu(self.gn(self.bottom(b)))
        b = F.interpolate(b, scale_factor=2, mode="nearest")
        u = self.up(b)
        u3 = self.up3(b)
        lin = F.interpolate(e2, scale_factor=2, mode="trilinear", align_corners=False)
        corners = F.interpolate(e2, scale_factor=2, mode="trilinear", align_corners=True)
        d = F.relu(self.d1(torch.cat([e1, u, u3, lin, corners], 1)))
        return torch.softmax(self.cls(d), 1), self.reg(d)


class Head(nn.Module):
    """A per-cell probability beside a classifier head, as StarNet has one:
    global average pooling, Flatten, Gemm (Linear), ReLU, Gemm, Softmax over
    the classes, and MatMul + Add for a regression; the per-array values
    arrive in every cell."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv3d(1, 8, 3, padding=1)
        self.down = nn.Conv3d(8, 8, 3, stride=2, padding=1)
        self.seg = nn.Conv3d(8, 1, 1)
        self.fc1 = nn.Linear(8, 6)
        self.fc2 = nn.Linear(6, 3)
        self.w = nn.Parameter(torch.randn(6, 2))
        self.b = nn.Parameter(torch.randn(2))

    def forward(self, x):
        e = F.relu(self.c(x))
        h = torch.flatten(F.adaptive_avg_pool3d(F.relu(self.down(e)), 1), 1)
        h = F.relu(self.fc1(h))
        return (torch.sigmoid(self.seg(e)), torch.softmax(self.fc2(h), 1),
                torch.matmul(h, self.w) + self.b)


def export(model, channels, path, opset, outputs, extent=None):
    """Export with free spatial axes, or fixed at `extent` (as reshapes to
    fixed sizes need)."""
    model.eval()
    keep = getattr(model, "keep_batchnorm", False)
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm3d)):
        with torch.no_grad():  # non-trivial running statistics
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    x = torch.randn(1, channels, *(extent or 8,) * 3)
    names = [f"out{i}" for i in range(outputs)]
    with torch.no_grad():
        ys = model(x)
    ys = ys if isinstance(ys, tuple) else (ys,)
    spatial = {2: "d", 3: "h", 4: "w"}
    torch_onnx.export(model, x, path, opset_version=opset, input_names=["field"],
                      training=torch.onnx.TrainingMode.PRESERVE if keep else
                      torch.onnx.TrainingMode.EVAL, do_constant_folding=not keep,
                      output_names=names,
                      dynamic_axes=None if extent else
                      {"field": spatial, **{k: spatial for k, y in zip(names, ys) if y.dim() == 5}})


def save(path, array):
    np.save(path, np.ascontiguousarray(array, dtype=np.float32))


def reference(model, channels, n, stem):
    x = torch.randn(1, channels, n, n, n)
    with torch.no_grad():
        out = model(x)
    out = out if isinstance(out, tuple) else (out,)
    # per-array values (a classifier head's [N, K]) are in every cell
    y = torch.cat([o if o.dim() == 5 else o[:, :, None, None, None].expand(-1, -1, n, n, n)
                   for o in out], 1)
    save(f"{stem}.in.npy", x[0].numpy())
    save(f"{stem}.want.npy", y[0].numpy())
    return y.shape[1]


def save_graph(folder, name, nodes, inits, opset, inputs, outputs):
    """A graph built with onnx.helper, saved as FOLDER/NAME.onnx: one float
    input 'field' and float outputs, each given as (name, shape or None)."""
    from onnx import helper, TensorProto
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("field", TensorProto.FLOAT, inputs)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o, shape in outputs],
        list(inits))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
              f"{folder}/{name}.onnx")


def auto_pad_case(folder, lines):
    """auto_pad SAME_LOWER (a Conv) and SAME_UPPER (a MaxPool) with stride 2
    at a fixed extent of 32, which PyTorch does not export: built with
    onnx.helper, the reference computed with the explicit padding they mean
    (one cell before for the Conv, one after for the pool), each then
    resized x2 back to 32."""
    from onnx import helper
    n = 32
    w = torch.randn(2, 1, 3, 3, 3)
    b = torch.randn(2)
    nodes = [helper.make_node("Conv", ["field", "w", "b"], ["c"], auto_pad="SAME_LOWER",
                              strides=[2, 2, 2], name="conv_same_lower"),
             helper.make_node("MaxPool", ["field"], ["p"], auto_pad="SAME_UPPER",
                              kernel_shape=[3, 3, 3], strides=[2, 2, 2], name="pool_same_upper"),
             helper.make_node("Concat", ["c", "p"], ["cp"], axis=1),
             helper.make_node("Resize", ["cp", "", "scales"], ["out0"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor")]
    inits = [numpy_helper.from_array(w.numpy(), "w"), numpy_helper.from_array(b.numpy(), "b"),
             numpy_helper.from_array(np.array([1, 1, 2, 2, 2], dtype=np.float32), "scales")]
    save_graph(folder, "auto_pad", nodes, inits, 13, [1, 1, n, n, n], [("out0", [1, 3, n, n, n])])
    x = torch.randn(1, 1, n, n, n)
    with torch.no_grad():
        c = F.conv3d(F.pad(x, (1, 0, 1, 0, 1, 0)), w, b, stride=2)
        p = F.max_pool3d(F.pad(x, (0, 1, 0, 1, 0, 1), value=-float("inf")), 3, 2)
        y = F.interpolate(torch.cat([c, p], 1), scale_factor=2, mode="nearest")
    save(f"{folder}/auto_pad_{n}.in.npy", x[0].numpy())
    save(f"{folder}/auto_pad_{n}.want.npy", y[0].numpy())
    lines.append(f"good\tauto_pad.onnx\tauto_pad_{n}\t1\t3\t{n}\t1")


def many_values_case(folder, lines):
    """A Conv whose output is the loader's 128th value (125 unused
    initializers before it): its value table once grew there under the
    pointers the Conv held (a use after free under the sanitizers)."""
    from onnx import helper
    w = torch.randn(2, 1, 3, 3, 3)
    inits = [numpy_helper.from_array(np.zeros(1, np.float32), f"unused{i}") for i in range(125)]
    inits += [numpy_helper.from_array(w.numpy(), "w"),
              numpy_helper.from_array(np.zeros(2, np.float32), "b")]
    save_graph(folder, "many_values",
               [helper.make_node("Conv", ["field", "w", "b"], ["out0"], pads=[1] * 6, name="conv")],
               inits, 13, [1, 1, "d", "h", "w"], [("out0", [1, 2, "d", "h", "w"])])
    x = torch.randn(1, 1, 32, 32, 32)
    with torch.no_grad():
        y = F.conv3d(x, w, padding=1)
    save(f"{folder}/many_values_32.in.npy", x[0].numpy())
    save(f"{folder}/many_values_32.want.npy", y[0].numpy())
    lines.append("good\tmany_values.onnx\tmany_values_32\t1\t2\t32\t1")


def views_refused(folder, lines):
    """Opset 18 and 21 nodes Strata must refuse, naming them: a mean over
    the channels, groups that do not divide the channels, a Squeeze that
    moves the kept axes within (z, y, x) on an input of free extent; and a
    Squeeze of a spatial axis that is not 1, refused at the extent where it
    is not."""
    from onnx import helper

    def model(name, nodes, opset, inits=()):
        save_graph(folder, name, nodes, inits, opset, [1, 4, "d", "h", "w"], [("out0", None)])

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    model("reduce_channels", [helper.make_node("ReduceMean", ["field", "axes"], ["out0"],
                                               name="mean_c")], 18, [ints("axes", [1])])
    lines.append("bad\treduce_channels.onnx\t'mean_c' (ReduceMean)")
    ones = numpy_helper.from_array(np.ones(4, np.float32), "s")
    zeros = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    model("group_norm_3", [helper.make_node("GroupNormalization", ["field", "s", "b"], ["out0"],
                                            num_groups=3, name="gn3")], 21, [ones, zeros])
    lines.append("bad\tgroup_norm_3.onnx\t'gn3' (GroupNormalization)")
    model("squeeze_width", [helper.make_node("Squeeze", ["field", "axes"], ["out0"], name="sq_w")],
          18, [ints("axes", [4])])
    lines.append("bad\tsqueeze_width.onnx\t'sq_w' (Squeeze): moving spatial axis")
    model("squeeze_depth", [helper.make_node("Squeeze", ["field", "axes"], ["flat"], name="sq"),
                            helper.make_node("Unsqueeze", ["flat", "axes"], ["out0"])],
          18, [ints("axes", [2])])
    lines.append("extent\tsqueeze_depth.onnx\t32\tlayer 0 (reshape, node 0 'sq')")


# The models of data/torch_export: class, input channels, outputs, fixed extent.
TORCH2_MODELS = {"stem": (Stem, 2, 1, None), "arith": (Arithmetic, 1, 1, None),
                 "unet": (UNet, 1, 2, None), "head": (Head, 1, 3, None),
                 "pools": (Pools, 2, 1, None), "shapes": (lambda: Shapes(32), 2, 3, 32)}


def torch2_exports(folder, lines):
    """The same models as PyTorch 2.11's default exporter (torch.export)
    writes them, at opsets 18 and 21 (data/torch_export): each file's
    weights loaded into its class here, PyTorch's outputs computed now."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch_export")
    for path in sorted(glob.glob(f"{source}/*.onnx")):
        file = os.path.basename(path)
        cls, channels, outputs, extent = TORCH2_MODELS[file.split("_dyn")[0]]
        for f in glob.glob(f"{path}*"):
            shutil.copy(f, folder)
        model = cls().eval()
        weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
        # a BatchNorm the exporter folded into its convolution: identity here
        for name, bn in model.named_modules():
            if isinstance(bn, nn.BatchNorm3d) and f"{name}.weight" not in weights:
                with torch.no_grad():
                    bn.weight.fill_(1), bn.bias.zero_(), bn.running_mean.zero_()
                    bn.running_var.fill_(1 - bn.eps)
                weights.update({f"{name}.{k}": v.numpy() for k, v in bn.state_dict().items()})
        state = model.state_dict()
        missing = [k for k in state if k not in weights and not k.endswith("num_batches_tracked")]
        # parameters the exporter reshaped into unnamed constants ('val_*'): in
        # order, by size (a wrong match fails the parity check, never passes it)
        unnamed = [k for k in weights if k.startswith("val_") and k not in state]
        for k in list(missing):
            match = next((u for u in unnamed if weights[u].size == state[k].numel()), None)
            if match:
                weights[k] = weights[match]
                unnamed.remove(match), missing.remove(k)
        if missing:
            sys.exit(f"{file}: no initializer for {missing}")
        model.load_state_dict({k: torch.from_numpy(weights[k].copy()).reshape(v.shape)
                               for k, v in state.items() if k in weights}, strict=False)
        for n in (extent,) if extent else (32, 64):
            stem = f"{file[:-5]}_{n}"
            k = reference(model, channels, n, f"{folder}/{stem}")
            lines.append(f"good\t{file}\t{stem}\t{channels}\t{k}\t{n}\t{outputs}")


def damaged(folder, source, lines):
    """Files Strata must refuse: truncated, a header that lies, a cycle, a
    shape mismatch, an unsupported operator. Each line names what the
    message must contain."""
    blob = open(source, "rb").read()
    with open(f"{folder}/truncated.onnx", "wb") as f:
        f.write(blob[: len(blob) // 2])
    lines.append("bad\ttruncated.onnx\tprotobuf")

    m = onnx.load(source)
    init = m.graph.initializer[0]
    init.raw_data = init.raw_data[:-4]  # fewer bytes than its dims say
    onnx.save(m, f"{folder}/short_tensor.onnx")
    lines.append(f"bad\tshort_tensor.onnx\ttensor '{init.name}'")

    m = onnx.load(source)
    n0, n1 = m.graph.node[0], m.graph.node[1]
    n0.input[0] = n1.output[0]  # node 0 now reads node 1's output: a cycle
    onnx.save(m, f"{folder}/cycle.onnx")
    lines.append(f"bad\tcycle.onnx\tnode 0 '{n0.name}'")

    m = onnx.load(source)
    conv = next(n for n in m.graph.node if n.op_type == "Conv")
    weight = next(t for t in m.graph.initializer if t.name == conv.input[1])
    weight.dims[1] += 1  # expects one more input channel than it gets
    weight.raw_data = weight.raw_data + bytes(4 * weight.dims[0] * 27)
    onnx.save(m, f"{folder}/shape_mismatch.onnx")
    lines.append(f"bad\tshape_mismatch.onnx\t'{conv.name}' (Conv)")

    m = onnx.load(source)
    m.graph.node[-1].op_type = "Gelu"
    onnx.save(m, f"{folder}/unsupported.onnx")
    lines.append(f"bad\tunsupported.onnx\t'{m.graph.node[-1].name}' (Gelu)")

    m = onnx.load(source)
    m.opset_import[0].version = 9
    onnx.save(m, f"{folder}/old_opset.onnx")
    lines.append("bad\told_opset.onnx\topset 9")


def main():
    binary, tool, folder = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(folder, exist_ok=True)
    lines, out_channels = [], {}
    cases = [("stem", Stem, 2, 1), ("arith", Arithmetic, 1, 1), ("unet", UNet, 1, 2),
             ("head", Head, 1, 3), ("pools", Pools, 2, 1)]
    for name, cls, channels, outputs in cases:
        for opset in (11, 13, 17):
            if name == "unet" and opset < 13:
                continue  # Softmax over channels needs opset 13
            model = cls()
            stem = f"{folder}/{name}_op{opset}"
            export(model, channels, f"{stem}.onnx", opset, outputs)
            for n in (32, 64):
                k = reference(model, channels, n, f"{stem}_{n}")
                out_channels[name] = k
                lines.append(f"good\t{name}_op{opset}.onnx\t{name}_op{opset}_{n}\t{channels}\t{k}"
                             f"\t{n}\t{outputs}")
    # shapes: one export per extent; the other extent is refused at apply,
    # naming the layer that does not fit
    for opset in (11, 17):
        for n in (32, 64):
            model = Shapes(n)
            stem = f"{folder}/shapes_op{opset}_{n}"
            export(model, 2, f"{stem}.onnx", opset, 3, extent=n)
            k = reference(model, 2, n, stem)
            lines.append(f"good\tshapes_op{opset}_{n}.onnx\tshapes_op{opset}_{n}\t2\t{k}"
                         f"\t{n}\t3")
    lines.append("extent\tshapes_op17_32.onnx\t64\tlayer ")
    auto_pad_case(folder, lines)
    many_values_case(folder, lines)
    torch2_exports(folder, lines)
    views_refused(folder, lines)
    # float16 weights, converted at load: PyTorch runs the same model with
    # its parameters rounded to float16
    model = Arithmetic().half().float()
    stem = f"{folder}/arith_f16"
    export(model, 1, f"{stem}.onnx", 13, 1)
    m = onnx.load(f"{stem}.onnx")
    for t in m.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(numpy_helper.from_array(a, t.name))
    onnx.save(m, f"{stem}.onnx")
    k = reference(model, 1, 32, f"{stem}_32")
    lines.append(f"good\tarith_f16.onnx\tarith_f16_32\t1\t{k}\t32\t1")
    # weights in an external data file
    m = onnx.load(f"{folder}/stem_op13.onnx")
    onnx.save(m, f"{folder}/stem_external.onnx", save_as_external_data=True,
              all_tensors_to_one_file=True, location="stem_external.weights", size_threshold=0)
    lines.append(f"good\tstem_external.onnx\tstem_op13_32\t2\t{out_channels['stem']}\t32\t1")
    damaged(folder, f"{folder}/stem_op13.onnx", lines)
    with open(f"{folder}/manifest.txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{sum(l.startswith('good') for l in lines)} parity cases, "
          f"{sum(l.startswith('bad') for l in lines)} damaged files", flush=True)
    status = subprocess.call([binary, folder])
    sys.exit(status or check_model_info(tool, folder))


def check_model_info(tool, folder):
    """The tool's description: the U-Net's layers, outputs and totals; the
    stem's first BatchNorm folded and its ReLU fused (one conv3d+relu with
    its bias, then the affine map of the second BatchNorm); the Shapes
    model at the extent it was exported for, with per-axis extents and
    windows."""
    unet = subprocess.run([tool, "model", "info", f"{folder}/unet_op17.onnx"],
                          capture_output=True, text=True)
    stem = subprocess.run([tool, "model", "info", f"{folder}/stem_op13.onnx", "--extent", "32"],
                          capture_output=True, text=True)
    print(unet.stdout + stem.stdout, end="")
    lines = stem.stdout.splitlines()
    layers = [l.split()[1] for l in lines if l.strip()[:1].isdigit() and len(l.split()) > 2]
    problems = []
    if unet.returncode or stem.returncode:
        problems.append(f"exit {unet.returncode}, {stem.returncode}: {unet.stderr}{stem.stderr}")
    for needle in ("model: unet_op17", "conv_transpose3d", "upsample_linear", "softmax",
                   "out1             channels 2 to 4", "10185 parameters", "CPU"):
        if needle not in unet.stdout:
            problems.append(f"the U-Net's description lacks '{needle}'")
    # a model exported at 32^3: described there by default, with its extents by axis
    shapes = subprocess.run([tool, "model", "info", f"{folder}/shapes_op17_32.onnx"],
                            capture_output=True, text=True)
    print(shapes.stdout, end="")
    for needle in ("layers at n = 32:", "k1x3x5 s1 d1 g1", "reshape", "1x32x32", "1x1x8192",
                   "k3 s3 d1 g1"):
        if needle not in shapes.stdout:
            problems.append(f"the Shapes model's description lacks '{needle}'")
    if layers[:2] != ["conv3d+relu", "affine"] or "330" not in lines[lines.index(
            next(l for l in lines if "conv3d" in l))]:
        problems.append(f"the stem's layers are {layers}: BatchNorm not folded into conv3d, "
                        "or ReLU not fused")
    for p in problems:
        print(f"model info: {p}")
    if not problems:
        print("model info: the U-Net described, the stem's BatchNorm folded")
    return 1 if problems else 0


if __name__ == "__main__":
    main()
