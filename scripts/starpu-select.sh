#!/usr/bin/env bash
# Which StarPU the default build uses: Debian's (no CUDA), or StarPU 1.4
# with CUDA and FxT built by scripts/build-starpu.sh, where a GPU is.
#   scripts/starpu-select.sh          prints debian or cuda
#   scripts/starpu-select.sh --env    prints the environment for that choice
#                                     (eval-able; builds the CUDA StarPU on
#                                     first use), then STRATA_STARPU_SERIES
#   scripts/starpu-select.sh --nvcc   prints the nvcc it would use, or nothing
#                                     (scripts/build-starpu.sh asks it)
# The choice, with its reason, goes to stderr:
#   STRATA_STARPU=debian|cuda   the user's choice, taken as it is;
#   otherwise cuda when `nvidia-smi -L` lists a GPU and nvcc exists (on the
#   PATH, else $CUDA_HOME/bin, CUDA_HOME defaulting to /usr/local/cuda),
#   and debian when either is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "starpu-select: $*" >&2; }

find_nvcc() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
  echo "$nvcc"
}

choose() {
  case ${STRATA_STARPU:-} in
    debian | cuda)
      log "${STRATA_STARPU} (STRATA_STARPU)"
      echo "$STRATA_STARPU"
      return
      ;;
    "") ;;
    *)
      log "STRATA_STARPU=$STRATA_STARPU: use debian or cuda"
      exit 2
      ;;
  esac
  local gpus=0 nvcc
  if command -v nvidia-smi >/dev/null; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]' || true)
  fi
  nvcc=$(find_nvcc)
  if [ "$gpus" -gt 0 ] && [ -n "$nvcc" ]; then
    log "cuda (nvidia-smi lists $gpus GPU(s), nvcc is $nvcc; STRATA_STARPU=debian overrides)"
    echo cuda
  elif [ "$gpus" -gt 0 ]; then
    log "debian (nvidia-smi lists $gpus GPU(s) but there is no nvcc to build StarPU's CUDA driver)"
    echo debian
  else
    log "debian (no GPU listed by nvidia-smi; STRATA_STARPU=cuda overrides)"
    echo debian
  fi
}

if [ "${1:-}" = --nvcc ]; then
  find_nvcc
  exit 0
fi
choice=$(choose)
case ${1:-} in
  "") echo "$choice" ;;
  --env)
    if [ "$choice" = cuda ]; then
      bash "$root/scripts/build-starpu.sh" 1.4 | tail -n 3
      echo "STRATA_STARPU_SERIES=1.4"
    else
      echo "STRATA_STARPU_SERIES="
    fi
    ;;
  *)
    echo "usage: $0 [--env | --nvcc]" >&2
    exit 2
    ;;
esac
