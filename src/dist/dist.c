/* The ranks (dist.h). Without MZ_MPI, or in a process no launcher started, one rank. */
#include "dist/dist.h"

#include "util/err.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef MZ_MPI
#include <mpi.h>
#endif

static int world_rank, world_size = 1, node_rank;

int dist_rank(void) { return world_rank; }
int dist_size(void) { return world_size; }
int dist_local_rank(void) { return node_rank; }
bool dist_active(void) { return world_size > 1; }

#ifdef MZ_MPI
static int node_size = 1;
static bool mpi_started;

/* Whether a launcher started this process (Open MPI's mpirun, PMIx or PMI launchers such as
 * srun). A plain run does not start MPI: Open MPI's singleton start spawns a helper daemon. */
static bool launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                       "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* PoCL's CPU device runs one thread per core unless told otherwise: ranks sharing a node each
 * take their share (a user's own setting wins). */
static void share_cpu_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long share = cores / node_size > 0 ? cores / node_size : 1;
    char v[32];
    snprintf(v, sizeof v, "%ld", share);
    setenv("POCL_MAX_PTHREAD_COUNT", v, 0); /* PoCL up to 4 */
    setenv("POCL_CPU_MAX_CU_COUNT", v, 0);  /* PoCL 4 and later */
}

int dist_init(int *argc, char ***argv)
{
    if (!launched())
        return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        mz_error("MPI_Init failed");
        return -1;
    }
    mpi_started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (world_size > 1) {
        mz_msg_rank(world_rank, world_rank != 0);
        share_cpu_cores();
    }
    return 0;
}

void dist_finalize(void)
{
    if (mpi_started)
        MPI_Finalize();
    mpi_started = false;
}

