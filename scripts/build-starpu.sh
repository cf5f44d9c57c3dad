#!/usr/bin/env bash
# Build StarPU from Debian's source packages with FxT traces, MPI and, when
# nvcc exists, CUDA, into a prefix under the user's cache.
#   scripts/build-starpu.sh [1.3|1.4]          (default 1.4)
#   scripts/build-starpu.sh --simgrid          StarPU 1.4 in SimGrid mode, with
#                                              StarPU-MPI over SMPI (static only:
#                                              SimGrid's MPI cannot load shared
#                                              libraries), and p4est for it, for
#                                              scripts/simulate.sh
#   scripts/build-starpu.sh --prefix [...]     only print the prefix that build
#                                              uses (tests/starpu_select.sh)
# Prints the environment to use on its last lines (eval-able):
#   eval "$(scripts/build-starpu.sh 1.4 | tail -n 3)"
# A finished build is reused: its prefix holds a stamp naming the source
# version, the patches and the configure flags; change any and it rebuilds.
# STRATA_STARPU_CUDA=OFF builds without CUDA even when nvcc is present.
# STRATA_STARPU_CONFIGURE adds configure flags (e.g. --enable-blocking-drivers).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
print_prefix=no
if [ "${1:-}" = --prefix ]; then
  print_prefix=yes
  shift
fi
simgrid=OFF
if [ "${1:-}" = --simgrid ]; then
  simgrid=ON
  set -- 1.4
fi
series=${1:-1.4}
case $series in
  1.3 | 1.4) ;;
  *) echo "usage: $0 [--prefix] [1.3|1.4|--simgrid]" >&2; exit 2 ;;
esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/strata
log() { echo "build-starpu: $*" >&2; }

cuda=OFF
nvcc=$(bash "$root/scripts/starpu-select.sh" --nvcc)
if [ -n "$nvcc" ] && [ "${STRATA_STARPU_CUDA:-AUTO}" != OFF ] && [ $simgrid = OFF ]; then
  cuda=ON
  cuda_dir=$(cd "$(dirname "$nvcc")/.." && pwd)
fi
# (An assignment takes its last command substitution's status, so the
# suffixes are spelled out instead of `$([ ... ] && echo ...)`.)
suffix=
[ $cuda = ON ] && suffix=-cuda
[ $simgrid = ON ] && suffix=-simgrid
prefix=$cache/starpu-$series$suffix
if [ $print_prefix = yes ]; then
  echo "$prefix"
  exit 0
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)

# Debian's sources: bookworm carries 1.3, sid the 1.4 series.
source_list=/etc/apt/sources.list.d/strata-starpu-src.sources
if [ ! -f "$source_list" ]; then
  log "adding deb-src entries for bookworm and sid ($source_list)"
  printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" "Suites: bookworm sid" \
    "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
    "${sudo[@]}" tee "$source_list" >/dev/null
  "${sudo[@]}" apt-get update -qq
fi
source_version() {
  apt-cache showsrc starpu 2>/dev/null | sed -n 's/^Version: //p' | grep "^$series\." | sort -V | tail -n 1
}
version=$(source_version || true)
if [ -z "$version" ]; then # the entries exist but the lists are stale or gone
  "${sudo[@]}" apt-get update -qq
  version=$(source_version || true)
fi
if [ -z "$version" ]; then
  log "no StarPU $series source package in the apt sources"
  exit 1
fi

flags=(--enable-maxcpus=64 --enable-mpi
       --disable-fortran --disable-socl --disable-starpurm --disable-starpufft
       --disable-build-doc --disable-build-examples --disable-build-tests
       --disable-opencl --disable-openmp)
[ "$series" = 1.4 ] && flags+=(--disable-starpupy)
# A simulated node's CUDA workers come from its platform file, not from a
# CUDA driver; FxT traces of a simulation are not needed. A simulation holds
# every rank's data handles at once, and each has a slot per memory node
# StarPU is built for: 8 (a node's RAM and up to 4 GPUs, with room) instead
# of the default 32 took a handle from 18.7 KiB to a few, and 16 simulated
# ranks of bench_infer_weak from 479 to 201 MiB (docs/scaling.md).
if [ $simgrid = ON ]; then
  flags+=(--enable-simgrid --disable-shared --enable-maxnodes=8)
else
  flags+=(--with-fxt)
