/* dist/: one simulation over several processes started by mpirun (Open MPI): the ranks and
 * their agreement (dist.c), the decomposition of the neighbour grid into slabs and the exchange
 * of particles between ranks (slabs.c). Built with MPI when the Makefile finds it (MZ_MPI); a
 * single process never starts MPI, so a plain run is unchanged. May include: build/, device/,
 * scene/, util/.
 *
 * The ranks: who this process is, and collective answers every rank agrees on. In a single
 * process (no mpirun, or a build without MPI) every function here is the identity. */
#ifndef MZ_DIST_H
#define MZ_DIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Start MPI when a launcher (mpirun, srun) started this process; otherwise nothing. Errors then
 * name the rank, and ranks other than 0 print no warnings (rank 0 prints the same ones). On a
 * CPU device each rank limits PoCL to its share of the node's cores. 0, or -1 after reporting. */
int dist_init(int *argc, char ***argv);
/* Leave MPI (every rank, at exit). */
void dist_finalize(void);
/* End every rank at once after a failure only this rank saw (never a hang in a collective). */
_Noreturn void dist_abort(int code);

int dist_rank(void);
int dist_size(void);
/* This rank among the ranks of its node: which GPU it takes. */
int dist_local_rank(void);
/* More than one rank: the simulation is distributed. */
bool dist_active(void);

/* Agreement: the largest / smallest value over all ranks, a sum (exact: integers). */
int dist_max_int(int v);
long dist_min_long(long v);
double dist_max_double(double v);
void dist_max_floats(float *v, int n); /* each of the n, in place */
void dist_sum_u64(uint64_t *v, size_t n);
/* Bitwise OR over all ranks, in place: a word one rank sets and the others leave 0 reaches every
 * rank bit for bit (a float's -0 or NaN too, which a sum would not promise). */
void dist_or_u32(uint32_t *v, size_t n);
/* Every rank r sends send[q] to rank q and receives recv[r'] from each rank r'. */
void dist_alltoall_u64(const uint64_t *send, uint64_t *recv);
/* The same with k values to and from each rank (send[k q .. k q + k) to rank q). */
void dist_alltoall_u64s(const uint64_t *send, uint64_t *recv, int k);
/* Records of rec bytes: scount[q] to rank q, packed in rank order in send; rcount[q] from
 * each rank q (dist_alltoall_u64 of the send counts), packed in rank order into recv. Counts
 * and offsets below 2^31 records (else every rank stops with an error). */
void dist_alltoallv_records(const void *send, const uint64_t *scount, void *recv,
                            const uint64_t *rcount, size_t rec);
/* Point to point, any size (sent in pieces of 1 GiB); the receiver knows the size. */
void dist_send_bytes(int to, const void *buf, size_t bytes);
void dist_recv_bytes(int from, void *buf, size_t bytes);
/* Rank 0 gets every rank's bytes (mine, bytes long, under 2^31) one after the other in rank
 * order into all; NULL elsewhere. The total on rank 0. */
size_t dist_gather_bytes(const void *mine, size_t bytes, void *all);
/* Every rank gets rank 0's bytes. */
void dist_bcast(void *buf, size_t bytes);
/* Each rank's string, one per rank, joined on rank 0 as "0: s0; 1: s1; ..." (NULL elsewhere;
 * the caller frees). */
char *dist_gather_strings(const char *s);

#endif
