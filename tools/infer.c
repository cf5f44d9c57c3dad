/* `strata infer`: the inference main job. */
#include <malloc.h>
#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "infer_options.h"
#include "slice.h"

static const char usage_text[] =
    "usage: strata infer [options]\n"
    "\n"
    "Build the cosmology test problem on an AMR hierarchy, then run N cycles of\n"
    "the inference-array method (evaluate, allocate, populate, apply the model,\n"
    "update the blocks), evolving the field and re-adapting the hierarchy between\n"
    "cycles. Run it under mpiexec for several ranks. Rank 0 shows a progress bar\n"
    "and prints per-cycle figures and a per-phase timing summary.\n"
    "\n"
    "problem and hierarchy (defaults: Enzo-E's inference test):\n"
    "  --root-blocks N     blocks per axis at level 0 (2)\n"
    "  --block-cells N     cells per block axis (16)\n"
    "  --max-level L       finest level (5)\n"
    "  --grid N            cosmology generation grid per axis (128)\n"
    "  --seed S            random seed (2026)\n"
    "  --sigma X           log-density standard deviation at cycle 0 (1.5)\n"
    "  --growth X          its relative growth per cycle (0.05)\n"
    "  --period P          restart the evolution every P cycles (0: never): a long\n"
    "                      run then repeats refinement and coarsening, for soak tests\n"
    "  --clumps N          collapsed clumps planted in the field, the bubbles to find\n"
    "                      (32); the run reports how many the model found\n"
    "  --input FILE        instead, one cycle on the hierarchy of FILE, an HDF5 file\n"
    "                      that strata infer wrote (--hdf5): re-analyse a snapshot\n"
    "method:\n"
    "  --levels B/A/I      level_base / level_array / level_infer (2/4/5)\n"
    "  --threshold X       a cell fires above X times its block's mean density (32)\n"
    "  --model FILE        model, JSON or ONNX (default: the trained blob U-Net)\n"
    "  --probability-output NAME  the model output that is the probability (default:\n"
    "                      the first channel)\n"
    "  --value-outputs A,B the model outputs each bubble carries as values, their\n"
    "                      probability-weighted means (default: every other channel)\n"
    "  --placement P       curve (default), greedy or measured (by the costs StarPU\n"
    "                      measured for the model and the transfers on each rank, kept\n"
    "                      elements stay where balance allows)\n"
    "  --bulk-synchronous  global barriers between phases (comparison mode)\n"
    "  --cycles N          cycles to run (3)\n"
    "output:\n"
    "  --png FILE          slice picture after the last cycle (infer.png; none: no picture)\n"
    "  --slice Z           height of the slice in [0, 1) (default: through the\n"
    "                      largest bubble, else 0.5)\n"
    "  --hdf5 FILE         hierarchy with density and star_forming fields, and the\n"
    "                      bubbles as a particles table (infer.h5; none: no file)\n"
    "  --bubbles FILE      all bubbles of the last cycle as text, one per line\n"
    "  --trace PREFIX      FxT trace files PREFIX* for ViTE (StarPU must have FxT)\n"
    "  --quiet             no progress bar\n"
    "StarPU's environment variables (STARPU_NCPU, STARPU_SCHED, ...) apply.\n";

static void progress(const struct infer_options *o, int done, double seconds)
{
  if (o->quiet || strata_rank() != 0)
    return;
  enum { WIDTH = 30 };
  char bar[WIDTH + 1];
  int filled = done * WIDTH / o->cycles;
  for (int i = 0; i < WIDTH; i++)
    bar[i] = i < filled ? '#' : '.';
  bar[WIDTH] = 0;
  int tty = isatty(fileno(stderr));
  fprintf(stderr, "%s[%s] cycle %d/%d  %.1f s%s", tty ? "\r" : "", bar, done, o->cycles, seconds,
          tty && done < o->cycles ? "" : "\n");
  fflush(stderr);
}

/* Resident memory of this process in MiB (Linux), -1 where unknown: the
 * cycle table shows it so long runs can be checked for growth. */