fi
# Patches: scripts/patches/starpu-SERIES for CUDA, -simgrid for a simulation.
patches=()
if [ $simgrid = ON ]; then
  mapfile -t patches < <(ls "$root/scripts/patches/starpu-$series-simgrid"/*.patch 2>/dev/null | sort)
fi
if [ $cuda = ON ]; then
  flags+=(--enable-cuda "--with-cuda-dir=$cuda_dir")
  mapfile -t patches < <(ls "$root/scripts/patches/starpu-$series"/*.patch 2>/dev/null | sort)
else
  flags+=(--disable-cuda)
fi
# shellcheck disable=SC2206
flags+=(${STRATA_STARPU_CONFIGURE:-})

stamp_text=$(printf '%s\n' "$version" "${flags[@]}"; cat "${patches[@]}" /dev/null | sha256sum)
if [ -f "$prefix/.strata-stamp" ] && [ "$(cat "$prefix/.strata-stamp")" = "$stamp_text" ]; then
  log "reusing StarPU $version in $prefix"
else
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    dpkg-dev libfxt-dev libhwloc-dev libopenmpi-dev pkg-config >/dev/null
  if [ $simgrid = ON ]; then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends libsimgrid-dev >/dev/null
  fi
  src=$cache/src/starpu-$version
  rm -rf "$src" "$prefix"
  mkdir -p "$src"
  log "fetching the source of StarPU $version"
  (cd "$src" && apt-get source -qq "starpu=$version" >/dev/null 2>&1)
  tree=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'starpu-*' | head -n 1)
  for p in "${patches[@]}"; do
    log "applying $(basename "$p")"
    patch -d "$tree" -p1 -s <"$p"
  done
  log "configuring (${flags[*]})"
  mkdir -p "$tree/build"
  (cd "$tree/build" && ../configure -q --prefix="$prefix" "${flags[@]}" >../configure.out 2>&1) ||
    { tail -n 30 "$tree/configure.out" >&2; exit 1; }
  log "building on $(nproc) cores (a few minutes)"
  make -C "$tree/build" -s -j "$(nproc)" >"$tree/make.out" 2>&1 || { grep -m 20 -B 2 -A 8 'error' "$tree/make.out" >&2; exit 1; }
  make -C "$tree/build" -s install >>"$tree/make.out" 2>&1
  printf '%s\n' "$stamp_text" >"$prefix/.strata-stamp"
  rm -rf "$src"
  log "installed StarPU $version in $prefix"
fi
# The simulation's p4est, in the same prefix: Debian's libp4est calls Open
# MPI, whose handles SMPI refuses (MPI_ERR_TYPE), and a simulated rank's
# main thread must call Strata's simulated MPI (core/internal/simgrid_mpi.h)
# anyway. So p4est is built from Debian's source of the installed version
# with smpicc and that header forced in, static, its two libraries only (its
# own programs cannot link without Strata). About four minutes, once.
if [ $simgrid = ON ]; then
  p4est_version=$(dpkg-query -W -f='${Version}' libp4est-dev 2>/dev/null || true)
  header=$root/core/internal/simgrid_mpi.h
  p4est_stamp=$(printf '%s\n' "$p4est_version"; sha256sum <"$header")
  if [ -z "$p4est_version" ]; then
    log "libp4est-dev is not installed: the simulation has no p4est"
  elif [ -f "$prefix/.strata-p4est-stamp" ] && [ "$(cat "$prefix/.strata-p4est-stamp")" = "$p4est_stamp" ]; then
    log "reusing p4est $p4est_version in $prefix"
  else
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      autoconf automake libtool zlib1g-dev >/dev/null
    src=$cache/src/p4est-$p4est_version
    rm -rf "$src"
    mkdir -p "$src"
    log "fetching the source of p4est $p4est_version"
    (cd "$src" && apt-get source -qq "p4est=$p4est_version" >/dev/null 2>&1)
    tree=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'p4est-*' | head -n 1)
    echo "${p4est_version%%-*}" | tee "$tree/.tarball-version" >"$tree/sc/.tarball-version"
    (cd "$tree" && ./bootstrap >bootstrap.out 2>&1) || { tail -n 20 "$tree/bootstrap.out" >&2; exit 1; }
    # configure cannot run an SMPI program: what it would learn by running
    # one is given.
    log "configuring p4est for the simulation"
    (cd "$tree" && ./configure -q CC=smpicc --enable-mpi --disable-shared --without-blas \
      --prefix="$prefix" ac_cv_sizeof_void_p=8 ac_cv_sizeof_int=4 ac_cv_func_aligned_alloc=yes \
      ac_cv_func_posix_memalign=yes ac_cv_func_fsync=yes >configure.out 2>&1) ||
      { tail -n 30 "$tree/configure.out" >&2; exit 1; }
    # A simulated rank is a node of its own: no shared-memory communicators
    # (sc_init would split and label them, which the simulated MPI has not).
    sed -i 's@^#define SC_ENABLE_MPI\(COMM\|WIN\)SHARED 1$@/* no shared memory between simulated ranks */@' \
      "$tree/sc/src/sc_config.h"
    cflags="-O2 -DSMPI_NO_OVERRIDE_MALLOC -include $header"
    log "building p4est for the simulation"
    { make -C "$tree/sc" -j "$(nproc)" CFLAGS="$cflags" src/libsc.la &&
      make -C "$tree" -j "$(nproc)" CFLAGS="$cflags" src/libp4est.la &&
      make -C "$tree/sc" CFLAGS="$cflags" install-libLTLIBRARIES install-includeHEADERS \
        install-nodist_includeHEADERS install-scbuiltinHEADERS &&
      make -C "$tree" CFLAGS="$cflags" install-libLTLIBRARIES install-includeHEADERS \
        install-nodist_includeHEADERS
    } >"$tree/make.out" 2>&1 || { grep -m 20 -B 2 -A 8 'rror' "$tree/make.out" >&2; exit 1; }
    # Both libraries call the simulated MPI (a rebuild without the header
    # would call SMPI from the main thread, which fails at run time).
    for lib in sc p4est; do
      nm -u "$prefix/lib/lib$lib.a" | grep strata__sim_comm_rank >/dev/null ||
        { log "lib$lib.a was built without $header"; exit 1; }
    done
    printf '%s\n' "$p4est_stamp" >"$prefix/.strata-p4est-stamp"
    rm -rf "$src"
    log "installed p4est $p4est_version in $prefix"
  fi
fi
echo "export PKG_CONFIG_PATH=$prefix/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
echo "export LD_LIBRARY_PATH=$prefix/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
echo "export PATH=$prefix/bin:\$PATH"
