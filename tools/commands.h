/* Subcommands of the `strata` tool. */
#ifndef STRATA_TOOLS_COMMANDS_H
#define STRATA_TOOLS_COMMANDS_H

/* Whether the arguments ask for --help (or -h). */
int wants_help(int argc, char **argv);

/* strata infer: the inference main job. */
int cmd_infer(int argc, char **argv);

/* strata model: describe a model file. */
int cmd_model(int argc, char **argv);

/* strata graph: inspect exported graph files. */
int cmd_graph(int argc, char **argv);

/* strata trace-summary: per-codelet and per-rank figures of a tasks.rec. */
int cmd_trace_summary(int argc, char **argv);

#endif
