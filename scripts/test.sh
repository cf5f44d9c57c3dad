#!/usr/bin/env bash
# Install what is missing, build, and run the whole CTest suite.
#   scripts/test.sh [ctest arguments...]     e.g. scripts/test.sh -L unit
# STRATA_BUILD_DIR chooses the build directory (default: build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
build=${STRATA_BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DSTRATA_WERROR=ON
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" "$@"