static double resident_mib(void)
{
  long pages = -1;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    long size;
    if (fscanf(f, "%ld %ld", &size, &pages) != 2)
      pages = -1;
    fclose(f);
  }
  return pages < 0 ? -1 : (double)pages * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

/* Heap bytes in use in MiB (glibc's mallinfo2), -1 elsewhere: unlike the
 * resident size it does not move with malloc's arenas and trimming, so a
 * soak run can hold it to a tight bound. */
static double heap_mib(void)
{
#ifdef __GLIBC__
  struct mallinfo2 m = mallinfo2();
  return (double)(m.uordblks + m.hblkhd) / (1 << 20);
#else
  return -1;
#endif
}

/* Per-rank elements, bubble parts, particles and element handles of the
 * last cycle, what the rank holds or receives of the whole problem (the
 * level array's entries, the bubble join's bytes), and what it holds of the
 * octree, printed by rank 0. */
static void per_rank(const strata_infer_stats *st, const strata_amr *amr)
{
  enum { N = 11 };
  int size = strata_size();
  strata_amr_footprint fp = {0};
  strata_amr_get_footprint(amr, &fp);
  int64_t mine[N] = {st->elements_local, st->parts_local,      st->particles_local,
                     st->handles_local,  st->elements_known,   st->join_bytes_local,
                     fp.leaves,          fp.ghost_leaves,      fp.nodes,
                     fp.bytes,           fp.connectivity_bytes};
  int64_t *all = malloc((size_t)(N * size) * sizeof *all);
  if (!all)
    return;
  MPI_Gather(mine, N, MPI_INT64_T, all, N, MPI_INT64_T, 0, strata_comm());
  if (strata_rank() == 0)
    for (int r = 0; r < size; r++) {
      const int64_t *v = &all[N * r];
      printf("  rank %d: %lld elements, %lld bubble parts, %lld particles, %lld element "
             "handles, %lld elements known, %lld join bytes received\n",
             r, (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
             (long long)v[5]);
      printf("  rank %d octree: %lld leaves, %lld ghost leaves, %lld nodes, %lld bytes (%lld of "
             "them p4est's connectivity)\n",
             r, (long long)v[6], (long long)v[7], (long long)v[8], (long long)v[9],
             (long long)v[10]);
    }
  free(all);
}

/* Height through the largest bubble, else the middle. */
static double slice_height(strata_infer *inf)
{
  strata_bubble *b = NULL;
  int64_t n = 0;
  double z = 0.5, mass = -1;
  if (strata_infer_bubbles(inf, &b, NULL, &n) == 0)
    for (int64_t i = 0; i < n; i++)
      if (b[i].mass > mass) {
        mass = b[i].mass;
        z = b[i].center[2];
      }
  free(b);
  return z;
}

/* A step that some ranks may fail alone, agreed: the most negative code on
 * every rank, so that no rank goes on to a collective that another skips. */
static int agreed(int local)
{
  int all = local;
  if (MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, strata_comm()) != MPI_SUCCESS)
    return STRATA_EMPI;
  return all;
}

/* The same parameters on every rank (an MPMD run may pass each rank its
 * own): FNV-1a of their text, its minimum and maximum compared. */
static int same_parameters(const struct infer_params_text *t)
{
  uint64_t h = 14695981039346656037u;
  for (int k = 0; k < t->n; k++) {
    const char *c = t->value[k];
    do /* each value's terminating zero too, so "1" "23" differs from "12" "3" */
      h = (h ^ (unsigned char)*c) * 1099511628211u;
    while (*c++);
  }
  uint64_t v[2] = {h, ~h};
  if (MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MIN, strata_comm()) != MPI_SUCCESS)
    return STRATA_EMPI;
  return v[0] == ~v[1] ? 0 : STRATA_EINVAL;
}

