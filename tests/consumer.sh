#!/usr/bin/env bash
# Install Strata from a build tree into a scratch prefix, then build the
# out-of-tree consumer example with CMake and with its pkg-config Makefile,
# and run both.  usage: consumer.sh BUILD_DIR CONSUMER_SRC WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "== CMake: find_package(Strata)"
cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer"

echo "== Makefile: pkg-config strata"
mkdir -p "$work/make"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} make -s -C "$src" BUILD="$work/make"
"$work/make/consumer"

echo "== installed tool"
"$prefix/bin/strata" --version