_Noreturn void dist_abort(int code)
{
    if (mpi_started && world_size > 1) {
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    exit(code);
}

int dist_max_int(int v)
{
    if (world_size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

long dist_min_long(long v)
{
    if (world_size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    return v;
}

double dist_max_double(double v)
{
    if (world_size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

void dist_max_floats(float *v, int n)
{
    if (world_size > 1 && n > 0)
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
}

void dist_sum_u64(uint64_t *v, size_t n)
{
    if (world_size > 1 && n > 0)
        MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
}

void dist_or_u32(uint32_t *v, size_t n)
{
    for (size_t at = 0; world_size > 1 && at < n;) { /* MPI's counts are int */
        size_t m = n - at < (size_t)INT_MAX ? n - at : (size_t)INT_MAX;
        MPI_Allreduce(MPI_IN_PLACE, v + at, (int)m, MPI_UINT32_T, MPI_BOR, MPI_COMM_WORLD);
        at += m;
    }
}

void dist_alltoall_u64(const uint64_t *send, uint64_t *recv) { dist_alltoall_u64s(send, recv, 1); }

void dist_alltoall_u64s(const uint64_t *send, uint64_t *recv, int k)
{
    if (world_size == 1) {
        memcpy(recv, send, (size_t)k * sizeof *recv);
        return;
    }
    MPI_Alltoall(send, k, MPI_UINT64_T, recv, k, MPI_UINT64_T, MPI_COMM_WORLD);
}

/* Counts and offsets in records: MPI's int counts then reach 2^31 records, not bytes. */
static int *record_offsets(const uint64_t *count, int **displ)
{
    int *c = xmalloc((size_t)world_size * sizeof *c);
    *displ = xmalloc((size_t)world_size * sizeof **displ);
    uint64_t at = 0;
    for (int r = 0; r < world_size; r++) {
        if (count[r] > INT_MAX || at > INT_MAX) {
            mz_error("an exchange of %llu records at offset %llu (MPI counts stop at 2^31)",
                     (unsigned long long)count[r], (unsigned long long)at);
            dist_abort(MZ_EXIT_RUNTIME);
        }
        c[r] = (int)count[r];
        (*displ)[r] = (int)at;
        at += count[r];
    }
    return c;
}

void dist_alltoallv_records(const void *send, const uint64_t *scount, void *recv,
                            const uint64_t *rcount, size_t rec)
{
    int *sd, *rd, *sc = record_offsets(scount, &sd), *rc = record_offsets(rcount, &rd);
    MPI_Datatype t;
    MPI_Type_contiguous((int)rec, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    MPI_Alltoallv(send, sc, sd, t, recv, rc, rd, t, MPI_COMM_WORLD);
    MPI_Type_free(&t);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

#define MSG_CHUNK ((size_t)1 << 30)

void dist_send_bytes(int to, const void *buf, size_t bytes)
{
    for (size_t at = 0; at < bytes; at += MSG_CHUNK) {
        size_t n = bytes - at < MSG_CHUNK ? bytes - at : MSG_CHUNK;
        MPI_Send((const char *)buf + at, (int)n, MPI_BYTE, to, 0, MPI_COMM_WORLD);
    }
}

void dist_recv_bytes(int from, void *buf, size_t bytes)
{
    for (size_t at = 0; at < bytes; at += MSG_CHUNK) {
        size_t n = bytes - at < MSG_CHUNK ? bytes - at : MSG_CHUNK;
        MPI_Recv((char *)buf + at, (int)n, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

size_t dist_gather_bytes(const void *mine, size_t bytes, void *all)
{
    if (world_size == 1) {
        if (mine != all)
            memcpy(all, mine, bytes);
        return bytes;
    }
    int n = (int)bytes, *counts = NULL, *displs = NULL;
    if (world_rank == 0) {
        counts = xcalloc((size_t)world_size, sizeof *counts);
        displs = xcalloc((size_t)world_size, sizeof *displs);
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; world_rank == 0 && r < world_size; r++) {
        displs[r] = (int)total;
        total += (size_t)counts[r];
    }
    /* Rank 0's own bytes may already sit where they belong (the start of all). */
    const void *send = world_rank == 0 && mine == all ? MPI_IN_PLACE : mine;
    MPI_Gatherv(send, n, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return total;
}

void dist_bcast(void *buf, size_t bytes)
{
    if (world_size > 1)
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

char *dist_gather_strings(const char *s)
{
    if (world_size == 1)
        return world_rank == 0 ? xstrdup(s) : NULL;
    char mine[256] = {0};
    snprintf(mine, sizeof mine, "%s", s);
    char *all = world_rank == 0 ? xmalloc(sizeof mine * (size_t)world_size) : NULL;
    MPI_Gather(mine, sizeof mine, MPI_CHAR, all, sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (world_rank != 0)
        return NULL;
    mz_str out = {0};
    for (int r = 0; r < world_size; r++)
        str_addf(&out, "%s%d: %s", r ? "; " : "", r, all + sizeof mine * (size_t)r);
    free(all);
    return out.s;
}
#else
int dist_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}
void dist_finalize(void) {}
_Noreturn void dist_abort(int code) { exit(code); }
int dist_max_int(int v) { return v; }
long dist_min_long(long v) { return v; }
double dist_max_double(double v) { return v; }
void dist_max_floats(float *v, int n)
{
    (void)v;
    (void)n;
}
void dist_sum_u64(uint64_t *v, size_t n)
{
    (void)v;
    (void)n;
}
void dist_or_u32(uint32_t *v, size_t n)
{
    (void)v;
    (void)n;
}
void dist_alltoall_u64(const uint64_t *send, uint64_t *recv) { recv[0] = send[0]; }
void dist_alltoall_u64s(const uint64_t *send, uint64_t *recv, int k)
{
    memcpy(recv, send, (size_t)k * sizeof *recv);
}
void dist_alltoallv_records(const void *send, const uint64_t *scount, void *recv,
                            const uint64_t *rcount, size_t rec)
{
    (void)rcount;
    memcpy(recv, send, (size_t)scount[0] * rec);
}
void dist_send_bytes(int to, const void *buf, size_t bytes)
{
    (void)to;
    (void)buf;
    (void)bytes;
}
void dist_recv_bytes(int from, void *buf, size_t bytes)
{
    (void)from;
    (void)buf;
    (void)bytes;
}
size_t dist_gather_bytes(const void *mine, size_t bytes, void *all)
{
    if (mine != all)
        memcpy(all, mine, bytes);
    return bytes;
}
void dist_bcast(void *buf, size_t bytes)
{
    (void)buf;
    (void)bytes;
}
char *dist_gather_strings(const char *s) { return xstrdup(s); }
#endif