static void echo_parameters(const struct infer_params_text *t)
{
  if (strata_rank() != 0)
    return;
  printf("strata infer %s, %d rank(s), parameters:\n", strata_version(), strata_size());
  for (int k = 0; k < t->n; k++)
    printf("  %-12s %s\n", t->key[k], t->value[k]);
  fflush(stdout);
}

/* One output's failure, told by rank 0 (which writes every output): the
 * option, the path and the cause. */
static int output_failed(int ret, const char *option, const char *path)
{
  if (ret && strata_rank() == 0)
    fprintf(stderr, "strata infer: %s %s: %s%s%s\n", option, path, strata_strerror(ret),
            *strata_error_message() ? ": " : "", strata_error_message());
  return ret;
}

struct output {
  const char *option, *path;
};

/* Before any work: every output path can be written by rank 0, no two
 * outputs share a path, and the slice fits a picture. */
static int check_outputs(const struct infer_options *o)
{
  const struct output outs[] = {{"--png", o->png}, {"--hdf5", o->hdf5}, {"--bubbles", o->bubbles}};
  enum { NOUT = sizeof outs / sizeof *outs };
  int local = 0;
  for (int k = 0; k < NOUT && strata_rank() == 0; k++) {
    if (!outs[k].path)
      continue;
    if (output_failed(strata_output_check(outs[k].path, 0), outs[k].option, outs[k].path))
      local = STRATA_EIO;
    for (int j = 0; j < k; j++)
      if (outs[j].path && !strcmp(outs[j].path, outs[k].path)) {
        fprintf(stderr, "strata infer: %s and %s both write %s\n", outs[j].option, outs[k].option,
                outs[k].path);
        local = STRATA_EINVAL;
      }
  }
  const int64_t pixels =
      infer_slice_pixels(o->job.root_blocks, o->job.block_cells, o->job.max_level);
  if (o->png && pixels > INFER_SLICE_MAX_PIXELS) {
    if (strata_rank() == 0)
      fprintf(stderr,
              "strata infer: --png %s: the slice would be %lld pixels wide, at most %d "
              "(a lower --max-level, or --png none)\n",
              o->png, (long long)pixels, INFER_SLICE_MAX_PIXELS);
    local = STRATA_EINVAL;
  }
  return agreed(local);
}

/* Once the hierarchy exists: room on disk for its HDF5 file, estimated
 * from today's leaves (the file grows with the hierarchy). */
static int check_hdf5_space(const struct infer_options *o, strata_amr *amr)
{
  int local = 0;
  if (o->hdf5 && strata_rank() == 0) {
    const strata_amr_params *p = strata_amr_get_params(amr);
    double cells = pow(p->block_cells, p->dim);
    double bytes = (double)strata_amr_num_leaves(amr) * p->nfields * cells *
                   (p->dtype == STRATA_FLOAT64 ? 8 : 4);
    local = output_failed(strata_output_check(o->hdf5, (uint64_t)bytes), "--hdf5", o->hdf5);
  }
  return agreed(local);
}

/* The bubble list as text, written by rank 0 with a header line
 * (columns in docs/infer.md). */
static int write_bubbles(strata_infer *inf, const char *path)
{
  strata_bubble *b = NULL;
  int64_t *element = NULL, n = 0;
  int ret = strata_infer_bubbles(inf, &b, &element, &n);
  strata_output *out = NULL;
  if (!ret && strata_rank() == 0 && !(ret = strata_output_begin(path, &out))) {
    FILE *f = strata_output_stream(out);
    if (f) {
      fprintf(f, "# id element x y z radius mass peak cells parts");
      for (int k = 0; k < strata_infer_values(inf); k++)
        fprintf(f, " %s", strata_infer_value_name(inf, k));
      fputc('\n', f);
    }
    for (int64_t i = 0; f && !ferror(f) && i < n; i++) {
      fprintf(f, "%lld %lld %.17g %.17g %.17g %.17g %.17g %.17g %lld %lld", (long long)b[i].id,
              (long long)element[i], b[i].center[0], b[i].center[1], b[i].center[2], b[i].radius,
              b[i].mass, b[i].peak, (long long)b[i].cells, (long long)b[i].parts);
      for (int k = 0; k < b[i].nvalues; k++)
        fprintf(f, " %.17g", b[i].values[k]);
      fputc('\n', f);
    }
    ret = strata_output_finish(out, f);
  }
  free(b);
  free(element);
  return agreed(ret);
}

