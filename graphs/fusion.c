/* Fused groups: the C source of one kernel evaluating a group's Virtual
 * nodes and its root per output element, through the same per-element
 * functions as the unfused kernels (ndarray_scalar.h), so that fused and
 * unfused results are identical. Shapes and strides are literals: the
 * compiler sees plain loops it can vectorise. The same group as a program
 * (kernels/fused_kernels.h) runs on GPUs, and on CPUs without a compiler. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

static const char *c_type(strata_dtype t)
{
  static const char *const names[] = {"uint8_t", "int8_t", "uint8_t", "int32_t",
                                      "int64_t", "float",  "double"};
  return names[t];
}

static void emit_double(FILE *f, double v)
{
  if (isnan(v))
    fputs("__builtin_nan(\"\")", f);
  else if (isinf(v))
    fputs(v > 0 ? "__builtin_inf()" : "-__builtin_inf()", f);
  else
    fprintf(f, "%a", v);
}

/* Index of node j among the group's leaves, or -1 for a member. */
static int leaf_index(const strata__group *G, int j)
{
  for (int l = 0; l < G->nleaves; l++)
    if (G->leaves[l] == j)
      return l;
  return -1;
}

/* The operation of member i for the metas in slot. */
static struct strata__ew_op member_op(const strata__node *nd, int i, const strata__slot *slot)
{
  strata__meta in[STRATA__EW_MAXOPS];
  for (int k = 0; k < nd->nin; k++)
    in[k] = slot[nd->in[k]].m;
  struct strata__ew_args a;
  strata__ew_geometry(&nd->p, in, nd->nin, &slot[i].m, &a);
  return strata__ew_op_of(&a);
}

/* Index of node j among the group's members, or -1. */
static int member_index(const strata__group *G, int j)
{
  for (int m = 0; m < G->nmembers; m++)
    if (G->members[m] == j)
      return m;
  return -1;
}

/* The kernel arguments of member m (node i), as a constant the compiler
 * folds. The source names members and leaves by their place in the group,
 * never by node number: groups alike anywhere in any graph share one
 * kernel (one compiler run, one cached object). */
static void emit_args(FILE *f, const strata__node *nd, int i, int m, const strata__slot *slot)
{
  struct strata__ew_op a = member_op(nd, i, slot);
  fprintf(f,
          "static const struct strata__ew_args A%d = {.fn = %d, .nops = %d, .scalar_at = %d, "
          ".exact_int = %d, .out_dtype = %d, .in_dtype = {%d, %d, %d}, .scalar = ",
          m, a.fn, a.nops, a.scalar_at, a.exact_int, a.out_dtype, a.in_dtype[0], a.in_dtype[1],
          a.in_dtype[2]);
  emit_double(f, a.scalar);
  fputs("};\n", f);
}

/* Flat offset of the current element in a buffer of the given strides;
 * in the output (`chunk`), which starts at row lo of the first dimension. */
static void emit_offset(FILE *f, int ndim, const int64_t *stride, int chunk)
{
  int any = 0;
  for (int d = 0; d < ndim; d++)
    if (stride[d]) {
      fprintf(f, "%s%lld * %si%d%s", any ? " + " : "", (long long)stride[d],
              chunk && d == 0 ? "(" : "", d, chunk && d == 0 ? " - lo)" : "");
      any = 1;
    }
  if (!any)
    fputc('0', f);
}

/* Member m; the last one is the root, which writes the output. */
static void emit_member(FILE *f, const strata_graph *g, const strata__group *G, int m,
                        const strata__slot *slot, const int64_t *out_stride)
{
  const int i = G->members[m];
  const strata__node *nd = &g->nodes[i];
  fprintf(f, "      {\n        const void *in[3] = {");
  for (int k = 0; k < nd->nin; k++) {
    int l = leaf_index(G, nd->in[k]);
    if (l >= 0)
      fprintf(f, "%s&x%d", k ? ", " : "", l);
    else
      fprintf(f, "%s&v%d", k ? ", " : "", member_index(G, nd->in[k]));
  }
  fputs("};\n", f);
  if (m == G->nmembers - 1) {
    fprintf(f, "        strata__ew_element(&A%d, in, zero, out, ", m);
    emit_offset(f, slot[i].m.ndim, out_stride, 1);
    fputs(");\n      }\n", f);
  } else {
    fprintf(f, "        strata__ew_element(&A%d, in, zero, &v%d, 0);\n      }\n", m, m);
  }
}

