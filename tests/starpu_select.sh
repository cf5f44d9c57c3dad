#!/usr/bin/env bash
# scripts/starpu-select.sh with the GPU probe faked: a fake nvidia-smi that
# lists a GPU or none, a fake nvcc or none, and STRATA_STARPU overrides.
set -uo pipefail
select=$1
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/gpu" "$fake/nogpu" "$fake/nvcc" "$fake/none"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\necho "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)"\n' >"$fake/gpu/nvidia-smi"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$fake/nogpu/nvidia-smi"
printf '#!/bin/sh\nexit 0\n' >"$fake/nvcc/nvcc"
chmod +x "$fake"/*/*
# The few tools the script runs, and nothing else of the system: a GPU node's
# own nvidia-smi or nvcc must not leak into the cases.
mkdir -p "$fake/base"
for tool in bash grep dirname; do ln -s "$(command -v $tool)" "$fake/base/$tool"; done
failures=0
# expect WANT REASON-PATTERN DIRS... [-- VAR=VALUE...]: the choice with only
# the fake directories (and the base tools) on the PATH.
expect() {
  local want=$1 pattern=$2 path="" env=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do path+="$fake/$1:"; shift; done
  [ $# -gt 0 ] && shift && env=("$@")
  local got err
  err=$(mktemp)
  got=$(env -i PATH="${path}$fake/base" CUDA_HOME="$fake/none" "${env[@]}" bash "$select" 2>"$err")
  if [ "$got" != "$want" ] || ! grep -q -- "$pattern" "$err"; then
    echo "FAIL: dirs/env '$path ${env[*]}': got '$got' ($(cat "$err")), want '$want' and /$pattern/"
    failures=$((failures + 1))
  fi
  rm -f "$err"
}
expect cuda "lists 2 GPU(s), nvcc is $fake/nvcc/nvcc" gpu nvcc
expect debian "no GPU listed" nogpu nvcc
expect debian "no GPU listed" nvcc
expect debian "but there is no nvcc" gpu
expect debian "(STRATA_STARPU)" gpu nvcc -- STRATA_STARPU=debian
expect cuda "(STRATA_STARPU)" nvcc -- STRATA_STARPU=cuda
# nvcc found under CUDA_HOME when it is not on the PATH
mkdir -p "$fake/home/bin" && cp "$fake/nvcc/nvcc" "$fake/home/bin/"
expect cuda "nvcc is $fake/home/bin/nvcc" gpu -- CUDA_HOME="$fake/home"
# --nvcc, which build-starpu.sh asks: the same lookup
got=$(env -i PATH="$fake/nvcc:$fake/base" CUDA_HOME="$fake/none" bash "$select" --nvcc)
none=$(env -i PATH="$fake/base" CUDA_HOME="$fake/none" bash "$select" --nvcc)
if [ "$got" != "$fake/nvcc/nvcc" ] || [ -n "$none" ]; then
  echo "FAIL: --nvcc gave '$got' and, without nvcc, '$none'"
  failures=$((failures + 1))
fi
# a bad value is refused, with the values it takes
out=$(env -i PATH="$fake/base" STRATA_STARPU=gpu bash "$select" 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! grep -q "use debian or cuda" <<<"$out"; then
  echo "FAIL: STRATA_STARPU=gpu gave $rc: $out"
  failures=$((failures + 1))
fi
# The prefix build-starpu.sh builds into and prints for its users: CUDA
# where nvcc is, neither CUDA nor SimGrid without it (a case that once ended
# the script silently under set -e), SimGrid without CUDA.
build=$(dirname "$select")/build-starpu.sh
prefix() { # DIRS-ON-PATH VAR=VALUE... -- ARGS...
  local path="$fake/$1:$fake/base" env=()
  shift
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  env -i PATH="$path" HOME="$fake/h" CUDA_HOME="$fake/none" "${env[@]}" bash "$build" --prefix "$@"
}
for case in "nvcc 1.4 starpu-1.4-cuda" "none 1.4 starpu-1.4" "nvcc --simgrid starpu-1.4-simgrid" \
            "none 1.3 starpu-1.3"; do
  read -r dirs series want <<<"$case"
  got=$(prefix "$dirs" -- "$series")
  if [ $? -ne 0 ] || [ "$got" != "$fake/h/.cache/strata/$want" ]; then
    echo "FAIL: build-starpu.sh --prefix $series with $dirs: '$got', want .../$want"
    failures=$((failures + 1))
  fi
done
got=$(prefix nvcc STRATA_STARPU_CUDA=OFF -- 1.4)
[ "$got" = "$fake/h/.cache/strata/starpu-1.4" ] ||
  { echo "FAIL: STRATA_STARPU_CUDA=OFF gave '$got'"; failures=$((failures + 1)); }
[ $failures -eq 0 ] && echo "starpu selection: all cases pass"
exit $((failures > 0))
