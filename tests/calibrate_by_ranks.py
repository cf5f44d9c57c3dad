#!/usr/bin/env python3
"""scripts/calibrate.sh -g on two small workloads, one of 1 rank and one of 2:
the pooled models hold every footprint that either rank count measured, with
the samples of both (counts, sums and sums of squares added; the mean their
quotient), and ranks-1/ and ranks-2/ hold each count's alone.

    calibrate_by_ranks.py SOURCE_DIR BUILD_DIR WORK_DIR
"""
import math
import os
import pathlib
import shutil
import subprocess
import sys

# The models are read with the reader of scripts/simulate_models.py, which pools them.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import simulate_models  # noqa: E402


def footprints(models):
    """{(model, hash): (mean, sum, sum2, n)} of every *.simulated file in
    models, read as scripts/simulate_models.py reads them (the mean column as
    written)."""
    out = {}
    for path in sorted(models.glob("*.simulated")):
        lines, start, end, entries = simulate_models.read(path)
        means = {row.split()[0]: float(row.split()[3]) for row in lines[start + 1:end]}
        for key, (_, _, total, total2, n) in entries.items():
            out[(path.stem, key)] = (means[key], total, total2, n)
    return out


def main():
    source, build, work = (pathlib.Path(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    workloads = work / "workloads"
    workloads.write_text("1 bench/bench_gindexer --quick --rounds 1\n"
                         "2 bench/bench_gindexer --quick --rounds 1\n")
    home = work / "home"
    subprocess.run(["bash", str(source / "scripts" / "calibrate.sh"), "-r", "1", "-g", "-w",
                    str(workloads), str(home)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "STRATA_BUILD_DIR": str(build),
                        "STARPU_HOSTNAME": "simulated"})
    sampling = pathlib.Path(".starpu", "sampling", "codelets", "45")
    pooled = footprints(home / sampling)
    alone = [footprints(home / f"ranks-{n}" / sampling) for n in (1, 2)]
    failures = []
    if not all(alone):
        failures.append(f"models per rank count: {[len(a) for a in alone]} footprints")
    if set(pooled) != set(alone[0]) | set(alone[1]):
        failures.append("the pooled footprints are not those of 1 and 2 ranks together")
    for key, (mean, total, total2, n) in pooled.items():
        parts = [a[key] for a in alone if key in a]
        if n != sum(p[3] for p in parts) or not math.isclose(total, sum(p[1] for p in parts),
                                                              rel_tol=1e-5):
            failures.append(f"{key}: n {n}, sum {total} from {parts}")
        elif not math.isclose(mean, total / n, rel_tol=1e-5):
            failures.append(f"{key}: mean {mean}, sum / n {total / n}")
    shared = sum(1 for k in pooled if k in alone[0] and k in alone[1])
    for f in failures:
        print("calibrate_by_ranks:", f)
    print(f"{len(pooled)} footprints pooled, {shared} measured on 1 and 2 ranks, "
          f"{len(alone[0])} and {len(alone[1])} alone")
    if shared == 0:
        print("calibrate_by_ranks: no footprint measured on both rank counts")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
