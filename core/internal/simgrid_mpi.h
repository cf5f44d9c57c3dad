/* MPI for the host side of Strata when it runs under SimGrid (a build
 * against `scripts/build-starpu.sh --simgrid`, where CMake force-includes
 * this header in every file). Not installed.
 *
 * StarPU runs each simulated rank's main() as a simulated thread of its
 * own; SMPI only answers MPI calls from the thread it started for the rank,
 * which StarPU-MPI keeps for its progress loop. The calls that Strata, its
 * tools and benchmarks make from main() are therefore renamed here to
 * collectives and point-to-point messages built on SimGrid messages
 * between the ranks' nodes (simgrid_mpi.c); p4est, built for the
 * simulation with this header forced in, goes through them too. Every
 * communicator spans MPI_COMM_WORLD, as StarPU-MPI under SMPI requires (a
 * duplicate keeps its own sequence of calls), except the one rank of a node
 * (MPI_Comm_split_type): each simulated rank is a node of its own. */
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
/* Point to point, for p4est (built for the simulation with this header). */
int strata__sim_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, MPI_Request *req);
int strata__sim_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                     MPI_Comm comm);
int strata__sim_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      MPI_Request *req);
int strata__sim_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                     MPI_Status *status);
int strata__sim_probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int strata__sim_get_count(const MPI_Status *status, MPI_Datatype type, int *count);
int strata__sim_wait(MPI_Request *req, MPI_Status *status);
int strata__sim_waitall(int n, MPI_Request *reqs, MPI_Status *statuses);
int strata__sim_waitsome(int n, MPI_Request *reqs, int *outcount, int *indices,
                         MPI_Status *statuses);

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
#define MPI_Isend           strata__sim_isend
#define MPI_Send            strata__sim_send
#define MPI_Irecv           strata__sim_irecv
#define MPI_Recv            strata__sim_recv
#define MPI_Probe           strata__sim_probe
#define MPI_Get_count       strata__sim_get_count
#define MPI_Wait            strata__sim_wait
#define MPI_Waitall         strata__sim_waitall
#define MPI_Waitsome        strata__sim_waitsome
#endif
#endif
