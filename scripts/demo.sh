#!/usr/bin/env bash
# Install what is missing, build, and run Strata's main job on 2 MPI ranks:
# `strata infer`, inference arrays on the AMR cosmology test problem
# (Enzo-E's inference test sizes), three cycles, with a slice picture, the
# hierarchy in HDF5 and the bubbles as text.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
build=${STRATA_BUILD_DIR:-build}
# Debian's StarPU, or StarPU with CUDA where a GPU is (scripts/starpu-select.sh).
eval "$(bash scripts/starpu-select.sh --env)"
cmake -S . -B "$build" -DSTRATA_STARPU_SERIES="$STRATA_STARPU_SERIES" >/dev/null
cmake --build "$build" -j "$(nproc)"
. scripts/env.sh
export STARPU_NCPU=${STARPU_NCPU:-1}
out=$root/$build/demo
mkdir -p "$out"
mpiexec -n 2 "$build/tools/strata" infer --cycles 3 --png "$out/infer.png" \
  --hdf5 "$out/infer.h5" --bubbles "$out/bubbles.txt"
"$build/tools/strata" amr-info "$out/infer.h5" | head -20
echo "demo: outputs in $out (infer.png: log density slice with leaf outlines," \
  "inference arrays and bubbles; infer.h5: density and star_forming fields;" \
  "bubbles.txt: element x y z radius mass peak cells)"