static int write_hdf5(const struct infer_options *o, strata_infer *inf,
                      const struct infer_params_text *t)
{
  const char *keys[INFER_PARAMS_MAX + 2], *values[INFER_PARAMS_MAX + 2];
  char ranks[16];
  snprintf(ranks, sizeof ranks, "%d", strata_size());
  int n = 0;
  for (; n < t->n; n++) {
    keys[n] = t->key[n];
    values[n] = t->value[n];
  }
  keys[n] = "ranks";
  values[n++] = ranks;
  keys[n] = "strata_version";
  values[n++] = strata_version();
  return strata_infer_write_hdf5(inf, o->hdf5, keys, values, n);
}

/* Every output, each whatever became of the others; the first failure. */
static int write_outputs(const struct infer_options *o, struct infer_run *job, strata_infer *inf,
                         const struct infer_params_text *t)
{
  int first = 0, ret;
  if (o->bubbles) {
    ret = output_failed(write_bubbles(inf, o->bubbles), "--bubbles", o->bubbles);
    first = first ? first : ret;
  }
  if (o->png) {
    double z = o->slice >= 0 ? o->slice : slice_height(inf);
    ret = output_failed(infer_slice_png(job->amr, INFER_DENSITY, inf, z, o->png), "--png", o->png);
    if (!ret && strata_rank() == 0)
      printf("wrote %s (slice z = %.4f)\n", o->png, z);
    first = first ? first : ret;
  }
  if (o->hdf5) {
    ret = output_failed(write_hdf5(o, inf, t), "--hdf5", o->hdf5);
    if (!ret && strata_rank() == 0)
      printf("wrote %s\n", o->hdf5);
    first = first ? first : ret;
  }
  return first;
}

