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

static void print_info(strata_graph *g, FILE *out)
{
  fprintf(out, "nodes: %d\ninputs:", strata_graph_nnodes(g));
  for (int i = 0; i < strata_graph_ninputs(g); i++)
    fprintf(out, " %s", strata_graph_input_name(g, i));
  fprintf(out, "\noutputs:");
  for (int o = 0; o < strata_graph_noutputs(g); o++)
    fprintf(out, " %s", strata_graph_output_name(g, o));
  fprintf(out, "\nkernels per run: %d (fused groups count once)\n", strata_graph_nkernels(g));
  for (int i = 0; i < strata_graph_nnodes(g); i++) {
    strata_memory_mode m;
    char mode[64];
    strata_node_memory_mode(g, strata_graph_node_name(g, i), &m);
    strata_memory_mode_format(m, mode, sizeof mode);
    fprintf(out, "  %-24s %s\n", strata_graph_node_name(g, i), mode);
  }
}

int cmd_graph(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    puts("usage: strata graph dot FILE.json\n"
         "       strata graph plan FILE.json\n"
         "       strata graph info FILE.json\n\n"
         "Read a graph exported by strata_graph_save() (schema in docs/deferred.md),\n"
         "check it, and print it in Graphviz DOT ('dot': render with\n"
         "'strata graph dot g.json | dot -Tsvg > g.svg'), or compiled with the default\n"
         "memory modes in DOT ('plan': modes in the labels, Virtual nodes dashed,\n"
         "one cluster per fused kernel; see docs/memory-modes.md), or summarise its\n"
         "inputs, outputs, kernels per run and each node's memory mode ('info').");
    return 0;
  }
  if (argc != 3)
    return usage_error("expected a subcommand and one file");
  int dot = strcmp(argv[1], "dot") == 0, plan = strcmp(argv[1], "plan") == 0;
  if (!dot && !plan && strcmp(argv[1], "info") != 0)
    return usage_error("unknown subcommand");
  strata_graph *g;
  int ret = strata_graph_load(argv[2], &g);
  if (ret) {
    fprintf(stderr, "strata graph: %s: %s (%s)\n", argv[2], strata_strerror(ret),
            strata_error_message());
    return 1;
  }
  if (!dot)
    ret = strata_graph_compile(g);
  if (ret)
    fprintf(stderr, "strata graph: %s: %s (%s)\n", argv[2], strata_strerror(ret),
            strata_error_message());
  else if (dot || plan)
    ret = strata_graph_write_dot(g, stdout);
  else
    print_info(g, stdout);
  strata_graph_destroy(g);
  return ret ? 1 : 0;
}
