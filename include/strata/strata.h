/** @file strata.h
 *  @brief The umbrella header: every public header except those that
 *  include StarPU's (strata/starpu.h, StarPU interoperability, and
 *  strata/mesh.h, an application's mesh). Applications include this one; Strata's own
 *  sources include the headers they use. */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <strata/amr.h>
#include <strata/array.h>
#include <strata/error.h>
#include <strata/gindexer.h>
#include <strata/graph.h>
#include <strata/infer.h>
#include <strata/io.h>
#include <strata/merge.h>
#include <strata/model.h>
#include <strata/runtime.h>
#include <strata/shard.h>
#include <strata/types.h>
#include <strata/version.h>
#include <strata/zspace.h>

#endif
