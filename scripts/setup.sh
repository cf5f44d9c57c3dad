#!/usr/bin/env bash
# Install the Debian packages Strata needs; packages already present are
# left alone, and nothing is downloaded when everything is there. Where a
# GPU and nvcc are, also build the CUDA StarPU the default build then uses.
set -euo pipefail

packages=(
  # build tools
  gcc g++ make cmake pkg-config git clang-format
  # reliability legs: libFuzzer and sanitizer runtimes (clang), memcheck
  clang libclang-rt-14-dev valgrind
  # runtime: StarPU with StarPU-MPI, Open MPI, hwloc
  libstarpu-dev libstarpumpi-1.3-3 starpu-tools
  libopenmpi-dev openmpi-bin libhwloc-dev hwloc
  # JSON (model files, benchmark output), dense math; ONNX import (protobuf-c over
  # onnx.proto), and PyTorch + onnx for the parity tests and the training script
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-torch python3-onnx
  libcjson-dev libopenblas-dev
  # the CPU convolutions of models (oneDNN, measured faster than im2col + OpenBLAS)
  libdnnl-dev
  # numexpr, the baseline of fused elementwise chains (bench/fusion_vs_numexpr.py)
  python3-numexpr
  # spectra of the cosmology test problem, AMR field output (serial HDF5 for the
  # SimGrid build and -DSTRATA_PARALLEL_HDF5=OFF, Open MPI's parallel HDF5 for
  # files that every rank writes)
  libfftw3-dev libhdf5-dev libhdf5-openmpi-dev
  # p4est: the structure of Strata's octree (amr/forest.c), and an external AMR
  # mesh in the p4est example (examples/p4est_infer.c)
  libp4est-dev
  # pictures: the PNG slices of strata infer
  libcairo2-dev
  # rendering of exported graphs (strata graph dot | dot -Tsvg)
  graphviz
  # Python 3 for scripts/make_blob_model.py; h5py reads the AMR files in tests
  python3 python3-h5py
  # traces and tuning: StarPU's sources are built with FxT by
  # scripts/build-starpu.sh; pajeng checks traces, ViTE shows them (headless
  # under Xvfb for screenshots: xwd + netpbm), gnuplot plots sweeps
  dpkg-dev libfxt-dev pajeng vite xvfb xauth x11-apps netpbm gnuplot-nox librsvg2-bin
  # simulated clusters: StarPU on SimGrid with SMPI (scripts/simulate.sh)
  libsimgrid-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Where a GPU is, the default build uses StarPU 1.4 with CUDA, built once
# into a cached prefix (scripts/starpu-select.sh says why, either way).
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$(bash "$scripts/starpu-select.sh")" = cuda ]; then
  bash "$scripts/build-starpu.sh" 1.4 >/dev/null
fi
# The SimGrid StarPU of scripts/simulate.sh and the `simulate` tests (about
# two minutes, once).
bash "$scripts/build-starpu.sh" --simgrid >/dev/null
