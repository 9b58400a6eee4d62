/* Particles to the ranks whose id blocks hold them (id_blocks.h). */
#include "dist/id_blocks.h"

#include "dist/dist.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

size_t id_block_first(size_t n, int r)
{
    int ranks = dist_size();
    /* n · r / ranks without overflow for any n below 2^64 / ranks */
    return n / (size_t)ranks * (size_t)r + n % (size_t)ranks * (size_t)r / (size_t)ranks;
}

/* The rank whose block holds id: the last r with id_block_first(n, r) <= id. */
static int owner_of(size_t n, size_t id, int ranks)
{
    int r = (int)((double)id / (double)n * ranks);
    r = r < 0 ? 0 : r >= ranks ? ranks - 1 : r;
    while (r > 0 && id_block_first(n, r) > id)
        r--;
    while (r + 1 < ranks && id_block_first(n, r + 1) <= id)
        r++;
    return r;
}

void id_blocks_exchange(size_t n, size_t m, const uint32_t *id, int k, const void *const *src,
                        const size_t *elem, void *const *dst)
{
    int P = dist_size(), me = dist_rank();
    size_t rec = sizeof(uint32_t);
    for (int a = 0; a < k; a++)
        rec += elem[a];
    uint64_t *scount = xcalloc((size_t)P, sizeof *scount), *rcount = xcalloc((size_t)P, 8);
    size_t *at = xcalloc((size_t)P + 1, sizeof *at);
    int *dest = xmalloc((m ? m : 1) * sizeof *dest);
    for (size_t i = 0; i < m; i++)
        scount[dest[i] = owner_of(n, id[i], P)]++;
    for (int r = 0; r < P; r++)
        at[r + 1] = at[r] + (size_t)scount[r] * rec;
    /* Records (id, then each array's bytes), packed by destination in this rank's order. */
    unsigned char *send = xmalloc(at[P] + 1);
    for (size_t i = 0; i < m; i++) {
        unsigned char *p = send + at[dest[i]];
        at[dest[i]] += rec;
        memcpy(p, &id[i], sizeof id[i]);
        p += sizeof id[i];
        for (int a = 0; a < k; a++) {
            memcpy(p, (const unsigned char *)src[a] + i * elem[a], elem[a]);
            p += elem[a];
        }
    }
    free(dest);
    dist_alltoall_u64(scount, rcount);
    size_t got = 0;
    for (int r = 0; r < P; r++)
        got += (size_t)rcount[r];
    unsigned char *recv = xmalloc(got * rec + 1);
    dist_alltoallv_records(send, scount, recv, rcount, rec);
    free(send);
    size_t first = id_block_first(n, me), rows = id_block_first(n, me + 1) - first;
    /* Every id of the block exactly once: no particle lost or doubled by the exchanges. */
    unsigned char *seen = xcalloc(rows ? rows : 1, 1);
    size_t doubled = 0;
    for (size_t j = 0; j < got; j++) {
        const unsigned char *p = recv + j * rec;
        uint32_t pid;
        memcpy(&pid, p, sizeof pid);
        p += sizeof pid;
        size_t row = (size_t)pid - first;
        if (pid < first || row >= rows) { /* owner_of sent it here: never */
            mz_error("output: particle id %u sent to the rank of ids %zu to %zu", pid, first,
                     first + rows);
            dist_abort(MZ_EXIT_RUNTIME);
        }
        doubled += seen[row]++ > 0;
        for (int a = 0; a < k; a++) {
            memcpy((unsigned char *)dst[a] + row * elem[a], p, elem[a]);
            p += elem[a];
        }
    }
    if (got != rows || doubled) {
        mz_error("output: %zu particle records for the %zu ids %zu to %zu (%zu of them twice): "
                 "the ranks lost or doubled particles",
                 got, rows, first, first + rows, doubled);
        dist_abort(MZ_EXIT_RUNTIME);
    }
    free(seen);
    free(recv);
    free(scount);
    free(rcount);
    free(at);
}
