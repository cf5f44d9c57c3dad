#!/usr/bin/env bash
# On a GPU machine, from a copy of the repository that holds .device/ (made here
# by scripts/gpu-bundle.sh): the gpu-labelled tests, cuDNN's per-mode counts,
# the model benchmark against PyTorch on the GPU at 64^3 and 128^3, then the
# model, ONNX and inference tests with CUDA workers for what time is left.
# Logs and JSON go to OUT_DIR (default gpu-checks/).
#   bash scripts/gpu-checks.sh [OUT_DIR] [SECONDS for the whole run, default 330]
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-gpu-checks}" && cd "${1:-gpu-checks}" && pwd)
budget=${2:-330}
exec > >(tee "$out/log.txt") 2>&1
t0=$(date +%s)
stamp() { echo "=== $(($(date +%s) - t0)) s: $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
# The tests call /usr/bin/python3; PyTorch may live in another environment.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  PYTHONPATH=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
  export PYTHONPATH
fi
cd "$repo" || exit 1
stamp "gpu tests"
timeout 200 bash .device/run.sh -L gpu --output-on-failure --timeout 150 -j 4
eval "$(grep -E '^(lib_dir|export LD_LIBRARY_PATH)' .device/run.sh)"
cd "$repo/build-gpu" || exit 1
tests/test_model_cuda 2>&1 | grep -E 'by cuDNN|check failed'
stamp "model against PyTorch on the GPU"
for e in 64 128; do
  timeout 150 python3 "$repo/bench/model_vs_torch.py" bench/bench_model_throughput --device cuda \
    --extent "$e" --rounds 7 --arrays 4 >"$out/model_vs_torch_cuda_$e.json"
  echo "extent $e: exit $?"
done
left=$((budget - $(date +%s) + t0))
stamp "model, ONNX and inference tests with CUDA workers ($left s left)"
if [ "$left" -gt 40 ]; then
  timeout "$left" ctest -R 'onnx|model|infer' -E 'emulated|trace' --output-on-failure --timeout 150 -j 6
fi
stamp "done"
