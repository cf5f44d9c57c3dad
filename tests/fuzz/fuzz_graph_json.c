/* Fuzzing target: the graph JSON loader. Properties: a rejected document
 * leaves no graph; an accepted one exports to JSON that loads to a graph
 * exporting the same JSON (nodes, memory modes), plans its memory and
 * writes DOT without failing. */
#include <strata/graph.h>

#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  strata_graph *g = (strata_graph *)fuzz_devnull(), *back = NULL; /* must become NULL */
  if (strata_graph_from_json((const char *)data, size, &g) != 0) {
    if (g)
      fuzz_fail("a rejected document left a graph");
    return 0;
  }
  char *json = NULL;
  if (strata_graph_to_json(g, &json) != 0)
    fuzz_fail("an accepted graph does not export");
  if (strata_graph_from_json(json, strlen(json), &back) != 0)
    fuzz_fail("the export does not load: %s", json);
  char *again = NULL;
  if (strata_graph_to_json(back, &again) != 0 || strcmp(again, json) != 0)
    fuzz_fail("the export changed the graph: %s", json);
  free(again);
  int ret = strata_graph_compile(g);
  if (ret != 0 && ret != STRATA_EINVAL)
    fuzz_fail("compile gave %d", ret);
  if (strata_graph_write_dot(g, fuzz_devnull()) != 0)
    fuzz_fail("DOT export failed");
  free(json);
  strata_graph_destroy(back);
  strata_graph_destroy(g);
  fuzz_check_no_live_objects();
  return 0;
}
