/* The particle exchange of a distributed run (slabs.h, slabs_exchange): each step, every owned
 * particle to the windows its layer is in now.
 *
 * What goes to rank r is three parts, in layer order: the halo below r's layers, r's own layers
 * (particles that change owner; to this rank itself, those that stay), the halo above. A halo
 * copy carries only the buffers a neighbour loop reads (grid_register_owned's buffers — ids,
 * bodies, inverse masses — stay with the owner): what the all-to-all moves is mostly halo. */
#include "dist/dist.h"
#include "dist/slabs.h"
#include "dist/slabs_internal.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

enum { PART_BELOW, PART_OWNED, PART_ABOVE, PARTS };

/* The all-to-all's unit: parts are padded to it, so that its int counts reach 32 GiB. */
#define UNIT 16

static bool part_has(const mz_grid *g, int part, int k)
{
    return part == PART_OWNED || !g->reg[k].owner_only;
}

/* Bytes of the fields before buffer k in a part of n particles (fields one after another). */
static size_t field_offset(const mz_grid *g, int part, int k, uint64_t n)
{
    size_t off = 0;
    for (int j = 0; j < k; j++)
        off += part_has(g, part, j) ? (size_t)n * g->reg[j].elem : 0;
    return off;
}

static size_t part_bytes(const mz_grid *g, int part, uint64_t n)
{
    size_t b = field_offset(g, part, g->n_reg, n);
    return (b + UNIT - 1) / UNIT * UNIT;
}

/* Each rank's block: its parts' byte offsets (off[PARTS r + p]) and its size in units. */
static size_t blocks(const mz_grid *g, int P, int me, const uint64_t *count, size_t *off,
                     uint64_t *units)
{
    size_t at = 0;
    for (int r = 0; r < P; r++) {
        size_t start = at;
        for (int p = 0; p < PARTS; p++) {
            off[PARTS * r + p] = at;
            at += r == me ? 0 : part_bytes(g, p, count[PARTS * r + p]);
        }
        units[r] = (at - start) / UNIT;
    }
    return at;
}

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Cut the layer axis at every rank's window and slab edges and give each layer its segment's
 * number: each part of each window is then a run of whole segments, so sorting the owned
 * particles by segment (a few bits: one radix pass, where sorting by layer took several) lays
 * every part out as one range, each in the particles' order. targets[4r .. 4r + 3]: the
 * segments that begin r's window, its slab, the layers above its slab and what is past its
 * window. Returns the key bits, or -1. */
static int write_segments(mz_slabs *s, cl_uint *targets)
{
    int P = s->ranks, E = 4 * P, m = 0;
    int *edges = xmalloc((size_t)E * sizeof *edges), *sorted = xmalloc((size_t)E * sizeof *sorted);
    for (int r = 0; r < P; r++) {
        slabs_window(s, r, &edges[4 * r], &edges[4 * r + 3]);
        edges[4 * r + 1] = s->lo[r];
        edges[4 * r + 2] = s->hi[r];
    }
    memcpy(sorted, edges, (size_t)E * sizeof *sorted);
    qsort(sorted, (size_t)E, sizeof *sorted, compare_ints);
    for (int i = 0; i < E; i++)
        if (m == 0 || sorted[i] != sorted[m - 1])
            sorted[m++] = sorted[i];
    /* segment(l) = the edges at or below l */
    for (int l = 0, e = 0; l < s->layers; l++) {
        while (e < m && sorted[e] <= l)
            e++;
        s->segment_of_layer[l] = (cl_uint)e;
    }
    for (int i = 0; i < E; i++) {
        cl_uint seg = 0;
        while ((int)seg < m && sorted[seg] <= edges[i])
            seg++;
        targets[i] = seg;
    }
    free(edges);
    free(sorted);
    int bits = 0;
    while ((1 << bits) <= m)
        bits++;
    return cl_ok(clEnqueueWriteBuffer(s->grid->cl->queue, s->segments, CL_FALSE, 0,
                                      4 * (size_t)s->layers, s->segment_of_layer, 0, NULL, NULL),
                 "clEnqueueWriteBuffer(slab segments)")
               ? bits
               : -1;
}

