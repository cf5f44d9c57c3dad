/* MPI for the host side of Strata when it runs under SimGrid (a build
 * against `scripts/build-starpu.sh --simgrid`, where CMake force-includes
 * this header in every file). Not installed.
 *
 * StarPU runs each simulated rank's main() as a simulated thread of its
 * own; SMPI only answers MPI calls from the thread it started for the rank,
 * which StarPU-MPI keeps for its progress loop. The calls that Strata, its
 * tools and benchmarks make from main() are therefore renamed here to
 * collectives built on SimGrid messages between the ranks' nodes
 * (simgrid_mpi.c). Every communicator spans MPI_COMM_WORLD, as StarPU-MPI
 * under SMPI requires (a duplicate keeps its own sequence of calls), except
 * the one rank of a node (MPI_Comm_split_type): each simulated rank is a
 * node of its own. */
#ifndef STRATA_INTERNAL_SIMGRID_MPI_H
#define STRATA_INTERNAL_SIMGRID_MPI_H

#include <mpi.h>

int strata__sim_initialized(int *flag);
int strata__sim_query_thread(int *provided);
int strata__sim_comm_rank(MPI_Comm comm, int *rank);
int strata__sim_comm_size(MPI_Comm comm, int *size);
int strata__sim_comm_dup(MPI_Comm comm, MPI_Comm *dup);
int strata__sim_comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out);
int strata__sim_comm_free(MPI_Comm *comm);
int strata__sim_barrier(MPI_Comm comm);
int strata__sim_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int strata__sim_reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                       int root, MPI_Comm comm);
int strata__sim_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                          MPI_Comm comm);
int strata__sim_exscan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm);
int strata__sim_gather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                       MPI_Datatype rtype, int root, MPI_Comm comm);
int strata__sim_gatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                        const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                        MPI_Comm comm);
int strata__sim_allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                          MPI_Datatype rtype, MPI_Comm comm);
int strata__sim_allgatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                           const int *rcounts, const int *displs, MPI_Datatype rtype,
                           MPI_Comm comm);
int strata__sim_alltoall(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                         MPI_Datatype rtype, MPI_Comm comm);
int strata__sim_alltoallv(const void *send, const int *scounts, const int *sdispls,
                          MPI_Datatype stype, void *recv, const int *rcounts, const int *rdispls,
                          MPI_Datatype rtype, MPI_Comm comm);
double strata__sim_wtime(void);

#ifndef STRATA_SIMGRID_MPI_IMPLEMENTATION
#define MPI_Initialized     strata__sim_initialized
#define MPI_Query_thread    strata__sim_query_thread
#define MPI_Comm_rank       strata__sim_comm_rank
#define MPI_Comm_size       strata__sim_comm_size
#define MPI_Comm_dup        strata__sim_comm_dup
#define MPI_Comm_split_type strata__sim_comm_split_type
#define MPI_Comm_free       strata__sim_comm_free
#define MPI_Barrier         strata__sim_barrier
#define MPI_Bcast           strata__sim_bcast
#define MPI_Reduce          strata__sim_reduce
#define MPI_Allreduce       strata__sim_allreduce
#define MPI_Exscan          strata__sim_exscan
#define MPI_Gather          strata__sim_gather
#define MPI_Gatherv         strata__sim_gatherv
#define MPI_Allgather       strata__sim_allgather
#define MPI_Allgatherv      strata__sim_allgatherv
#define MPI_Alltoall        strata__sim_alltoall
#define MPI_Alltoallv       strata__sim_alltoallv
#define MPI_Wtime           strata__sim_wtime
#endif
#endif
