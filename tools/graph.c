/* strata graph: inspect exported graphs (JSON files of strata_graph_save). */
#include <stdio.h>
#include <string.h>

#include <strata/strata.h>

#include "commands.h"

static int usage_error(const char *why)
{
  fprintf(stderr, "strata graph: %s (see --help)\n", why);
  return 2;
}

static void print_info(const strata_graph *g, FILE *out)
{
  fprintf(out, "nodes: %d\ninputs:", strata_graph_nnodes(g));
  for (int i = 0; i < strata_graph_ninputs(g); i++)
    fprintf(out, " %s", strata_graph_input_name(g, i));
  fprintf(out, "\noutputs:");
  for (int o = 0; o < strata_graph_noutputs(g); o++)
    fprintf(out, " %s", strata_graph_output_name(g, o));
  fprintf(out, "\n");
}

int cmd_graph(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    puts("usage: strata graph dot FILE.json\n"
         "       strata graph info FILE.json\n\n"
         "Read a graph exported by strata_graph_save() (schema in docs/deferred.md),\n"
         "check it, and print it in Graphviz DOT ('dot': render with\n"
         "'strata graph dot g.json | dot -Tsvg > g.svg') or summarise its inputs,\n"
         "outputs and node count ('info').");
    return 0;
  }
  if (argc != 3)
    return usage_error("expected a subcommand and one file");
  int dot = strcmp(argv[1], "dot") == 0;
  if (!dot && strcmp(argv[1], "info") != 0)
    return usage_error("unknown subcommand");
  strata_graph *g;
  int ret = strata_graph_load(argv[2], &g);
  if (ret) {
    fprintf(stderr, "strata graph: %s: %s (%s)\n", argv[2], strata_strerror(ret),
            strata_error_message());
    return 1;
  }
  if (dot)
    ret = strata_graph_write_dot(g, stdout);
  else
    print_info(g, stdout);
  strata_graph_destroy(g);
  return ret ? 1 : 0;
}
