/* Strata inside an application that runs StarPU tasks of its own.
 *   test_embed strata|app-mpi|app-starpu|app-mpi-starpu
 * strata: Strata starts MPI and StarPU. app-mpi: the application started
 * MPI and StarPU-MPI (starpu_mpi_init_conf); app-starpu: only StarPU,
 * without MPI; app-mpi-starpu: MPI and StarPU, not StarPU-MPI. In the app-*
 * modes strata_init attaches and strata_finalize leaves StarPU running.
 *
 * In every mode an inference cycle runs beside two application tasks: a
 * gate that holds a worker until the test opens it, submitted before the
 * cycle, and a time step submitted once strata_infer_submit returned.
 * strata_infer_wait must return while the gate is still closed (it waits
 * for the method's tasks only), strata_infer_submit before the model has
 * run on every array (the cycle overlaps the caller), and the bubbles must
 * be the two blobs. */
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <starpu_mpi.h>

#include "blob_method.h"
#include "step_model.h"

/* ---- the application's tasks ---- */

enum { GATE_CLOSED, GATE_OPEN, GATE_PASSED, GATE_TIMED_OUT };
static atomic_int gate = GATE_CLOSED;

static void gate_cpu(void *buffers[], void *arg)
{
  (void)buffers;
  (void)arg;
  for (int ms = 0; ms < 60000; ms++) { /* a broken wait must not hang the test */
    if (atomic_load(&gate) == GATE_OPEN) {
      atomic_store(&gate, GATE_PASSED);
      return;
    }
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  atomic_store(&gate, GATE_TIMED_OUT);
}

static void time_step_cpu(void *buffers[], void *arg)
{
  (void)arg;
  ((double *)STARPU_VECTOR_GET_PTR(buffers[0]))[0] += 1;
}

static struct starpu_codelet gate_cl = {
    .cpu_funcs = {gate_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "app_gate"};
static struct starpu_codelet step_cl = {
    .cpu_funcs = {time_step_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "app_step"};

static struct starpu_task *app_task(struct starpu_codelet *cl, starpu_data_handle_t h)
{
  struct starpu_task *t = starpu_task_create();
  t->cl = cl;
  t->handles[0] = h;
  t->detach = 0;
  CHECK_EQ(starpu_task_submit(t), 0);
  return t;
}

/* ---- the step model (step_model.h), 50 ms an array ---- */

static atomic_int arrays_done;

static void slow_step(void *user, const float *in, float *out, int64_t n, void *scratch)
{
  nanosleep(&(struct timespec){0, 50000000}, NULL);
  step_cpu(user, in, out, n, scratch);
  atomic_fetch_add(&arrays_done, 1);
}

/* ---- the cycle beside the application ---- */

static void cycle_beside_app(void)
{
  const double centres[6] = {0.3, 0.3, 0.3, 0.7, 0.6, 0.7};
  strata_amr *amr = blob_hierarchy(2, centres);
  strata_model *model = step_model_with(slow_step);
  strata_infer *inf = blob_method(amr, model);

  double gate_value = 0, step_value = 0;
  starpu_data_handle_t gate_h, step_h;
  starpu_variable_data_register(&gate_h, STARPU_MAIN_RAM, (uintptr_t)&gate_value,
                                sizeof gate_value);
  starpu_vector_data_register(&step_h, STARPU_MAIN_RAM, (uintptr_t)&step_value, 1,
                              sizeof step_value);
  struct starpu_task *gate_task = app_task(&gate_cl, gate_h);

  atomic_store(&arrays_done, 0);
  CHECK_EQ(strata_infer_submit(inf), 0);
  const int done_at_submit = atomic_load(&arrays_done);
  CHECK_EQ(strata_infer_submit(inf), STRATA_ESTATE); /* one cycle in flight */
  int8_t flag = 0;
  CHECK_EQ(strata_amr_adapt_flags(amr, &flag, NULL), STRATA_ESTATE); /* the plan uses the tree */
  CHECK_EQ(strata_amr_destroy(amr), STRATA_ESTATE);
  struct starpu_task *step_task = app_task(&step_cl, step_h);

  strata_infer_stats st;
  CHECK_EQ(strata_infer_wait(inf, &st), 0);
  CHECK_EQ(atomic_load(&gate), GATE_CLOSED); /* the application's task is not waited for */
  CHECK_EQ(strata_infer_wait(inf, &st), STRATA_ESTATE);
  CHECK_EQ(st.bubbles, 2);
  CHECK(st.submit_seconds > 0 && st.submit_seconds < st.total);
  CHECK_EQ(atomic_load(&arrays_done), st.elements_local);
  /* The callers got their threads back before the model had run on every
   * array (submit's last step is an agreement, so count over all ranks). */
  int done_at_submits = 0;
  MPI_Allreduce(&done_at_submit, &done_at_submits, 1, MPI_INT, MPI_SUM, strata_comm());
  CHECK(done_at_submits < st.elements);
  CHECK_EQ(starpu_task_wait(step_task), 0);
  CHECK_EQ(step_value, 1);

  /* A second cycle through strata_infer_run, the gate still closed. */
  CHECK_EQ(strata_infer_run(inf, &st), 0);
  CHECK_EQ(st.bubbles, 2);
  CHECK_EQ(atomic_load(&gate), GATE_CLOSED);
  atomic_store(&gate, GATE_OPEN);
  CHECK_EQ(starpu_task_wait(gate_task), 0);
  CHECK_EQ(atomic_load(&gate), GATE_PASSED);

  /* Destroying a method with a cycle in flight waits for that cycle. */
  CHECK_EQ(strata_infer_submit(inf), 0);
  CHECK_EQ(strata_infer_destroy(inf), 0);
  starpu_data_unregister(gate_h);
  starpu_data_unregister(step_h);
  CHECK_EQ(strata_model_destroy(model), 0);
  CHECK_EQ(strata_amr_destroy(amr), 0);
}

/* StarPU still serves the application after strata_finalize. */
static void app_still_runs(void)
{
  CHECK(starpu_is_initialized());
  double v = 0;
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&v, 1, sizeof v);
  CHECK_EQ(starpu_task_wait(app_task(&step_cl, h)), 0);
  starpu_data_unregister(h);
  CHECK_EQ(v, 1);
}

/* Ranks that start StarPU at once on a fresh STARPU_HOME race on its bus
 * calibration files (StarPU 1.3 aborts on a half-written one): strata_init
 * starts a node's ranks one after another, and an application would too.
 * Here, before MPI exists in some modes, each rank gets a home of its own. */
static void own_starpu_home(void)
{
  const char *home = getenv("STARPU_HOME"), *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!home || !rank)
    return;
  static char dir[1024];
  snprintf(dir, sizeof dir, "%s/rank%s", home, rank);
  mkdir(home, 0755);
  mkdir(dir, 0755);
  setenv("STARPU_HOME", dir, 1);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "strata";
  const int app_mpi = !strcmp(mode, "app-mpi") || !strcmp(mode, "app-mpi-starpu");
  const int app_starpu = strcmp(mode, "strata") != 0;
  const int app_starpu_mpi = !strcmp(mode, "app-mpi");
  if (app_starpu && !app_mpi && strcmp(mode, "app-starpu")) {
    fprintf(stderr, "usage: %s [strata|app-mpi|app-starpu|app-mpi-starpu]\n", argv[0]);
    return 2;
  }
  if (app_starpu)
    own_starpu_home();
  if (app_mpi) {
    int provided;
    CHECK_EQ(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
  }
  if (app_starpu_mpi)
    CHECK_EQ(starpu_mpi_init_conf(&argc, &argv, 0, MPI_COMM_WORLD, NULL), 0);
  else if (app_starpu)
    CHECK_EQ(starpu_init(NULL), 0);

  strata_config cfg;
  strata_config_init(&cfg);
  cfg.starpu_mpi_running = app_starpu_mpi;
  CHECK_EQ(strata_init(&argc, &argv, &cfg), 0);
  cycle_beside_app();
  CHECK_EQ(strata_finalize(), 0);

  if (app_starpu) {
    app_still_runs();
    if (app_starpu_mpi)
      starpu_mpi_shutdown(); /* it also stops the StarPU it started */
    else
      starpu_shutdown();
  }
  CHECK(!starpu_is_initialized());
  if (app_mpi)
    MPI_Finalize();
  if (!check_failures)
    printf("test_embed %s: ok\n", mode);
  return check_status();
}
