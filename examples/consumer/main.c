/* A program outside the Strata tree: merges two arrays and checks the sum. */
#include <stdio.h>

#include <strata/strata.h>

int main(int argc, char **argv)
{
  int ret = strata_init(&argc, &argv, NULL);
  if (ret) {
    fprintf(stderr, "consumer: %s\n", strata_strerror(ret));
    return ret == STRATA_ENODEV ? 77 : 1;
  }
  int64_t n = 16;
  int32_t a_data[16], b_data[16];
  for (int i = 0; i < 16; i++) {
    a_data[i] = i;
    b_data[i] = 100 * i;
  }
  strata_array *a, *b;
  strata_array_wrap(a_data, 1, &n, STRATA_INT32, &a);
  strata_array_wrap(b_data, 1, &n, STRATA_INT32, &b);
  strata_merge(a, b, STRATA_SUM);
  strata_array_destroy(b);
  strata_array_destroy(a); /* waits for the merge, data back in a_data */
  int bad = 0;
  for (int i = 0; i < 16; i++)
    bad += a_data[i] != 101 * i;
  printf("consumer: Strata %s, merge %s\n", strata_version(), bad ? "WRONG" : "ok");
  strata_finalize();
  return bad != 0;
}
