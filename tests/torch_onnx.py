"""torch.onnx.export through the TorchScript exporter, for the tests and
bench/model_vs_torch.py: the one Debian's PyTorch 1.13 has, whose opsets
(11-17) the tests name. PyTorch 2.9 and later default to the torch.export
one, which writes opset 18 and fails on some of the tests' dynamic shapes
(seen with PyTorch 2.11)."""
import torch


def export(*args, **kw):
    try:
        return torch.onnx.export(*args, dynamo=False, **kw)
    except TypeError as e:  # before PyTorch 2.5: one exporter, no such argument
        if "dynamo" not in str(e):
            raise
        return torch.onnx.export(*args, **kw)
