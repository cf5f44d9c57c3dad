/* Fuzzing target: the command-line parser of `strata infer`. The input is
 * its arguments, one per line. Properties: accepted options are in their
 * documented ranges; a rejection says why on one line. */
#include "fuzz_util.h"
#include "infer_options.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  enum { MAX_ARGS = 64 };
  if (size > 4096)
    return 0;
  char *text = malloc(size + 1), *argv[MAX_ARGS + 1] = {"infer"};
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = 0;
  int argc = 1;
  for (char *line = text; line && argc < MAX_ARGS; argc++) {
    argv[argc] = line;
    line = strchr(line, '\n');
    if (line)
      *line++ = 0;
  }
  struct infer_options o;
  if (infer_options_parse(argc, argv, &o, fuzz_devnull()) == 0) {
    const struct infer_job *j = &o.job;
    if (o.cycles < 1 || j->root_blocks < 1 || j->block_cells < 1 || j->max_level < 0 ||
        j->grid < 1 || j->level_base < 0 || j->level_array < 0 || j->level_infer < 0 ||
        !(j->sigma >= 0) || !(j->threshold >= 0) || (o.slice != -1 && !(o.slice >= 0)))
      fuzz_fail("accepted options out of range");
  }
  free(text);
  return 0;
}
