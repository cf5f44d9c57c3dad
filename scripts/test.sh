#!/usr/bin/env bash
# Install what is missing, build, and run the whole CTest suite.
#   scripts/test.sh [ctest arguments...]              e.g. scripts/test.sh -L unit
#   scripts/test.sh --sanitize [ctest arguments...]   AddressSanitizer + UBSan build
#   scripts/test.sh --valgrind [ctest arguments...]   single-process tests under memcheck
#   scripts/test.sh --starpu 1.3|1.4 [ctest arguments...]
#       against StarPU built from Debian's sources with FxT (and CUDA when
#       nvcc exists) by scripts/build-starpu.sh; the tracing tests run too
# STRATA_BUILD_DIR chooses the build directory (default: build, build-sanitize,
# build-valgrind or build-starpu-<series>).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
leg=plain
case "${1:-}" in
  --sanitize) leg=sanitize; shift ;;
  --valgrind) leg=valgrind; shift ;;
  --starpu) leg=starpu; series=${2:?--starpu needs a series, 1.3 or 1.4}; shift 2 ;;
esac
bash scripts/setup.sh
# Every leg sets all of the leg options, so a build directory that served
# another leg is reconfigured back (the last -D of a name wins).
config=(-DSTRATA_WERROR=ON -DSTRATA_SANITIZE= -DSTRATA_TEST_LAUNCHER= -DSTRATA_TEST_TIMEOUT_SCALE=1
        -DSTRATA_STARPU_SERIES= -DSTRATA_CUDA=AUTO)
select=()
case $leg in
  plain)
    build=${STRATA_BUILD_DIR:-build}
    # Debian's StarPU, or the CUDA one where a GPU is (scripts/starpu-select.sh).
    eval "$(bash scripts/starpu-select.sh --env)"
    config+=(-DSTRATA_STARPU_SERIES="$STRATA_STARPU_SERIES")
    ;;
  sanitize)
    build=${STRATA_BUILD_DIR:-build-sanitize}
    # Without nvcc: CUDA host code is not instrumented, and the CUDA kernels
    # are checked by their emulated tests, which need no nvcc (this is also
    # CI's build without nvcc).
    config+=(-DSTRATA_SANITIZE=address,undefined -DSTRATA_TEST_TIMEOUT_SCALE=3 -DSTRATA_CUDA=OFF)
    source scripts/sanitizer-env.sh
    # The installed-tree test builds a consumer without the sanitizer runtime;
    # the soak tests read the heap, which the sanitizer's allocator replaces;
    # variants repeat covered paths; Python that loads libstrata through
    # ctypes cannot put the sanitizer runtime first (tests/CMakeLists.txt);
    # the benchmarks' smoke runs are left to the plain leg.
    excluded="install|soak|variant|simulate|ctypes|bench"
    select=(-LE "$excluded")
    ;;
  valgrind)
    build=${STRATA_BUILD_DIR:-build-valgrind}
    config+=("-DSTRATA_TEST_LAUNCHER=valgrind;--quiet;--error-exitcode=99;--fair-sched=yes;--leak-check=full;--errors-for-leak-kinds=definite;--num-callers=40;--suppressions=$root/tests/sanitizers/valgrind.supp"
             -DSTRATA_TEST_TIMEOUT_SCALE=20)
    # Single-process tests only: not the installed-tree, formatting, benchmark
    # or soak runs (50 cycles of strata infer would take hours under memcheck).
    select=(-L single -LE "install|style|bench|soak")
    ;;
  starpu)
    build=${STRATA_BUILD_DIR:-build-starpu-$series}
    eval "$(bash scripts/build-starpu.sh "$series" | tail -n 3)"
    config+=(-DSTRATA_STARPU_SERIES="$series")
    # What depends on the StarPU: the unit, MPI, tool and tracing tests.
    # The plain leg runs the rest: the variants (schedulers, rank counts),
    # the benchmarks' smoke runs, the soaks and the simulation (its own
    # build, against the SimGrid StarPU): 633 of the 1331 test seconds of
    # this leg on a 2-core AMD EPYC VM (2026-12-05).
    select=(-LE "variant|bench|soak|simulate")
    ;;
esac
jobs=$(nproc)
cmake -S . -B "$build" "${config[@]}"
cmake --build "$build" -j "$jobs"
cd "$build"
if [ $leg = sanitize ]; then
  # LeakSanitizer needs whole stacks at every allocation to match the
  # suppressions (fast_unwind_on_malloc=0, scripts/sanitizer-env.sh), which
  # makes an instrumented run 2.2-2.7 times slower. So leaks are checked in
  # the single-process tests; the multi-process tests, which run the same
  # code on more ranks, keep ASan and UBSan with fast stacks and no leak
  # check. On a 2-core AMD EPYC VM the tests took 1650 s in one pass, then
  # 347 s with leaks checked and 306 s with fast stacks (2026-12-05).
  status=0
  ctest --output-on-failure -j "$jobs" -L single -LE "$excluded" "$@" || status=$?
  ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=1:detect_leaks=0 \
    ctest --output-on-failure -j "$jobs" -LE "single|$excluded" "$@" || status=$?
  exit $status
fi
ctest --output-on-failure -j "$jobs" "${select[@]}" "$@"
