/* CUDA inference-array kernels against the CPU ones: the criterion (block
 * mean and fixed reference), bubble marking with leaf lists,
 * and float64-to-float32 transfers. Exit 77 without a GPU. */
#include <math.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "kernels/amr_kernels.h"
#include "kernels/bubble_kernels.h"
#include "kernels/infer_kernels.h"

enum { M = 16, SIDE = M + 2, CELLS = SIDE * SIDE * SIDE, CAP = 8 };

int main(void)
{
  check_cuda_device();
  srand(5);
  double *field = malloc(CELLS * sizeof *field);
  for (int i = 0; i < CELLS; i++)
    field[i] = exp(3.0 * rand() / RAND_MAX);
  void *dfield = check_device_copy(field, CELLS * sizeof *field);
  for (int local = 0; local < 2; local++) {
    struct strata__infer_criterion c = {.is_double = 1,
                                        .ghost = 1,
                                        .cells = M,
                                        .mask = 4,
                                        .local_mean = local,
                                        .threshold = local ? 8 : 15,
                                        .reference = 1};
    uint8_t cpu[64] = {0}, *gpu = check_device_copy(cpu, sizeof cpu);
    strata__infer_criterion_cpu(&c, field, cpu);
    CHECK_EQ(strata__infer_criterion_cuda(&c, dfield, gpu, NULL), 0);
    check_device_bytes(gpu, cpu, sizeof cpu);
  }

  enum { COLS = STRATA__BUBBLE_FIELDS + 2 }; /* two value channels */
  double table[(1 + CAP) * COLS] = {CAP + 2}, list[(1 + CAP) * COLS] = {0};
  for (int b = 1; b <= CAP; b++)
    for (int k = 0; k < COLS; k++)
      table[b * COLS + k] = k == STRATA__BUBBLE_RADIUS ? 0.05 : (double)rand() / RAND_MAX;
  double *marks = calloc(CELLS, sizeof *marks);
  double *dtable = check_device_copy(table, sizeof table),
         *dlist = check_device_copy(list, sizeof list);
  double *dmarks = check_device_copy(marks, CELLS * sizeof *marks);
  struct strata__infer_mark mk = {.is_double = 1,
                                  .ghost = 1,
                                  .cells = M,
                                  .h = 0.5 / M,
                                  .lower = {0.25, 0.25, 0.25},
                                  .array_lo = {0.2, 0.2, 0.2},
                                  .array_hi = {0.6, 0.6, 0.6},
                                  .columns = COLS,
                                  .table_capacity = CAP,
                                  .list_capacity = 3};
  strata__infer_mark_cpu(&mk, table, list, marks);
  CHECK_EQ(strata__infer_mark_cuda(&mk, dtable, dlist, dmarks, NULL), 0);
  check_device_bytes(dlist, list, sizeof list);
  check_device_bytes(dmarks, marks, CELLS * sizeof *marks);
  cudaFree(dtable);

  for (int kind = STRATA__AMR_COPY; kind <= STRATA__AMR_PROLONG; kind++) {
    struct strata__amr_xfer x = {.kind = kind,
                                 .dim = 3,
                                 .factor = kind == STRATA__AMR_COPY ? 1 : 2,
                                 .is_double = 1,
                                 .dst_float = 1,
                                 .dst_offset = 7};
    for (int a = 0; a < 3; a++) {
      x.count[a] = kind == STRATA__AMR_RESTRICT ? M / 2 : M - 2;
      x.dst_dims[a] = M;
      x.src_dims[a] = SIDE;
      x.src_start[a] = kind == STRATA__AMR_PROLONG ? 2 : 1;
    }
    float cpu[M * M * M + 7] = {0};
    float *gpu = check_device_copy(cpu, sizeof cpu);
    strata__amr_xfer_cpu(&x, cpu, field);
    CHECK_EQ(strata__amr_xfer_cuda(&x, gpu, dfield, NULL), 0);
    float back[M * M * M + 7];
    cudaMemcpy(back, gpu, sizeof back, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int i = 0; i < M * M * M + 7; i++)
      worst = fmax(worst, fabs((double)back[i] - cpu[i]) / (1 + fabs(cpu[i])));
    CHECK(worst < 1e-6); /* the GPU blends in a different order */
    cudaFree(gpu);
  }
  cudaFree(dfield);
  free(field);
  free(marks);
  return check_status();
}
