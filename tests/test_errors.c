/* Error strings and type/operator names: every code has its own text. */
#include <string.h>

#include "check.h"

int main(void)
{
  const int codes[] = {STRATA_OK,    STRATA_EINVAL, STRATA_ERANGE,  STRATA_ENOMEM,
                       STRATA_ETYPE, STRATA_ESTATE, STRATA_EMPI,    STRATA_ESTARPU,
                       STRATA_EIO,   STRATA_ENODEV, STRATA_EINPLACE};
  const int n = sizeof codes / sizeof *codes;
  for (int i = 0; i < n; i++) {
    const char *s = strata_strerror(codes[i]);
    CHECK(s && *s && strcmp(s, "unknown error") != 0);
    for (int j = 0; j < i; j++)
      CHECK(strcmp(s, strata_strerror(codes[j])) != 0);
    CHECK(codes[i] <= 0);
  }
  CHECK(strcmp(strata_strerror(-1000), "unknown error") == 0);
  CHECK(strcmp(strata_strerror(5), "unknown error") == 0);
  CHECK(strcmp(strata_dtype_name(STRATA_FLOAT32), "float32") == 0);
  CHECK(strcmp(strata_dtype_name(STRATA_BOOL), "bool") == 0);
  CHECK(strcmp(strata_dtype_name(STRATA_NDTYPES), "invalid") == 0);
  CHECK(strcmp(strata_op_name(STRATA_BOR), "bor") == 0);
  CHECK(strcmp(strata_op_name((strata_op)-1), "invalid") == 0);
  CHECK_EQ(strata_dtype_size(STRATA_INT64), 8);
  CHECK_EQ(strata_dtype_size(STRATA_UINT8), 1);
  CHECK_EQ(strata_dtype_size(STRATA_NDTYPES), 0);
  return check_status();
}
