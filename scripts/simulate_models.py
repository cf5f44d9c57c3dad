#!/usr/bin/env python3
"""Merge StarPU history-based performance models recorded by several ranks.

    simulate_models.py OUT HOME [HOME ...]

Each HOME is a STARPU_HOME that one rank of a calibration run wrote its
models into (ranks that shared one would overwrite each other's files when
they shut down). OUT receives one file per codelet model: the union of the
footprints measured anywhere, with the measurements of a footprint that more
than one rank saw pooled (sums, sums of squares and counts added; the mean
and deviation recomputed). Only CPU models of one implementation, as
`scripts/simulate.sh calibrate` records them, are read.
"""
import math
import pathlib
import sys

TABLE = "# hash\t\tsize\t\tflops\t\tmean (us)\tdev (us)\tsum\t\tsum2\t\tn"


def read(path):
    """The file's lines and its footprint table: {hash: [size, flops, sum, sum2, n]}."""
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line == TABLE]
    if len(starts) != 1:
        raise SystemExit(f"{path}: {len(starts)} tables of footprints, 1 expected")
    entries = {}
    i = starts[0] + 1
    while i < len(lines) and lines[i].strip():
        f = lines[i].split()
        entries[f[0]] = [int(f[1]), float(f[2]), float(f[5]), float(f[6]), int(f[7])]
        i += 1
    return lines, starts[0], i, entries


def write(path, lines, start, end, entries):
    rows = []
    for key in sorted(entries):
        size, flops, total, total2, n = entries[key]
        mean = total / n
        dev = math.sqrt(max(total2 / n - mean * mean, 0.0))
        rows.append(f"{key}\t{size:<15d}\t{flops:<15e}\t{mean:<15e}\t{dev:<15e}\t"
                    f"{total:<15e}\t{total2:<15e}\t{n}")
    out = lines[:start + 1] + rows + lines[end:]
    # The entry count, two lines above the regression's header.
    count = max(i for i in range(start) if lines[i] == "# number of entries") + 1
    out[count] = str(len(entries))
    path.write_text("\n".join(out) + "\n")


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    out = pathlib.Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    models = {}
    for home in argv[2:]:
        for path in sorted(pathlib.Path(home).glob(".starpu/sampling/codelets/45/*")):
            lines, start, end, entries = read(path)
            if path.name not in models:
                models[path.name] = (lines, start, end, {})
            pooled = models[path.name][3]
            for key, (size, flops, total, total2, n) in entries.items():
                if n == 0:  # listed, never measured
                    continue
                if key in pooled:
                    p = pooled[key]
                    p[2] += total
                    p[3] += total2
                    p[4] += n
                else:
                    pooled[key] = [size, flops, total, total2, n]
    for name, (lines, start, end, entries) in sorted(models.items()):
        write(out / name, lines, start, end, entries)
        print(f"{name}: {len(entries)} footprint(s)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
