/* CUDA global-indexer kernels against the CPU ones, byte for byte: row
 * gathers through a map with repeats, scatters through a permutation
 * (rows outside it left alone), variable-size block copies (through a map
 * with repeats and without one), and the
 * put rules' row picks (last and first request) and reductions (every
 * request, in writer order) against put_apply. Rows of
 * odd byte counts, grids of many blocks. Exit 77 without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "kernels/gindexer_kernels.h"
#include "kernels/merge_kernels.h"

enum { ROWS = 1500, BLOCKS = 300 };

static unsigned char *random_bytes(size_t n)
{
  unsigned char *b = malloc(n);
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)rand();
  return b;
}

static void check_gather_scatter(size_t row)
{
  const size_t bytes = ROWS * row;
  unsigned char *src = random_bytes(bytes), *dst = random_bytes(bytes);
  int64_t map[ROWS], perm[ROWS];
  for (int k = 0; k < ROWS; k++) {
    map[k] = rand() % ROWS;
    perm[k] = k;
  }
  for (int k = ROWS - 1; k > 0; k--) { /* shuffled: its first half names distinct rows */
    int j = rand() % (k + 1);
    int64_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  void *dsrc = check_device_copy(src, bytes), *dmap = check_device_copy(map, sizeof map),
       *dperm = check_device_copy(perm, sizeof perm);

  void *ddst = check_device_copy(dst, bytes);
  strata__gather_rows_cpu(dst, src, map, ROWS, row);
  CHECK_EQ(strata__gather_rows_cuda(ddst, dsrc, dmap, ROWS, row, NULL), 0);
  check_device_bytes(ddst, dst, bytes);

  ddst = check_device_copy(dst, bytes);
  strata__scatter_rows_cpu(dst, src, perm, ROWS / 2, row);
  CHECK_EQ(strata__scatter_rows_cuda(ddst, dsrc, dperm, ROWS / 2, row, NULL), 0);
  check_device_bytes(ddst, dst, bytes);

  cudaFree(dsrc);
  cudaFree(dmap);
  cudaFree(dperm);
  free(src);
  free(dst);
}

/* Source blocks of 0..9 items; copies of BLOCKS of them (through a map
 * with repeats, or the first BLOCKS in order) to disjoint places, with
 * gaps, in dst. */
static void check_blocks(size_t item, int mapped)
{
  int64_t displ[4 * BLOCKS + 1] = {0}, map[BLOCKS], at[BLOCKS], end = 0;
  for (int i = 0; i < 4 * BLOCKS; i++)
    displ[i + 1] = displ[i] + rand() % 10;
  for (int k = 0; k < BLOCKS; k++) {
    map[k] = rand() % (4 * BLOCKS);
    int64_t i = mapped ? map[k] : k;
    at[k] = end + rand() % 3;
    end = at[k] + displ[i + 1] - displ[i];
  }
  const size_t src_bytes = (size_t)displ[4 * BLOCKS] * item, dst_bytes = (size_t)end * item;
  unsigned char *src = random_bytes(src_bytes), *dst = random_bytes(dst_bytes);
  void *dsrc = check_device_copy(src, src_bytes), *ddst = check_device_copy(dst, dst_bytes),
       *ddispl = check_device_copy(displ, sizeof displ), *dmap = check_device_copy(map, sizeof map),
       *dat = check_device_copy(at, sizeof at);
  strata__copy_blocks_cpu(dst, src, displ, mapped ? map : NULL, at, BLOCKS, item);
  CHECK_EQ(
      strata__copy_blocks_cuda(ddst, dsrc, ddispl, mapped ? dmap : NULL, dat, BLOCKS, item, NULL),
      0);
  check_device_bytes(ddst, dst, dst_bytes);
  cudaFree(dsrc);
  cudaFree(ddispl);
  cudaFree(dmap);
  cudaFree(dat);
  free(src);
  free(dst);
}

/* Requests to random owned rows (some get none, some several), in writer
 * order: the CPU applies them in arrival order (local), CUDA through the
 * same requests listed per row (csr, req, built here by a stable counting
 * sort). Picking the last (which = -1) or the first (which = 0) is what
 * put_apply does for the LAST and FIRST rules; rows without requests keep
 * their bytes. */
static void check_picks(int64_t count)
{
  const size_t row = (size_t)count * strata_dtype_size(STRATA_FLOAT32);
  enum { NREQ = 2 * ROWS };
  int64_t csr[ROWS + 1] = {0}, req[NREQ], local[NREQ], at[ROWS + 1];
  const int64_t nreq = NREQ;
  for (int64_t k = 0; k < nreq; k++) {
    local[k] = rand() % ROWS;
    csr[local[k] + 1]++;
  }
  for (int i = 0; i < ROWS; i++)
    csr[i + 1] += csr[i];
  memcpy(at, csr, sizeof at);
  for (int64_t k = 0; k < nreq; k++)
    req[at[local[k]]++] = k;
  unsigned char *inbox = random_bytes((size_t)nreq * row), *dist = random_bytes(ROWS * row);
  void *dinbox = check_device_copy(inbox, (size_t)nreq * row),
       *dcsr = check_device_copy(csr, sizeof csr), *dreq = check_device_copy(req, sizeof req);
  for (int which = -1; which <= 0; which++) {
    void *ddist = check_device_copy(dist, ROWS * row);
    strata__put_apply_cpu(which < 0 ? STRATA__PUT_LAST : STRATA__PUT_FIRST, STRATA_SUM,
                          STRATA_FLOAT32, count, dist, inbox, local, nreq);
    CHECK_EQ(strata__pick_rows_cuda(ddist, dinbox, dcsr, dreq, ROWS, row, which, NULL), 0);
    check_device_bytes(ddist, dist, ROWS * row);
  }
  /* Reductions of the same bytes read as int32 (SUM and PROD wrap) and as
   * uint8 under MAX: every request merged in order. */
  const strata_op ops[] = {STRATA_SUM, STRATA_PROD, STRATA_MAX};
  const strata_dtype types[] = {STRATA_INT32, STRATA_INT32, STRATA_UINT8};
  for (int o = 0; o < 3; o++) {
    int64_t values = (int64_t)row / (int64_t)strata_dtype_size(types[o]);
    void *ddist = check_device_copy(dist, ROWS * row);
    strata__put_apply_cpu(STRATA__PUT_REDUCE, ops[o], types[o], values, dist, inbox, local, nreq);
    CHECK_EQ(strata__merge_rows_cuda(ops[o], types[o], ddist, dinbox, (size_t)values, ROWS, dcsr,
                                     dreq, NULL),
             0);
    check_device_bytes(ddist, dist, ROWS * row);
  }
  cudaFree(dinbox);
  cudaFree(dcsr);
  cudaFree(dreq);
  free(inbox);
  free(dist);
}

int main(void)
{
  check_cuda_device();
  srand(11);
  const size_t rows[] = {1, 3, 12, 40};
  for (int r = 0; r < 4; r++) {
    check_gather_scatter(rows[r]);
    check_blocks(rows[r], 0);
    check_blocks(rows[r], 1);
  }
  check_picks(1);
  check_picks(5);
  return check_status();
}
