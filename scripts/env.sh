# Environment for running Strata's MPI programs on a small shared node (source it).
# StarPU workers spin when idle: without these settings, ranks fight for the
# cores and StarPU-MPI messages take milliseconds (see docs in README.md).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_hwloc_base_binding_policy=none
export STARPU_WORKERS_NOBIND=${STARPU_WORKERS_NOBIND:-1}
export STARPU_SILENT=${STARPU_SILENT:-1}
