/* strata model info: what a model file holds and what it costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "commands.h"

/* prefix and "a" when the three are all a, else "zxyxx". */
static void per_axis(char *buf, size_t size, const char *prefix, long long z, long long y,
                     long long x)
{
  if (z == y && y == x)
    snprintf(buf, size, "%s%lld", prefix, x);
  else
    snprintf(buf, size, "%s%lldx%lldx%lld", prefix, z, y, x);
}

static void print_layer(int i, const strata_model_layer *L)
{
  char inputs[64] = "", shape[160] = "-", type[48], extent[72], k[40], s[40], d[40];
  snprintf(type, sizeof type, "%s%s%s", L->type, L->activation ? "+" : "",
           L->activation ? L->activation : "");
  for (int j = 0, at = 0; j < L->ninputs && at < (int)sizeof inputs - 8; j++)
    at += snprintf(inputs + at, sizeof inputs - (size_t)at, j ? ",%d" : "%d", L->inputs[j]);
  per_axis(extent, sizeof extent, "", L->extent[0], L->extent[1], L->extent[2]);
  per_axis(k, sizeof k, "k", L->kernel[0], L->kernel[1], L->kernel[2]);
  per_axis(s, sizeof s, L->kernel[0] ? "s" : "x", L->stride[0], L->stride[1], L->stride[2]);
  per_axis(d, sizeof d, "d", L->dilation[0], L->dilation[1], L->dilation[2]);
  if (L->groups)
    snprintf(shape, sizeof shape, "%s %s %s g%d", k, s, d, L->groups);
  else if (L->kernel[0])
    snprintf(shape, sizeof shape, "%s %s %s", k, s, d);
  else if (L->stride[0])
    snprintf(shape, sizeof shape, "%s", s);
  printf("  %3d %-24s %-10s %8d %11s %-16s %9lld %10.1f  %s\n", i, type, inputs, L->channels,
         extent, shape, (long long)L->parameters, L->flops * 1e-6, L->cuda ? "CPU CUDA" : "CPU");
}

static void print_model(const strata_model *m, const char *path, long long n)
{
  int in_c, out_c, noutputs = 0, nlayers = 0;
  strata_model_output kind;
  strata_model_describe(m, &in_c, &out_c, &kind);
  printf("model: %s (%s)\ninput: [%d, n, n, n]", strata_model_name(m), path, in_c);
  for (int c = 0; c < in_c && strata_model_input_field(m, c); c++)
    printf("%s%s", c ? ", " : " fields ", strata_model_input_field(m, c));
  printf("\noutput: [%d, n, n, n], %s\n", out_c,
         kind == STRATA_MODEL_PROBABILITY ? "probability in the first channel" : "field");
  strata_model_outputs(m, 0, &noutputs, NULL, NULL, NULL);
  for (int o = 0; o < noutputs; o++) {
    const char *name;
    int first, channels;
    strata_model_outputs(m, o, NULL, &name, &first, &channels);
    printf("  %-16s channels %d to %d\n", name, first, first + channels - 1);
  }
  strata_model_layer_info(m, 0, n, &nlayers, NULL);
  if (!nlayers) {
    puts("layers: none described (an application's plug-in)");
    return;
  }
  printf("layers at n = %lld:\n    # %-24s %-10s %8s %11s %-16s %9s %10s  %s\n", n, "type",
         "inputs", "channels", "extent", "window", "params", "MFLOP", "devices");
  long long params = 0;
  double flops = 0;
  for (int i = 0; i < nlayers; i++) {
    strata_model_layer L;
    if (strata_model_layer_info(m, i, n, NULL, &L) != 0) {
      printf("  (%s)\n", strata_error_message());
      return;
    }
    print_layer(i, &L);
    params += L.parameters;
    flops += L.flops;
  }
  printf("total: %d layers, %lld parameters, %.3f GFLOP per inference at n = %lld\n", nlayers,
         params, flops * 1e-9, n);
}

int cmd_model(int argc, char **argv)
{
  if (wants_help(argc, argv)) {
    puts("usage: strata model info FILE [--extent N]\n\n"
         "Load a model (ONNX, or Strata's JSON) and print its input and outputs, its\n"
         "layers with their channels, resolution, convolution shape, parameters and\n"
         "operations at extent N (default: the extent the model is made for, if its\n"
         "graph fixes one, else 64), and the devices each can run on.");
    return 0;
  }
  long long n = 0; /* default: the model's own extent, else 64 */
  int usable =
      argc == 3 || (argc == 5 && strcmp(argv[3], "--extent") == 0 && (n = atoll(argv[4])) >= 1);
  if (!usable || strcmp(argv[1], "info") != 0) {
    fprintf(stderr, "strata model: expected 'info FILE [--extent N]' (see --help)\n");
    return 2;
  }
  setenv("STARPU_NCPU", "1", 0);
  int ret = strata_init(NULL, NULL, NULL);
  if (ret) {
    fprintf(stderr, "strata model: %s (%s)\n", strata_strerror(ret), strata_error_message());
    return 1;
  }
  strata_model *m;
  if ((ret = strata_model_load(argv[2], &m)))
    fprintf(stderr, "strata model: %s (%s)\n", strata_strerror(ret), strata_error_message());
  else {
    int64_t fixed = 0;
    strata_model_fixed_extent(m, &fixed);
    print_model(m, argv[2], n ? n : fixed ? (long long)fixed : 64);
    strata_model_destroy(m);
  }
  strata_finalize();
  return ret ? 1 : 0;
}