/* Runs the job; a failure it has told about already comes back positive. */
static int run(const struct infer_options *o)
{
  struct infer_params_text params;
  infer_options_describe(o, &params);
  int ret = same_parameters(&params);
  if (ret) {
    if (strata_rank() == 0)
      fprintf(stderr, "strata infer: the ranks were given different parameters (rank 0's: "
                      "below); every rank must run the same job\n");
    echo_parameters(&params);
    return 1;
  }
  echo_parameters(&params);
  if (check_outputs(o))
    return 1;
  struct infer_run job;
  strata_infer *inf = NULL;
  ret = infer_job_setup(&o->job, &job);
  if (!ret && check_hdf5_space(o, job.amr))
    ret = 1;
  if (!ret)
    ret = infer_job_method(&job, o->bulk, &inf);
  if (ret) {
    infer_job_teardown(&job);
    return ret;
  }
  double sums[STRATA_INFER_PHASES + 1] = {0}, start = starpu_timing_now() * 1e-6;
  double recall = 1, precision = 1; /* the worst cycle's, on the planted clumps */
  int64_t bubbles = 0, found = 0;
  strata_infer_stats st = {0};
  if (strata_rank() == 0)
    printf("cycle  leaves  elements created removed migrated  bubbles  transfers  messages  "
           "pred  meas  total s  rss MiB heap MiB\n");
  progress(o, 0, 0);
  for (int c = 0; c < o->cycles && !ret; c++) {
    /* Tasks submitted in this cycle carry its number in traces. */
    starpu_iteration_push((unsigned long)c);
    if (c > 0)
      ret = infer_job_evolve(&job, c);
    if (!ret)
      ret = strata_infer_run(inf, &st);
    starpu_iteration_pop();
    if (!ret && job.clump_centre)
      ret = infer_job_score(&job, inf, &bubbles, &found);
    if (ret)
      break;
    if (job.clump_centre) {
      recall = fmin(recall, (double)found / o->job.clumps);
      precision = fmin(precision, bubbles ? (double)found / (double)bubbles : 1.0);
    }
    for (int k = 0; k < STRATA_INFER_PHASES; k++)
      sums[k] += st.seconds[k];
    sums[STRATA_INFER_PHASES] += st.total;
    if (strata_rank() == 0) {
      if (!o->quiet && isatty(fileno(stderr)))
        fputs("\r\033[K", stderr);
      /* pred, meas: max/mean over the ranks of predicted and measured work */
      printf("%5d %7lld %9lld %7lld %7lld %8lld %8lld %10lld %9lld %5.2f %5.2f %8.3f %8.1f %8.1f\n",
             c, (long long)strata_amr_num_leaves(job.amr), (long long)st.elements,
             (long long)st.created, (long long)st.removed, (long long)st.migrated,
             (long long)st.bubbles, (long long)st.transfers, (long long)st.messages,
             st.predicted_mean > 0 ? st.predicted_max / st.predicted_mean : 1.0,
             st.measured_mean > 0 ? st.measured_max / st.measured_mean : 1.0, st.total,
             resident_mib(), heap_mib());
      fflush(stdout);
    }
    progress(o, c + 1, starpu_timing_now() * 1e-6 - start);
  }
  if (!ret && strata_rank() == 0) {
    printf("\nmode: %s, %d rank(s); mean time per cycle (phase ends on the slowest rank):\n",
           o->bulk ? "bulk-synchronous" : "task graph", strata_size());
    for (int k = 0; k < STRATA_INFER_PHASES; k++)
      printf("  %-9s %8.4f s\n", strata_infer_phase_name(k), sums[k] / o->cycles);
    printf("  %-9s %8.4f s\nlast cycle: %lld elements (max %lld per rank), %lld bubbles "
           "joined from %lld parts, %lld leaf deliveries, covered volume %.6f to %.6f\n",
           "total", sums[STRATA_INFER_PHASES] / o->cycles, (long long)st.elements,
           (long long)st.elements_max, (long long)st.bubbles, (long long)st.parts,
           (long long)st.leaf_bubbles, st.volume_min, st.volume_max);
    if (job.clump_centre)
      printf("planted clumps: the last cycle's %lld bubbles found %lld of %d; worst cycle: "
             "recall %.3f, precision %.3f\n",
             (long long)bubbles, (long long)found, o->job.clumps, recall, precision);
    if (st.transfer_share > 0)
      printf("placement: transfers weigh %.2f %% of the predicted work\n", 100 * st.transfer_share);
    if (st.parts_lost)
      printf("warning: %lld bubble parts did not fit their array's table and are missing from "
             "the bubbles (raise bubble_capacity)\n",
             (long long)st.parts_lost);
  }
  if (!ret)
    per_rank(&st, job.amr);
  if (!ret && write_outputs(o, &job, inf, &params))
    ret = 1;
  strata_infer_destroy(inf);
  infer_job_teardown(&job);
  return ret;
}

int cmd_infer(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    fputs(usage_text, stdout);
    return 0;
  }
  struct infer_options o;
  int ret = infer_options_parse(argc, argv, &o, stderr);
  if (ret)
    return ret;
  if (o.trace) {
#ifndef STARPU_USE_FXT
    fputs("strata infer: this StarPU has no FxT support: no trace will be written\n", stderr);
#endif
    setenv("STARPU_FXT_PREFIX", o.trace, 1);
    setenv("STARPU_FXT_TRACE", "1", 1);
  }
  ret = strata_init(NULL, NULL, NULL);
  if (!ret) {
    ret = run(&o);
    if (ret < 0 && strata_rank() == 0)
      fprintf(stderr, "strata infer: %s%s%s\n", strata_strerror(ret),
              *strata_error_message() ? ": " : "", strata_error_message());
    strata_finalize();
  } else
    fprintf(stderr, "strata infer: %s%s%s\n", strata_strerror(ret),
            *strata_error_message() ? ": " : "", strata_error_message());
  return ret ? 1 : 0;
}
