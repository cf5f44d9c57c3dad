# Environment for running Strata's MPI programs on a small shared node (source it).
# StarPU workers spin when idle: without these settings, ranks fight for the
# cores and StarPU-MPI messages take milliseconds (see docs in README.md).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_hwloc_base_binding_policy=none
export STARPU_WORKERS_NOBIND=${STARPU_WORKERS_NOBIND:-1}
# STRATA_BIND_RANKS=1 (with STARPU_NCPU set first), when the ranks share the
# cores evenly (ranks x STARPU_NCPU at most the cores, or a multiple of them):
# the launcher binds each rank to STARPU_NCPU cores, shared round-robin beyond
# the cores, and StarPU keeps the rank's workers and StarPU-MPI thread inside
# them. On 2 cores, 2 or 4 ranks of one worker: 0.91-0.93x the time unbound;
# 3 ranks: 1.10x (docs/tuning.md).
if [ "${STRATA_BIND_RANKS:-0}" = 1 ]; then
  export OMPI_MCA_hwloc_base_binding_policy=core:overload-allowed
  export OMPI_MCA_rmaps_base_mapping_policy=slot:PE=${STARPU_NCPU:-1}
  export STARPU_WORKERS_NOBIND=0 STARPU_WORKERS_GETBIND=1
fi
export STARPU_SILENT=${STARPU_SILENT:-1}