/* The device's pack buffer for at least `need` bytes (contents not kept). */
static bool grow_pack(mz_slabs *s, size_t need)
{
    if (need <= s->pack_cap && s->pack)
        return true;
    if (s->pack)
        clReleaseMemObject(s->pack);
    s->pack_cap = need + need / 4;
    s->pack = mz_cl_buffer(s->grid->cl, CL_MEM_READ_WRITE, s->pack_cap, NULL,
                           "clCreateBuffer(exchange pack)");
    return s->pack != NULL;
}

/* Pack on the device what goes to other ranks (their blocks, part by part, field by field)
 * and start its copy into the pinned send buffer (*done: that copy's event). */
static bool pack_sends(mz_slabs *s, const cl_uint *at, const uint64_t *count, const size_t *off,
                       size_t bytes, cl_event *done)
{
    mz_grid *g = s->grid;
    if (!grow_pack(s, bytes + UNIT) ||
        !mz_cl_pinned_room(g->cl, (void **)&s->send, &s->send_pin, &s->send_cap, bytes + UNIT))
        return false;
    for (int r = 0; r < s->ranks; r++)
        for (int p = 0; p < PARTS && r != s->rank; p++) {
            uint64_t n = count[PARTS * r + p];
            for (int k = 0; k < g->n_reg && n > 0; k++)
                if (part_has(g, p, k) &&
                    grid_gather_at(g, *g->reg[k].buf, g->reg[k].elem, s->vals, at[4 * r + p],
                                   (size_t)n, s->pack,
                                   off[PARTS * r + p] + field_offset(g, p, k, n)) != 0)
                    return false;
        }
    return cl_ok(clEnqueueReadBuffer(g->cl->queue, s->pack, CL_FALSE, 0, bytes ? bytes : UNIT,
                                     s->send, 0, NULL, done),
                 "clEnqueueReadBuffer(exchange)") &&
           cl_ok(clFlush(g->cl->queue), "clFlush(exchange)");
}

/* The new window in the scratch buffers, by source rank: what lower ranks sent, this rank's
 * own that stay (gathered from their sorted slots: own_only), what higher ranks sent (from the
 * receive buffer: !own_only) — the single process's order. The fields a halo copy does not
 * carry are left as they were. Then (!own_only) the scratch buffers become the particles'. */
static bool lay_out(mz_slabs *s, const cl_uint *at, const uint64_t *rcount, const size_t *roff,
                    bool own_only)
{
    mz_grid *g = s->grid;
    for (int k = 0; k < g->n_reg; k++) {
        size_t e = g->reg[k].elem, dst = 0;
        for (int r = 0; r < s->ranks; r++) {
            if (r == s->rank) { /* its own: the three parts are one range of sorted slots */
                size_t all = rcount[PARTS * r] + rcount[PARTS * r + 1] + rcount[PARTS * r + 2];
                if (own_only && grid_gather_at(g, *g->reg[k].buf, e, s->vals, at[4 * r], all,
                                               g->reg[k].scratch, dst * e) != 0)
                    return false;
                dst += all;
                continue;
            }
            for (int p = 0; p < PARTS; p++) {
                size_t n = (size_t)rcount[PARTS * r + p], at_src = roff[PARTS * r + p];
                if (!own_only && n > 0 && part_has(g, p, k) &&
                    !cl_ok(clEnqueueWriteBuffer(g->cl->queue, g->reg[k].scratch, CL_FALSE,
                                                dst * e, n * e,
                                                s->recv + at_src + field_offset(g, p, k, n), 0,
                                                NULL, NULL),
                           "clEnqueueWriteBuffer(exchange)"))
                    return false;
                dst += n;
            }
        }
    }
    if (own_only)
        return cl_ok(clFlush(g->cl->queue), "clFlush(exchange)");
    for (int k = 0; k < g->n_reg; k++) {
        cl_mem t = *g->reg[k].buf;
        *g->reg[k].buf = g->reg[k].scratch;
        g->reg[k].scratch = t;
    }
    return true;
}

