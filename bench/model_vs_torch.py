#!/usr/bin/env python3
"""The same 3-D U-Net, exported from PyTorch to ONNX, run by PyTorch on the
CPU and by Strata (bench_model_throughput) in one run, at equal thread counts:

  threads 1: PyTorch torch.set_num_threads(1), one array at a time,
             against Strata with STARPU_NCPU=1, one array in flight;
  threads 2: PyTorch with 2 threads, one array at a time and a batch of 2,
             against Strata with STARPU_NCPU=2 and 2 arrays in flight;
  2 ranks:   Strata on 2 MPI ranks of 1 worker, 1 array each, against the
             same PyTorch 2-thread figures.

PyTorch runs in two forms: as written (eager), and frozen and optimised for
inference (torch.jit.freeze + optimize_for_inference: oneDNN layouts, fused
convolutions and activations), which is what a user tuning CPU inference
does. Prints JSON: per configuration the seconds per array (median, min,
max of the rounds) and Strata's throughput over PyTorch's best form at that
thread count, with the page faults and load average seen.

With --model FILE the model is instead one of Strata's shipped models,
rebuilt in PyTorch for the comparison: a JSON model (the analytic blob
detector, models/blob_detector/model.json) from its description and
weights, or the default trained U-Net (models/blob_unet/model.onnx) as the
module of scripts/train_blob_unet.py with the file's weights.

With --device cuda both run on the GPU instead: PyTorch with
cudnn.benchmark, as PyTorch's defaults have it (TF32 convolutions) and in
strict float32 (as Strata computes by default: cuDNN without tensor cores),
one array at a time and a batch of --arrays; Strata on the GPU alone (no
CPU worker), convolutions by cuDNN (STRATA_CUDNN=1, in float32 and with
STRATA_CUDNN_TF32=1) and by im2col + cuBLAS (STRATA_CUDNN=0), 1 and
--arrays arrays in flight, on one StarPU worker (one stream) or one per
array in flight (STARPU_NWORKER_PER_CUDA).

usage: model_vs_torch.py BENCH_MODEL_THROUGHPUT [--model FILE] [--extent N]
                         [--rounds R] [--mpiexec PATH] [--device cpu|cuda] [--arrays A]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from machine_state import damon_threads_running

# PyTorch's OpenMP threads otherwise keep spinning after each of its runs,
# on the cores where Strata's run comes next (measured: Strata's one-thread
# time 0.043 s against 0.027 s alone), while PyTorch's own times are the
# same either way. Set before torch loads libgomp.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(json.dumps({"benchmark": "model_vs_torch", "skipped": str(e)}))
    sys.exit(77)


def block(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(),
                         nn.Conv3d(cout, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU())


class UNet3D(nn.Module):
    """Two poolings, 8-16-32 channels, transposed convolutions up, skip
    concatenations, a sigmoid probability: the size of a blob detector."""

    def __init__(self, base=8):
        super().__init__()
        self.enc1, self.enc2 = block(1, base), block(base, 2 * base)
        self.bottom = block(2 * base, 4 * base)
        self.up2 = nn.ConvTranspose3d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = block(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose3d(2 * base, base, 2, stride=2)
        self.dec1 = block(2 * base, base)
        self.head = nn.Conv3d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool3d(e1, 2))
        b = self.bottom(F.max_pool3d(e2, 2))
        d2 = self.dec2(torch.cat([e2, self.up2(b)], 1))
        d1 = self.dec1(torch.cat([e1, self.up1(d2)], 1))
        return torch.sigmoid(self.head(d1))


class JsonNet(nn.Module):
    """A Strata JSON model (include/strata/model.h's schema) in PyTorch."""

    def __init__(self, path):
        super().__init__()
        import numpy as np
        folder = os.path.dirname(path)
        self.layers = json.load(open(path))["layers"]
        self.params = nn.ParameterList()
        self.index = {}
        for layer in self.layers:
            if layer["type"] == "conv3d":
                self.index[layer["name"]] = len(self.params)
                self.params.append(nn.Parameter(torch.from_numpy(
                    np.load(f"{folder}/{layer['weights']}")), requires_grad=False))
                bias = layer.get("bias")
                self.params.append(nn.Parameter(torch.from_numpy(np.load(f"{folder}/{bias}")) if bias
                                                else torch.zeros(layer["out_channels"]),
                                                requires_grad=False))

    def forward(self, x):
        out, last = {"input": x}, x
        for layer in self.layers:
            ins = [out[i] for i in layer.get("inputs", [])] or [last]
            kind = layer["type"]
            if kind == "conv3d":
                w, b = self.params[self.index[layer["name"]]], self.params[self.index[layer["name"]] + 1]
                d, k = layer.get("dilation", 1), layer["kernel"]
                before = d * (k - 1) // 2
                padded = F.pad(ins[0], (before, d * (k - 1) - before) * 3)
                y = F.conv3d(padded, w, b, dilation=d)
            elif kind == "log":
                y = torch.log(torch.clamp(ins[0], min=layer.get("floor", 1e-30)))
            elif kind == "relu":
                y = F.relu(ins[0])
            elif kind == "leaky_relu":
                y = F.leaky_relu(ins[0], layer.get("slope", 0.01))
            elif kind == "sigmoid":
                y = torch.sigmoid(ins[0])
            elif kind == "maxpool":
                y = F.max_pool3d(ins[0], 2)
            elif kind == "upsample":
                y = F.interpolate(ins[0], scale_factor=2, mode="nearest")
            else:  # concat
                y = torch.cat(ins, 1)
            out[layer["name"]] = last = y
        return last


def trained_unet(path):
    """The ONNX file of scripts/train_blob_unet.py as its PyTorch module: the
    initializers carry the module's parameter names."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
    import train_blob_unet
    net = train_blob_unet.BlobUNet()
    weights = {t.name: torch.from_numpy(np.array(numpy_helper.to_array(t)))
               for t in onnx.load(path).graph.initializer}
    net.load_state_dict(weights)
    return net


def export_onnx(model, example, path):
    """The U-Net to ONNX with free spatial axes, by the TorchScript exporter
    as the tests export (tests/torch_onnx.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    import torch_onnx
    torch_onnx.export(model, example, path, opset_version=13, input_names=["density"],
                      output_names=["probability"],
                      dynamic_axes={"density": {2: "d", 3: "h", 4: "w"},
                                    "probability": {2: "d", 3: "h", 4: "w"}})


def spread(times):
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def time_torch(model, threads, batch, extent, rounds, device="cpu"):
    torch.set_num_threads(threads)
    x = torch.rand(batch, 1, extent, extent, extent, device=device) + 0.5  # a positive density
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = []
    with torch.no_grad():
        model(x)  # warm-up (and cudnn.benchmark's choice of algorithms)
        for _ in range(rounds):
            sync()
            t0 = time.perf_counter()
            model(x)
            sync()
            times.append((time.perf_counter() - t0) / batch)
    return spread(times)


def time_strata(binary, onnx_path, ncpu, arrays, ranks, extent, rounds, mpiexec, home, **env_extra):
    env = dict(os.environ, STARPU_NCPU=str(ncpu), STARPU_SILENT="1", STARPU_WORKERS_NOBIND="1",
               STARPU_HOME=home, OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_hwloc_base_binding_policy="none",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **env_extra)
    cmd = [binary, onnx_path, "--extent", str(extent), "--arrays", str(arrays),
           "--rounds", str(rounds)]
    if ranks > 1:
        cmd = [mpiexec, "-n", str(ranks)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    report = json.loads(out[out.index("{"):])
    per_array = ranks * arrays
    return {"median": report["round_seconds_median"] / per_array,
            "min": report["round_seconds_min"] / per_array,
            "max": report["round_seconds_max"] / per_array,
            "page_faults": report.get("page_faults")}


def cuda_rows(args, model, path, tmp):
    """PyTorch and Strata on the GPU (--device cuda)."""
    torch.backends.cudnn.benchmark = True
    gpu = model.cuda()
    torch_forms = {}
    for precision, tf32 in (("default", True), ("float32", False)):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for b in sorted({1, args.arrays}):
            torch_forms[f"{precision}_batch{b}"] = time_torch(gpu, 1, b, args.extent, args.rounds,
                                                              "cuda")
    fastest_fp32 = min(t["median"] for f, t in torch_forms.items() if f.startswith("float32"))
    fastest = min(t["median"] for t in torch_forms.values())
    rows = []
    # (STRATA_CUDNN, STRATA_CUDNN_TF32, arrays in flight, StarPU workers on the GPU)
    for cudnn, tf32, arrays, workers in (("1", "0", 1, 1), ("1", "0", args.arrays, 1),
                                         ("1", "0", args.arrays, args.arrays),
                                         ("1", "1", args.arrays, args.arrays),
                                         ("0", "0", 1, 1), ("0", "0", args.arrays, args.arrays)):
        strata = time_strata(args.binary, path, 0, arrays, 1, args.extent, args.rounds,
                             args.mpiexec, f"{tmp}/starpu-cuda", STARPU_NCUDA="1",
                             STARPU_NWORKER_PER_CUDA=str(workers), STRATA_CUDNN=cudnn,
                             STRATA_CUDNN_TF32=tf32)
        rows.append({"strata": f"{workers} CUDA worker(s) on the GPU, {arrays} array(s) in flight, "
                     f"STRATA_CUDNN={cudnn} STRATA_CUDNN_TF32={tf32}",
                     "strata_seconds_per_array": strata,
                     "torch_seconds_per_array": torch_forms,
                     "speedup_vs_torch_float32": fastest_fp32 / strata["median"],
                     "speedup_vs_torch_default": fastest / strata["median"]})
    return rows


def cpu_rows(args, model, path, example, tmp):
    """PyTorch and Strata on the CPU, at 1 and 2 threads and on 2 ranks."""
    optimized = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, example)))
    rows = []
    for threads in (1, 2):
        batches = (1, 2) if threads == 2 else (1,)
        torch_forms = {f"{name}_batch{b}": time_torch(m, threads, b, args.extent, args.rounds)
                       for name, m in (("eager", model), ("optimized", optimized))
                       for b in batches}
        best_form = min(torch_forms, key=lambda f: torch_forms[f]["median"])
        configs = [("workers", threads, threads, 1)]
        if threads == 2:
            configs.append(("ranks", 1, 1, 2))
        for form, ncpu, arrays, ranks in configs:
            strata = time_strata(args.binary, path, ncpu, arrays, ranks, args.extent,
                                 args.rounds, args.mpiexec, f"{tmp}/starpu-{form}-{threads}")
            rows.append({"threads": threads, "strata": f"{ranks} rank(s) x {ncpu} worker(s), "
                         f"{ranks * arrays} array(s) in flight",
                         "strata_seconds_per_array": strata,
                         "torch_seconds_per_array": torch_forms,
                         "torch_best": best_form,
                         "speedup_vs_torch": torch_forms[best_form]["median"] /
                         strata["median"]})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--model", help="a shipped model instead of the exported U-Net: Strata JSON, "
                    "or the trained U-Net's .onnx")
    ap.add_argument("--extent", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--arrays", type=int, default=4, help="arrays in flight (--device cuda)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"benchmark": "model_vs_torch", "skipped": "no CUDA device"}))
        sys.exit(77)
    torch.manual_seed(1)
    if args.model:
        model = trained_unet(args.model) if args.model.endswith(".onnx") else JsonNet(args.model)
    else:
        model = UNet3D()
    model.eval()
    example = torch.rand(1, 1, 16, 16, 16) + 0.5
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or f"{tmp}/unet3d.onnx"
        if not args.model:
            export_onnx(model, example, path)
        rows = (cuda_rows(args, model, path, tmp) if args.device == "cuda" else
                cpu_rows(args, model, path, example, tmp))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"benchmark": "model_vs_torch",
                      "model": args.model or "UNet3D(8-16-32), ONNX opset 13",
                      "device": args.device if args.device == "cpu" else
                      torch.cuda.get_device_name(),
                      "extent": args.extent, "rounds": args.rounds,
                      "torch": torch.__version__, "rows": rows,
                      "page_faults_torch_process": {"minor": usage.ru_minflt,
                                                    "major": usage.ru_majflt},
                      "load_average": os.getloadavg(),
                      "damon_threads_running": damon_threads_running()}, indent=1))


if __name__ == "__main__":
    main()
