#!/usr/bin/env bash
# Fail when a tracked C, header or CUDA file is not formatted as .clang-format says.
# usage: check_format.sh [clang-format]   (run from the repository root)
set -euo pipefail
clang_format=${1:-clang-format}
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh')
if [ ${#files[@]} -eq 0 ]; then
  echo "no source files found" >&2
  exit 1
fi
"$clang_format" --dry-run --Werror "${files[@]}"
echo "${#files[@]} files formatted"