int slabs_exchange(mz_slabs *s, cl_mem pos)
{
    /* The exchange waits for the step before anyway (its first read back); waiting here keeps
     * that compute out of exchange_s. */
    if (!cl_ok(clFinish(s->grid->cl->queue), "clFinish(exchange)"))
        dist_abort(MZ_EXIT_RUNTIME);
    double t0 = now_seconds();
    mz_grid *g = s->grid;
    int P = s->ranks, me = s->rank;
    size_t own = s->ring_end[0] - s->ring_begin[0];
    /* The owned particles stably sorted by segment, and each part's range of them. */
    cl_uint *targets = xmalloc(4 * (size_t)P * sizeof *targets);
    cl_uint *at = xmalloc(4 * (size_t)P * sizeof *at);
    int bits = write_segments(s, targets);
    if (bits < 0 ||
        grid_slab_segments(g, pos, s->ring_begin[0], own, s->segments, s->keys, s->vals) ||
        grid_sort(g, s->keys, s->vals, own, bits) ||
        slabs_query_bounds(s, s->keys, own, targets, 4 * (size_t)P, at))
        dist_abort(MZ_EXIT_RUNTIME); /* the other ranks wait in the exchange */
    free(targets);
    size_t nc = PARTS * (size_t)P;
    uint64_t *scount = xmalloc(nc * sizeof *scount), *rcount = xmalloc(nc * sizeof *rcount);
    uint64_t *sunits = xmalloc((size_t)P * sizeof *sunits);
    uint64_t *runits = xmalloc((size_t)P * sizeof *runits);
    size_t *soff = xmalloc(nc * sizeof *soff), *roff = xmalloc(nc * sizeof *roff);
    for (int r = 0; r < P; r++)
        for (int p = 0; p < PARTS; p++) {
            scount[PARTS * r + p] = at[4 * r + p + 1] - at[4 * r + p];
            s->sent += r == me ? 0 : scount[PARTS * r + p];
        }
    size_t sbytes = blocks(g, P, me, scount, soff, sunits);
    cl_event read_done = NULL;
    if (!pack_sends(s, at, scount, soff, sbytes, &read_done))
        dist_abort(MZ_EXIT_RUNTIME);
    /* While the device packs: the counts, room for the new window, the receive buffer. */
    dist_alltoall_u64s(scount, rcount, PARTS);
    uint64_t total = 0;
    for (size_t i = 0; i < nc; i++)
        total += rcount[i];
    size_t rbytes = blocks(g, P, me, rcount, roff, runits);
    if ((total > g->cap && slabs_grow_room(s, (size_t)total) != 0) ||
        !mz_cl_pinned_room(g->cl, (void **)&s->recv, &s->recv_pin, &s->recv_cap,
                           rbytes + UNIT) ||
        !lay_out(s, at, rcount, roff, true) ||
        !cl_ok(clWaitForEvents(1, &read_done), "clWaitForEvents(exchange)"))
        dist_abort(MZ_EXIT_RUNTIME);
    clReleaseEvent(read_done);
    /* The records travel while the device lays out this rank's own. */
    double t1 = now_seconds();
    dist_alltoallv_records(s->send, sunits, s->recv, runits, UNIT);
    s->mpi_s += now_seconds() - t1;
    /* Not waited for: the next exchange's first step is to wait for the queue, before any of
     * these host buffers is written again. */
    if (!lay_out(s, at, rcount, roff, false) || grid_set_count(g, (size_t)total) != 0)
        dist_abort(MZ_EXIT_RUNTIME);
    free(at);
    free(scount);
    free(rcount);
    free(sunits);
    free(runits);
    free(soff);
    free(roff);
    slabs_set_window(s); /* after a repartition, the new one */
    s->exchanges++;
    s->exchange_s += now_seconds() - t0;
    return 0;
}
