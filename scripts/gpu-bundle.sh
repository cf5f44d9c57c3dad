#!/usr/bin/env bash
# Build Strata against StarPU with CUDA (scripts/build-starpu.sh; series 1.3
# or 1.4, the first argument, default 1.3) for sm_90 in build-gpu, and pack it for a GPU machine that has the CUDA
# toolkit and driver but not Debian's packages: .device/build.tar.xz (the
# build tree), .device/sys.tar.xz (StarPU, Open MPI with its plugins and
# every shared library the programs load, outside glibc and CUDA) and
# .device/run.sh. There, from a copy of the repository:
#   bash .device/run.sh [ctest arguments...]
# unpacks both (system files only where none exist), puts the tree at
# /work/main, where the build expects it, and runs ctest in build-gpu.
# cuDNN is not packed (its engines are over 300 MB): run.sh takes the GPU
# machine's (PyTorch's wheel carries one).
# How the gpu-labelled tests and bench_amr_cuda were run on an H200
# (docs/reliability.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[ "$root" = /work/main ] || { echo "gpu-bundle: the build must live in /work/main" >&2; exit 1; }
series=${1:-1.3}
eval "$(bash scripts/build-starpu.sh "$series" | tail -n 3)"
cmake -S . -B build-gpu -DSTRATA_WERROR=ON -DSTRATA_STARPU_SERIES="$series" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build-gpu -j "$(nproc)" >/dev/null
starpu=$(pkg-config --variable=prefix "starpu-$series")
out=.device stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$out"
mkdir -p "$out" "$stage/root"
ompi=/usr/lib/x86_64-linux-gnu/openmpi pmix=/usr/lib/x86_64-linux-gnu/pmix2
is_elf() { file -L "$1" | grep -q ELF; }
programs=$({ find build-gpu -type f \( -executable -o -name '*.so*' \); ls "$starpu"/lib/*.so* "$starpu"/bin/*;
             find "$ompi" "$pmix" -name '*.so*'; ls /usr/bin/orterun /usr/bin/orted; } |
           sort -u | while read -r f; do if is_elf "$f"; then echo "$f"; fi; done)
# glibc, the C++ runtime and CUDA's libraries come from the GPU machine.
theirs='linux-vdso|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s|libcuda|libcublas|libcudart|libcusparse|libcusolver|libnvJitLink|libcudnn'
for f in $programs; do ldd "$f" 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $3}'; done |
  sort -u | grep -Ev "$theirs" | grep -v "^$root" >"$stage/libs"
{ cat "$stage/libs"; echo "$programs" | grep -v '^build-gpu'
  printf '%s\n' "$ompi" "$pmix" /usr/share/openmpi /etc/openmpi /usr/bin/mpiexec /usr/bin/mpirun "$starpu"; } |
  sort -u | while read -r p; do if [ -e "$p" ]; then cp -rL --parents "$p" "$stage/root/"; fi; done
find "$stage/root" \( -name '*.a' -o -name '*.la' -o -name include \) -prune -exec rm -rf {} +
find "$stage/root" -type f | while read -r f; do
  if file "$f" | grep -q 'ELF.*not stripped'; then strip --strip-unneeded "$f"; fi
done
tar -C "$stage/root" -c . | xz -T0 -6 >"$out/sys.tar.xz"
tar -c --exclude='*.o' --exclude='*.a' --exclude=CompilerIdCUDA --exclude=Testing \
  --exclude='build-gpu/tests/amr-h5/*' --exclude=starpu-home build-gpu | xz -T0 -6 >"$out/build.tar.xz"
cat >"$out/run.sh" <<EOF
#!/usr/bin/env bash
# Unpack Strata's GPU bundle (scripts/gpu-bundle.sh) and run ctest in build-gpu.
set -uo pipefail
tar -xJf .device/sys.tar.xz -C / --skip-old-files --keep-directory-symlink --no-same-owner
tar -xJf .device/build.tar.xz
mkdir -p /work
[ -e /work/main ] || ln -s "\$PWD" /work/main
ldconfig
lib_dir() { dirname "\$(find / \( -path /proc -o -path /sys \) -prune -o -name "\$1" -print 2>/dev/null | head -1)"; }
export LD_LIBRARY_PATH=\$(lib_dir 'libcublasLt.so.13*'):\$(lib_dir 'libcusolver.so.12*'):\$(lib_dir 'libcudnn.so.9*'):/usr/local/cuda/lib64:$starpu/lib
cd /work/main/build-gpu
ctest "\$@"
EOF
du -sh "$out"/*
