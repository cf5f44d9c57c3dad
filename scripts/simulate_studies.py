#!/usr/bin/env python3
"""The studies of scripts/simulate.sh (docs/scaling.md).

validate: the same benchmark measured here (mpiexec, build/) and simulated
    on the `vm` platform (build-simgrid/), on 1, 2 and 4 ranks of one worker:
    the inference cycle (bench_infer --quick: the task graph's cycle) and the
    global indexer's Take and Put (bench_gindexer: 10^6 items per rank, one
    value per index). Medians of RUNS runs each; the error is simulated over measured,
    minus 1.
scaling: on the `cluster` platform, one worker per rank: the global
    indexer's Take and Put with 10^4 items per rank (weak scaling), and the
    inference cycle of Enzo-E's inference test (strong scaling) and of the
    8x larger problem (8x the clumps), with the messages per cycle (summed
    over the ranks); the inference cycle's weak scaling, the domain's root
    blocks doubled per axis for each 8 times the ranks (1 root block per axis
    on 1 rank, 33 arrays; 2 on 8, 301; 4 on 64, 2004); and the inference
    cycle on a mesh that each rank makes for itself (bench_infer_weak --quick:
    one root block and one clump a rank, 253 leaves, no octree), RUNS runs
    at each power of two, and the same leaves in Strata's octree on p4est
    (infer_weak_octree: --octree, on 1, 8, 64 and 512 ranks, the cubic root
    grids); plots with gnuplot. Each study has its own largest
    rank count (--max-ranks, --max-ranks-infer, --max-ranks-8x,
    --max-ranks-weak, --max-ranks-mesh); --only runs some of them.
--durations model: every simulated task lasts its performance model's mean
    (scripts/simulate.sh calibrate, scripts/simulate-models/) instead of the
    thread time it took on this machine; the rows go to NAME_modeled, the
    validation to validation_modeled.json and .png.
--models paired (validate, with --durations model): each measured run is
    preceded by a recording of the models of its own benchmark on as many
    ranks (two of half the items for four, as `calibrate` does), which the
    simulated run after it uses, so that both sides see the machine within
    the same minute (this VM's memory speed changes up to 1.9 times from
    one minute to the next: docs/scaling.md); the validation goes to
    validation_paired.json and .png.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMULATE = os.path.join(ROOT, "scripts", "simulate.sh")


def log(*words):
    print("simulate:", *words, file=sys.stderr, flush=True)


def measured(ranks, program, program_args, out):
    """One run under mpiexec from build/ (STRATA_BUILD_DIR), in the
    environment of scripts/env.sh: its JSON. Ranks that share the cores
    evenly (as many as the cores, or a multiple) are bound, as
    scripts/env.sh advises for them (STRATA_BIND_RANKS: each rank to a
    core, round-robin); fewer ranks run unbound, so that a rank's main
    thread has a core beside its worker, as on a simulated rank's node
    (bound to one core, the 1-rank inference cycle took 0.42-0.45 s against
    0.38 s, 3 runs each, 2026-11-29)."""
    build = os.environ.get("STRATA_BUILD_DIR", os.path.join(ROOT, "build"))
    cores = os.cpu_count() or 1
    env = dict(os.environ, STARPU_NCPU="1", STARPU_HOME=os.path.join(out, "starpu-home"),
               STRATA_BIND_RANKS="1" if ranks >= cores and ranks % cores == 0 else "0")
    env.pop("XDG_CACHE_HOME", None)  # StarPU 1.4 would read its models there
    cmd = ["bash", "-c", 'source "$0" >/dev/null && exec "$@"', os.path.join(ROOT, "scripts", "env.sh"),
           "mpiexec", "-n", str(ranks), os.path.join(build, program)] + program_args
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(result)


def simulated(platform, ranks, program, program_args, log_file, host_clock=None, models=None):
    """One run on `ranks` simulated ranks of one worker: its JSON (or the
    tool's text), the seconds it took here and the simulation's peak
    resident memory in MiB (every simulated rank's together: SMPI runs them
    in one process). host_clock True or False charges the main threads'
    host time or not, None as the platform's default (scripts/simulate.sh);
    `models`: the models' folder for --durations model, if not the
    default."""
    env = dict(os.environ, STRATA_SIM_LOG=log_file)
    if models:
        env["STRATA_SIM_MODELS"] = models
    if host_clock is not None:
        env["STRATA_SIM_HOST_CLOCK"] = "1" if host_clock else "0"
    cmd = ["bash", SIMULATE, "run", "-p", platform, "-n", str(ranks), program] + program_args
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        child = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # the usage of this run alone
        wall = time.monotonic() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text = out.read()
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, cmd, text, err.read())
    return text, wall, usage.ru_maxrss / 1024


class Job:
    """A benchmark, the figures read from its JSON, and the workload that
    records its models for a run of N ranks (--models paired)."""

    def __init__(self, name, program, program_args, figures, calibration):
        self.name, self.program, self.program_args, self.figures = name, program, program_args, figures
        self.calibration = calibration


INFER = Job("infer", "bench/bench_infer", ["--quick", "--rounds", "3"],
            lambda d: {"cycle_s": d["task_graph_s"]["total"]},
            lambda n: f"{min(n, 2)} bench/bench_infer --quick --rounds 3")
# Ten rounds give each of the indexer's footprints the ten samples StarPU
# wants before it uses a model.
GINDEXER = Job("gindexer", "bench/bench_gindexer", ["--rounds", "3"],
               lambda d: {"take_s": d["counts"][0]["take_s"], "put_s": d["counts"][0]["put_s"]},
               lambda n: f"{n} bench/bench_gindexer --rounds 9" if n <= 2
               else "2 bench/bench_gindexer --items 500000 --rounds 9")


def paired_models(job, ranks, out):
    """The models of `job` recorded now for a run of `ranks` ranks
    (scripts/simulate.sh calibrate), in OUT/paired-models."""
    workloads, models = os.path.join(out, "paired-workloads"), os.path.join(out, "paired-models")
    with open(workloads, "w") as f:
        f.write(job.calibration(ranks) + "\n")
    done = subprocess.run(["bash", SIMULATE, "calibrate", "-r", "1", "-o", models, "-w", workloads],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"simulate: calibrate for the paired models failed:\n{done.stderr}")
    return models


def validate(opts):
    results = []
    for job in (INFER, GINDEXER):
        for ranks in opts.ranks:
            real, sim = {}, {}
            for _ in range(opts.runs):
                models = paired_models(job, ranks, opts.out) if opts.models == "paired" else None
                real_json = measured(ranks, job.program, job.program_args, opts.out)
                for k, v in job.figures(real_json).items():
                    real.setdefault(k, []).append(v)
                out, _, _ = simulated("vm", ranks, job.program, job.program_args, opts.log,
                                      models=models)
                for k, v in job.figures(json.loads(out)).items():
                    sim.setdefault(k, []).append(v)
            for k in real:
                m, s = statistics.median(real[k]), statistics.median(sim[k])
                row = {"benchmark": job.name, "figure": k, "ranks": ranks, "measured_s": m,
                       "measured_range": [min(real[k]), max(real[k])], "simulated_s": s,
                       "simulated_range": [min(sim[k]), max(sim[k])], "error": s / m - 1}
                log(f"{job.name} {k} {ranks} rank(s): measured {m:.4g} s, simulated {s:.4g} s, "
                    f"error {100 * row['error']:+.0f} %")
                results.append(row)
    name = "validation" + ("_paired" if opts.models == "paired" else opts.suffix)
    with open(os.path.join(opts.out, name + ".json"), "w") as f:
        json.dump({"runs": opts.runs, "durations": opts.durations, "models": opts.models,
                   "rows": results}, f, indent=1)
    plot_validation(results, opts.out, name)


def plot_validation(rows, out, name="validation"):
    """DIR/NAME.png: measured and simulated medians with their ranges, a
    panel per figure, against the ranks."""
    dat = os.path.join(out, name + ".dat")
    figures = [("cycle_s", "Inference cycle", 1), ("take_s", "Take", 1e3), ("put_s", "Put", 1e3)]
    with open(dat, "w") as f:
        for key, _, scale in figures:
            for side in ("measured", "simulated"):
                f.write(f"# {key} {side}\n")
                for r in (r for r in rows if r["figure"] == key):
                    lo, hi = r[side + "_range"]
                    f.write(f"{r['ranks']} {r[side + '_s'] * scale} {lo * scale} {hi * scale}\n")
                f.write("\n\n")
    panels = ""
    for i, (key, title, scale) in enumerate(figures):
        unit = "s" if scale == 1 else "ms"
        panels += f"""set title '{title}'
set ylabel '{unit}, median and range'
plot '{dat}' index {2 * i} using ($1*0.97):2:3:4 with yerrorlines title 'measured', \\
     '{dat}' index {2 * i + 1} using ($1*1.03):2:3:4 with yerrorlines title 'simulated (vm)'
"""
    script = f"""
set terminal pngcairo size 1500,420 font ',10'
set output '{os.path.join(out, name + ".png")}'
set multiplot layout 1,3
set logscale x 2
set xrange [0.8:5]
set xtics (1, 2, 4)
set yrange [0:*]
set xlabel 'ranks on this machine (2 cores)'
set key top left
""" + panels + "unset multiplot\n"
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    log("wrote", os.path.join(out, name + ".png"))


def infer_cycle(text):
    """The last cycle's seconds and messages from `strata infer`'s table."""
    rows = [line.split() for line in text.splitlines()]
    header = next(i for i, r in enumerate(rows) if r[:2] == ["cycle", "leaves"])
    last = [r for r in rows[header + 1:] if r and r[0].isdigit()][-1]
    row = {"cycle_s": float(last[-3]), "messages": int(last[8]), "leaves": int(last[1]),
           "elements": int(last[2]), "rss_mib": float(last[-2])}
    # the per-rank lines: the most any rank holds or receives
    per_rank = re.findall(r"rank \d+: .*?(\d+) element handles, (\d+) elements known, "
                          r"(\d+) join bytes", text)
    for k, name in enumerate(("handles_max", "elements_known_max", "join_bytes_max")):
        row[name] = max(int(v[k]) for v in per_rank)
    # what a rank holds of the octree (strata_amr_get_footprint)
    octree = re.findall(r"rank \d+ octree: (\d+) leaves, (\d+) ghost leaves, (\d+) nodes, "
                        r"(\d+) bytes \((\d+) of", text)
    for k, name in enumerate(("octree_leaves_max", "octree_ghosts_max", "octree_nodes_max",
                              "octree_bytes_max", "octree_connectivity_bytes")):
        row[name] = max(int(v[k]) for v in octree)
    return row


def keep(series, name, row, out):
    """Adds row to its study and writes DIR/scaling.json again, so that a
    study stopped part-way (a run that would not fit in memory) keeps the rows
    it has."""
    series.setdefault(name, []).append(row)
    log(f"{name} {row['ranks']} ranks: {row}")
    with open(os.path.join(out, "scaling.json"), "w") as f:
        json.dump(series, f, indent=1)


def ranks_upto(limit):
    return [r for r in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if r <= limit]


def infer_row(ranks, root_blocks, opts):
    """`strata infer` on `ranks` simulated ranks, the domain `root_blocks`
    blocks per axis: the job's 32 clumps at the Enzo-E size (2), as many per
    volume at the others."""
    args = ["infer", "--quiet", "--cycles", "2", "--png", "none", "--hdf5", "none",
            "--root-blocks", str(root_blocks), "--grid", str(64 * root_blocks),
            "--clumps", str(4 * root_blocks ** 3)]
    out, wall, _ = simulated("cluster", ranks, "tools/strata", args, opts.log,
                             opts.host_clock or None)
    return dict(infer_cycle(out), ranks=ranks, root_blocks=root_blocks, host_s=wall)


def mesh_row(ranks, opts, octree=False):
    """bench_infer_weak --quick (with --octree: the leaves in Strata's
    hierarchy) on `ranks` simulated ranks, opts.runs runs:
    the cycles' medians and ranges (the task graph's and the
    bulk-synchronous one's), the counters (the same in every run), the
    memory per rank and the host's seconds."""
    runs = []
    for _ in range(opts.runs):
        out, wall, peak = simulated("cluster", ranks, "bench/bench_infer_weak",
                                    ["--quick", "--rounds", "3"] + ["--octree"] * octree,
                                    opts.log, opts.host_clock or None)
        runs.append(dict(json.loads(out), host_s=wall, peak_mib=peak))
    row = {"ranks": ranks}
    for key, name in (("task_graph_s", "cycle_s"), ("bulk_synchronous_s", "bulk_s"),
                      ("host_s", "host_s"), ("peak_mib", "peak_mib")):
        values = [r[key] for r in runs]
        row[name], row[name + "_runs"] = statistics.median(values), values
    row["mib_per_rank"] = row["peak_mib"] / ranks
    # where the time of the run with the median cycle went, phase by phase
    median_run = sorted(runs, key=lambda r: r["task_graph_s"])[len(runs) // 2]
    row["phases_s"] = median_run["task_graph_last_round_s"]
    for key in ("leaves", "leaves_max_per_rank", "mesh_bytes_max_per_rank", "elements",
                "elements_max_per_rank", "element_handles_max_per_rank",
                "elements_known_max_per_rank", "join_bytes_max_per_rank", "messages_per_rank",
                "clumps", "clumps_found", "octree_ghost_leaves_max_per_rank",
                "octree_nodes_max_per_rank", "octree_bytes_max_per_rank",
                "octree_connectivity_bytes"):
        if key in runs[0]:
            row[key] = runs[0][key]
    return row


def scaling(opts):
    path = os.path.join(opts.out, "scaling.json")
    # a partial study (--only) keeps the other studies' rows
    series = json.load(open(path)) if opts.only != STUDIES and os.path.exists(path) else {}
    # With --host-clock the inference studies go to NAME_host_clock; with
    # --durations model every study to NAME_modeled.
    suffix = ("_host_clock" if opts.host_clock else "") + opts.suffix
    for name in opts.only:
        series.pop(name + (suffix if name.startswith("infer") else opts.suffix), None)
    if "gindexer_weak" in opts.only:
        for ranks in ranks_upto(opts.max_ranks):
            out, wall, _ = simulated("cluster", ranks, GINDEXER.program,
                                     ["--quick", "--rounds", "1"], opts.log)
            row = dict(GINDEXER.figures(json.loads(out)), ranks=ranks, host_s=wall)
            keep(series, "gindexer_weak" + opts.suffix, row, opts.out)
    for name, root_blocks, limit in (("infer_strong", 2, opts.max_ranks_infer),
                                     ("infer_strong_8x", 4, opts.max_ranks_8x)):
        for ranks in ranks_upto(limit) if name in opts.only else []:
            keep(series, name + suffix, infer_row(ranks, root_blocks, opts), opts.out)
    if "infer_weak" in opts.only:
        for ranks, root_blocks in ((1, 1), (8, 2), (64, 4), (512, 8)):
            if ranks <= opts.max_ranks_weak:
                keep(series, "infer_weak" + suffix, infer_row(ranks, root_blocks, opts), opts.out)
    if "infer_weak_mesh" in opts.only:
        for ranks in ranks_upto(opts.max_ranks_mesh):
            keep(series, "infer_weak_mesh" + suffix, mesh_row(ranks, opts), opts.out)
    if "infer_weak_octree" in opts.only:  # a cubic root grid: 1, 8, 64, 512 ranks
        for ranks in (r for r in (1, 8, 64, 512) if r <= opts.max_ranks_mesh):
            keep(series, "infer_weak_octree" + suffix, mesh_row(ranks, opts, True), opts.out)
    plot(series, opts.out)


def plot(series, out):
    dat = os.path.join(out, "scaling.dat")
    index = {}  # gnuplot's index of each curve with data (it skips empty blocks)
    with open(dat, "w") as f:
        for name, key in (("gindexer_weak", "take_s"), ("gindexer_weak", "put_s"),
                          ("infer_strong", "cycle_s"), ("infer_strong_8x", "cycle_s"),
                          ("infer_weak", "cycle_s"), ("infer_weak_gathered", "cycle_s"),
                          ("infer_weak_distributed", "cycle_s"),
                          ("infer_strong_unprepared", "cycle_s"),
                          ("infer_strong_host_clock", "cycle_s"),
                          ("infer_weak_host_clock", "cycle_s"),
                          ("infer_weak_mesh", "cycle_s"), ("infer_weak_mesh", "bulk_s"),
                          ("infer_weak_mesh_75_calls", "cycle_s"),
                          ("infer_weak_mesh_alone", "cycle_s"),
                          ("infer_weak_mesh_modeled_37_calls", "cycle_s"),
                          ("infer_weak_mesh_modeled", "cycle_s"),
                          ("infer_weak_mesh_modeled_latest", "cycle_s"),
                          ("infer_weak_mesh_all_modeled", "cycle_s"),
                          ("infer_weak_octree_modeled", "cycle_s")):
            if not series.get(name):
                continue
            index[name, key] = len(index)
            f.write(f"# {name} {key}\n")
            for row in series[name]:
                runs = row.get(key + "_runs", [row[key]])  # several runs: their range
                f.write(f"{row['ranks']} {row[key]} {min(runs)} {max(runs)}\n")
            f.write("\n\n")
    png = os.path.join(out, "scaling.png")
    def at(name, key="cycle_s"):
        return index.get((name, key), -1)

    def curves(*specs):
        """A plot command of the curves (name, key, style, title) that have data."""
        have = [(name, key, style, title) for name, key, style, title in specs
                if at(name, key) >= 0]
        return "plot " + ", \\\n     ".join(
            f"'{dat}' index {at(name, key)} using {style} title '{title}'"
            for name, key, style, title in have) + "\n"

    lines, ranges = "1:2 with linespoints", "1:2:3:4 with yerrorlines"
    # A study that has not run leaves its panel empty (gnuplot fails on no data).
    panels = [(at("gindexer_weak", "take_s") >= 0, """set title 'Global indexer, 10^4 items per rank (weak)'
set ylabel 'simulated seconds per call'
""" + curves(("gindexer_weak", "take_s", lines, "Take"), ("gindexer_weak", "put_s", lines, "Put"))),
              (at("infer_strong") >= 0, """set title 'Inference cycle (strong)'
set ylabel 'simulated seconds per cycle'
set key top right
""" + curves(("infer_strong", "cycle_s", lines, "Enzo-E test size"),
             ("infer_strong_8x", "cycle_s", lines, "8x larger"),
             ("infer_strong_host_clock", "cycle_s", lines + " dashtype 3",
              "Enzo-E size, host time charged (upper bound)"),
             ("infer_strong_unprepared", "cycle_s", lines + " dashtype 2",
              "Enzo-E size, freed memory handed back"))),
              (at("infer_weak") >= 0, """set title 'Inference cycle (weak: about 33 arrays per rank)'
set ylabel 'simulated seconds per cycle'
unset logscale y
set yrange [0:0.3]
set key bottom right
""" + curves(("infer_weak", "cycle_s", ranges, "root blocks 1, 2, 4 per axis"),
             ("infer_weak_host_clock", "cycle_s", ranges + " dashtype 3",
              "host time charged (upper bound)"),
             ("infer_weak_gathered", "cycle_s", ranges, "before: element set, join on every rank"),
             ("infer_weak_distributed", "cycle_s", lines + " dashtype 4",
              "the octree on p4est (2026-12-07, one run, the host slower that day)"))),
              (at("infer_weak_mesh") >= 0, """set title "Inference cycle (weak: each rank's own mesh, 253 leaves, 1 clump)"
set ylabel 'simulated seconds per cycle'
set logscale y 10
set yrange [0.005:0.4]
set key top left
""" + curves(("infer_weak_mesh", "cycle_s", ranges, "task graph (median and range of the runs)"),
             ("infer_weak_mesh", "bulk_s", "1:2 with linespoints dashtype 2",
              "bulk-synchronous (median)"),
             ("infer_weak_mesh_75_calls", "cycle_s", "1:2 with linespoints dashtype 3",
              "before: 75 collective calls a cycle, not 38 (median)"),
             ("infer_weak_mesh_alone", "cycle_s", ranges + " dashtype 4",
              "task graph, 37 calls, alone on the host (2026-12-06, later)"),
             ("infer_weak_mesh_modeled_37_calls", "cycle_s", "1:2 with linespoints dashtype 2",
              "the same, 37 calls a cycle, not 33"),
             ("infer_weak_mesh_modeled", "cycle_s", ranges + " linewidth 2",
              "task graph, durations from the performance models"),
             ("infer_weak_mesh_modeled_latest", "cycle_s", "1:2 with linespoints pointtype 6",
              "the same, the code and models of 2026-12-07 (median of 3 cycles)"),
             ("infer_weak_mesh_all_modeled", "cycle_s", ranges + " pointtype 5",
              "the same, every duration from the models (runs repeat to the last digit)"),
             ("infer_weak_octree_modeled", "cycle_s", "1:2 with linespoints pointtype 7",
              "the same leaves in the octree on p4est (models)")))]
    script = f"""
set terminal pngcairo size 1400,900 font ',10'
set output '{png}'
set multiplot layout 2,2
set logscale x 2
set logscale y 10
set format y '%g'
set xlabel 'simulated ranks (cluster: 1 worker per rank)'
set key top left
""" + "".join(text if ok else "set multiplot next\n" for ok, text in panels) + "unset multiplot\n"
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    log("wrote", png)
    plot_footprint(series, out)


def plot_footprint(series, out):
    """DIR/footprint.png: what the busiest rank holds of the octree in the weak
    studies (strata_amr_get_footprint), against the leaves of the whole tree,
    which every rank held while the tree was replicated: `strata infer`'s
    (infer_weak_distributed, about 540 leaves a rank) and bench_infer_weak
    --octree's (infer_weak_octree, 253 leaves a rank)."""
    # (series, ranks, all leaves, nodes, own and ghost leaves, own leaves)
    def big(r):
        return (r["ranks"], r["leaves"], r["octree_nodes_max"],
                r["octree_leaves_max"] + r["octree_ghosts_max"], r["octree_leaves_max"])

    def small(r):
        return (r["ranks"], r["leaves"], r["octree_nodes_max_per_rank"],
                r["leaves_max_per_rank"] + r["octree_ghost_leaves_max_per_rank"],
                r["leaves_max_per_rank"])
    curves = []
    for name, row, title in (("infer_weak_distributed", big, "strata infer, about 540 leaves a rank"),
                             ("infer_weak_octree_modeled", small,
                              "bench-infer-weak --octree, 253 leaves a rank")):
        rows = [row(r) for r in series.get(name, []) if "leaves" in r]
        if rows:
            curves.append((name, rows, title))
    if not curves:
        return
    dat = os.path.join(out, "footprint.dat")
    plots = []
    with open(dat, "w") as f:
        for k, (name, rows, title) in enumerate(curves):
            f.write(f"# {name}\n" + "".join(" ".join(map(str, r)) + "\n" for r in rows) + "\n\n")
            dash = f" dashtype {k + 1} linecolor {{}}"
            for col, what, colour in ((2, "all leaves (on every rank when replicated)", 1),
                                      (3, "nodes held, busiest rank", 2),
                                      (4, "own and ghost leaves, busiest rank", 3),
                                      (5, "own leaves, busiest rank", 4)):
                plots.append(f"'{dat}' index {k} using 1:{col} with linespoints"
                             + dash.format(colour) + f' title "{what}: {title}"')
    png = os.path.join(out, "footprint.png")
    script = f"""
set terminal pngcairo size 900,600 font ',10'
set output '{png}'
set title "Strata's octree on a rank, weak scaling"
set logscale xy 2
set xlabel 'simulated ranks'
set ylabel 'blocks'
set key top left font ',8'
plot """ + ", \\\n     ".join(plots) + "\n"
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    log("wrote", png)


STUDIES = ["gindexer_weak", "infer_strong", "infer_strong_8x", "infer_weak", "infer_weak_mesh",
           "infer_weak_octree"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", choices=["validate", "scaling", "plot"])
    parser.add_argument("-o", "--out", default="simulate")
    parser.add_argument("-r", "--runs", type=int, default=5)
    parser.add_argument("-n", "--ranks", default="1,2,4",
                        type=lambda v: [int(r) for r in v.split(",")],
                        help="validate: the rank counts, comma-separated")
    parser.add_argument("-m", "--max-ranks", type=int, default=64,
                        help="scaling: the global indexer's largest rank count")
    parser.add_argument("--max-ranks-infer", type=int, default=32,
                        help="scaling: the inference cycle's, at the Enzo-E size")
    parser.add_argument("--max-ranks-8x", type=int, default=8,
                        help="scaling: the inference cycle's, 8x larger")
    parser.add_argument("--max-ranks-weak", type=int, default=64,
                        help="scaling: the inference cycle's weak scaling (1, 8, 64, 512)")
    parser.add_argument("--max-ranks-mesh", type=int, default=64,
                        help="scaling: the weak scaling on each rank's own mesh (powers of 2) "
                        "and in the octree (cubes)")
    parser.add_argument("--only", default=",".join(STUDIES),
                        type=lambda v: [s for s in v.split(",") if s],
                        help="scaling: the studies to run (" + ",".join(STUDIES) + "); the "
                        "others' rows are kept from DIR/scaling.json")
    parser.add_argument("--host-clock", action="store_true",
                        help="scaling: charge the main threads' host time on the cluster "
                        "platform too (an upper bound: docs/scaling.md), the inference studies' "
                        "rows under NAME_host_clock")
    parser.add_argument("--durations", choices=["measured", "model"], default="measured",
                        help="a simulated task lasts the thread time it took here (measured) or "
                        "its performance model's mean (model: scripts/simulate.sh calibrate)")
    parser.add_argument("--models", choices=["recorded", "paired"], default="recorded",
                        help="validate --durations model: the models recorded by `calibrate` "
                        "(recorded) or those of each run's own benchmark recorded just before "
                        "it (paired)")
    opts = parser.parse_args()
    if opts.models == "paired" and (opts.study != "validate" or opts.durations != "model"):
        parser.error("--models paired: for validate --durations model")
    opts.suffix = "_modeled" if opts.durations == "model" else ""
    os.environ["STRATA_SIM_DURATIONS"] = opts.durations  # for every simulated run
    unknown = set(opts.only) - set(STUDIES)
    if unknown:
        parser.error(f"--only: no study {', '.join(sorted(unknown))}")
    os.makedirs(opts.out, exist_ok=True)
    opts.out = os.path.abspath(opts.out)
    opts.log = os.path.join(opts.out, "simulate.log")
    if opts.study == "plot":  # again, from DIR/scaling.json and DIR/validation.json
        scaling_json = os.path.join(opts.out, "scaling.json")
        validation = os.path.join(opts.out, "validation.json")
        if not os.path.exists(scaling_json) and not os.path.exists(validation):
            parser.error(f"plot: neither scaling.json nor validation.json in {opts.out}")
        if os.path.exists(scaling_json):
            plot(json.load(open(scaling_json)), opts.out)
        for name in ("validation", "validation_modeled", "validation_paired"):
            path = os.path.join(opts.out, name + ".json")
            if os.path.exists(path):
                plot_validation(json.load(open(path))["rows"], opts.out, name)
        return
    {"validate": validate, "scaling": scaling}[opts.study](opts)


if __name__ == "__main__":
    main()