static int fused_source(const strata_graph *g, const strata__group *G, const strata__slot *slot,
                        char **source)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return STRATA_ENOMEM;
  const strata__meta *out = &slot[G->root].m;
  int nd = out->ndim;
  int64_t out_stride[STRATA_MAX_DIMS], stride[STRATA_MAX_DIMS];
  strata__broadcast_strides(out, out, out_stride);
  fputs("\nstatic const int64_t zero[3] = {0, 0, 0};\n", f);
  for (int m = 0; m < G->nmembers; m++)
    emit_args(f, &g->nodes[G->members[m]], G->members[m], m, slot);
  /* Rows [lo, hi) of the first dimension (one task per chunk of rows);
   * buf[0] is the output from row lo on. */
  fputs("void strata_fused(void *const *buf, int64_t lo, int64_t hi)\n{\n  void *out = buf[0];\n"
        "  (void)lo, (void)hi;\n",
        f);
  for (int l = 0; l < G->nleaves; l++) {
    const char *t = c_type(slot[G->leaves[l]].m.dtype);
    fprintf(f, "  const %s *restrict p%d = (const %s *)buf[%d];\n", t, l, t, l + 1);
  }
  for (int d = 0; d < nd; d++)
    if (d == 0)
      fputs("  for (int64_t i0 = lo; i0 < hi; i0++)\n", f);
    else
      fprintf(f, "%*sfor (int64_t i%d = 0; i%d < %lld; i%d++)\n", 2 + 2 * d, "", d, d,
              (long long)out->shape[d], d);
  fputs("    {\n", f);
  for (int l = 0; l < G->nleaves; l++) {
    const strata__meta *lm = &slot[G->leaves[l]].m;
    strata__broadcast_strides(lm, out, stride);
    fprintf(f, "      const %s x%d = p%d[", c_type(lm->dtype), l, l);
    emit_offset(f, nd, stride, 0);
    fputs("];\n", f);
  }
  for (int m = 0; m < G->nmembers; m++) {
    if (m + 1 < G->nmembers)
      fprintf(f, "      %s v%d;\n", c_type(slot[G->members[m]].m.dtype), m);
    emit_member(f, g, G, m, slot, out_stride);
  }
  fputs("    }\n}\n", f);
  if (fclose(f) != 0) {
    free(buf);
    return STRATA_ENOMEM;
  }
  *source = buf;
  return 0;
}

/* Metas the kernel depends on: members (root last), then leaves. */
static int group_metas(const strata__group *G, const strata__slot *slot, strata__meta *m)
{
  int n = 0;
  for (int k = 0; k < G->nmembers; k++)
    m[n++] = slot[G->members[k]].m;
  for (int l = 0; l < G->nleaves; l++)
    m[n++] = slot[G->leaves[l]].m;
  return n;
}

/* The group as a program (kernels/fused_kernels.h) for the metas in slot. */
static int group_program(const strata_graph *g, const strata__group *G, const strata__slot *slot,
                         struct strata__fused_program *p)
{
  const strata__meta *out = &slot[G->root].m;
  if (G->nmembers > STRATA__FUSED_MAXMEMBERS || G->nleaves > STRATA__FUSED_MAXLEAVES)
    return strata__fail(STRATA_EINVAL, "a fused group of %d nodes and %d leaves is too large",
                        G->nmembers, G->nleaves);
  memset(p, 0, sizeof *p); /* padding too: the program is hashed */
  p->ndim = out->ndim;
  memcpy(p->shape, out->shape, sizeof p->shape);
  p->nleaves = G->nleaves;
  for (int l = 0; l < G->nleaves; l++) {
    p->leaf_dtype[l] = slot[G->leaves[l]].m.dtype;
    strata__broadcast_strides(&slot[G->leaves[l]].m, out, p->leaf_stride[l]);
  }
  p->nmembers = G->nmembers;
  for (int m = 0; m < G->nmembers; m++) {
    const strata__node *nd = &g->nodes[G->members[m]];
    struct strata__fused_member *mb = &p->member[m];
    mb->op = member_op(nd, G->members[m], slot);
    for (int k = 0; k < nd->nin; k++) {
      int l = leaf_index(G, nd->in[k]);
      mb->src[k] = l >= 0 ? l : -1 - member_index(G, nd->in[k]);
    }
  }
  return 0;
}

/* FNV-1a of the program's bytes. */
static uint64_t program_id(const struct strata__fused_program *p)
{
  uint64_t h = 14695981039346656037ull;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t k = 0; k < sizeof *p; k++)
    h = (h ^ b[k]) * 1099511628211ull;
  return h;
}

int strata__group_kernel(const strata_graph *g, strata__group *G, const strata__slot *slot)
{
  int n = G->nmembers + G->nleaves;
  strata__meta *m = calloc((size_t)n, sizeof *m);
  if (!m)
    return STRATA_ENOMEM;
  group_metas(G, slot, m);
  int same = G->kernel_metas && G->kernel_generation == strata__jit_generation();
  for (int k = 0; same && k < n; k++)
    same = strata__meta_equal(&m[k], &G->kernel_metas[k]);
  if (same) {
    free(m);
    return 0;
  }
  int ret = group_program(g, G, slot, &G->program);
  if (ret) {
    free(m);
    return ret;
  }
  G->id = program_id(&G->program);
  char *source = NULL;
  ret = fused_source(g, G, slot, &source);
  if (!ret)
    ret = strata__jit_build(source, &G->kernel);
  free(source);
  if (ret == STRATA_ENOMEM) {
    free(m);
    return ret;
  }
  if (ret) {
    strata_log(STRATA_LOG_WARN, "fused kernel unavailable (%s): its %d nodes run as a program",
               strata_error_message(), G->nmembers);
    strata__clear_error();
    G->kernel = NULL;
  }
  free(G->kernel_metas);
  G->kernel_metas = m;
  G->kernel_generation = strata__jit_generation();
  return 0;
}
