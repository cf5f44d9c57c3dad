"""Regenerates this folder: onnx_parity.py's models exported by the
default exporter of PyTorch 2.9 and later (torch.export-based, dynamo=True)
at opsets 18 and 21, what users of current PyTorch get. Needs such a
PyTorch (these were made with 2.11), so it is not run by the tests:
onnx_parity.py loads each file's weights into the same model class and
compares Strata against PyTorch 1.13 there.

usage: python3 export.py   (from this folder)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import onnx_parity as P  # noqa: E402

P.torch_onnx.export = lambda *a, **kw: P.torch.onnx.export(*a, dynamo=True, **kw)
for name, (cls, channels, outputs, extent) in P.TORCH2_MODELS.items():
    for opset in (18, 21):
        P.export(cls(), channels, f"{name}_dyn{opset}.onnx", opset, outputs, extent=extent)
