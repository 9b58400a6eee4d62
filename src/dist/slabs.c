/* Slabs of grid layers and the particle exchange (slabs.h). */
#include "dist/slabs.h"

#include "dist/dist.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

void slabs_window(const mz_slabs *s, int r, int *wlo, int *whi)
{
    *wlo = s->lo[r] - s->halo > 0 ? s->lo[r] - s->halo : 0;
    *whi = s->hi[r] + s->halo < s->layers ? s->hi[r] + s->halo : s->layers;
}

/* Balanced slabs: rank r ends its slab at the first layer where the particles so far reach
 * (r + 1)/ranks of all, keeping at least one layer for each rank after it. */
static void partition(mz_slabs *s, const uint64_t *per_layer)
{
    uint64_t total = 0, acc = 0;
    for (int l = 0; l < s->layers; l++)
        total += per_layer[l];
    int r = 0;
    s->lo[0] = 0;
    for (int l = 0; l < s->layers && r < s->ranks - 1; l++) {
        acc += per_layer[l];
        int ranks_left = s->ranks - 1 - r, layers_left = s->layers - 1 - l;
        bool enough = acc * (uint64_t)s->ranks >= (uint64_t)(r + 1) * total;
        if (layers_left >= ranks_left && (enough || layers_left == ranks_left)) {
            s->hi[r] = l + 1;
            s->lo[++r] = l + 1;
        }
    }
    s->hi[s->ranks - 1] = s->layers;
}

/* This rank's window into the grid's description: the layers its table holds. */
static void set_window(mz_slabs *s)
{
    int wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    s->grid->desc.slab_lo = wlo;
    s->grid->desc.slab_hi = whi;
}

/* Every layer's particles from keys sorted by layer (L + 1 range queries). */
static int count_layers(mz_slabs *s, size_t n, uint64_t *per_layer);
static int query_bounds(mz_slabs *s, cl_mem keys, size_t n, const cl_uint *targets, size_t m,
                        cl_uint *out);

int slabs_create(mz_slabs *s, mz_grid *grid, int halo, cl_mem pos)
{
    memset(s, 0, sizeof *s);
    s->grid = grid;
    s->ranks = dist_size();
    s->rank = dist_rank();
    s->halo = halo;
    int axis = grid->desc.dim - 1;
    s->layers = grid->desc.dims.s[axis];
    s->layer_cells = 1;
    for (int a = 0; a < axis; a++)
        s->layer_cells *= (cl_uint)grid->desc.dims.s[a];
    if (grid->desc.hashed) {
        mz_error("a distributed run needs a dense neighbour grid; this domain has too many cells "
                 "for one (make the domain smaller or the support radius larger)");
        return -1;
    }
    if (halo < 1 || halo > MZ_SLABS_MAX_HALO) {
        mz_error("slabs: a halo of %d layers (1 to %d)", halo, MZ_SLABS_MAX_HALO);
        return -1;
    }
    if (s->layers < s->ranks) {
        mz_error("%d ranks but the domain has only %d layers of cells along %c (cells of %g m): "
                 "run with at most %d ranks",
                 s->ranks, s->layers, "xyz"[axis], grid->desc.h, s->layers);
        return -1;
    }
    while ((1 << s->key_bits) < s->layers)
        s->key_bits++;
    s->lo = xcalloc((size_t)s->ranks, sizeof *s->lo);
    s->hi = xcalloc((size_t)s->ranks, sizeof *s->hi);
    mz_cl *cl = grid->cl;
    size_t cap = grid->cap ? grid->cap : 1;
    s->keys = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * cap, NULL, "clCreateBuffer(slab keys)");
    s->vals = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * cap, NULL, "clCreateBuffer(slab slots)");
    size_t nt = 2 * (size_t)s->ranks + 2 * (MZ_SLABS_MAX_HALO + 1) + (size_t)s->layers + 1;
    s->targets = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab targets)");
    s->bounds = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab bounds)");
    if (!s->keys || !s->vals || !s->targets || !s->bounds)
        return -1;
    /* Every rank starts from all the particles, in id order: sorted stably by layer, they give
     * the slabs, and this rank keeps its window's stretch (still in id order within a layer,
     * as the first build of one process sees them). */
    size_t n = grid->n;
    uint64_t *per_layer = xcalloc((size_t)s->layers, sizeof *per_layer);
    int rc = grid_slab_keys(grid, pos, 0, n, s->keys, s->vals) ||
                     grid_sort(grid, s->keys, s->vals, n, s->key_bits) ||
                     count_layers(s, n, per_layer) || grid_gather(grid, s->vals, n)
                 ? -1
                 : 0;
    if (rc == 0)
        partition(s, per_layer);
    free(per_layer);
    if (rc != 0)
        return -1;
    int wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    cl_uint t[2] = {(cl_uint)wlo, (cl_uint)whi}, at[2];
    if (query_bounds(s, s->keys, n, t, 2, at) != 0)
        return -1;
    size_t keep = at[1] - at[0];
    for (int k = 0; k < grid->n_reg && keep > 0; k++) {
        size_t e = grid->reg[k].elem;
        if (!cl_ok(clEnqueueCopyBuffer(cl->queue, *grid->reg[k].buf, grid->reg[k].scratch,
                                       e * at[0], 0, e * keep, 0, NULL, NULL),
                   "clEnqueueCopyBuffer(slab window)"))
            return -1;
        cl_mem tmp = *grid->reg[k].buf;
        *grid->reg[k].buf = grid->reg[k].scratch;
        grid->reg[k].scratch = tmp;
    }
    set_window(s);
    return grid_set_count(grid, keep);
}

static int count_layers(mz_slabs *s, size_t n, uint64_t *per_layer)
{
    size_t m = (size_t)s->layers + 1;
    cl_uint *t = xmalloc(m * sizeof *t), *out = xmalloc(m * sizeof *out);
    for (size_t l = 0; l < m; l++)
        t[l] = (cl_uint)l;
    int rc = query_bounds(s, s->keys, n, t, m, out);
    for (size_t l = 0; rc == 0 && l + 1 < m; l++)
        per_layer[l] = out[l + 1] - out[l];
    free(t);
    free(out);
    return rc;
}

void slabs_release(mz_slabs *s)
{
    cl_mem ms[] = {s->keys, s->vals, s->targets, s->bounds};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    free(s->lo);
    free(s->hi);
    free(s->send);
    free(s->recv);
    memset(s, 0, sizeof *s);
}

/* out[t] = the first index of ascending keys[0..n) at or above targets[t], t < m (waits). */
static int query_bounds(mz_slabs *s, cl_mem keys, size_t n, const cl_uint *targets, size_t m,
                        cl_uint *out)
{
    cl_command_queue q = s->grid->cl->queue;
    bool ok = cl_ok(clEnqueueWriteBuffer(q, s->targets, CL_FALSE, 0, 4 * m, targets, 0, NULL,
                                         NULL),
                    "clEnqueueWriteBuffer(slab targets)") &&
              grid_bounds(s->grid, keys, n, s->targets, m, s->bounds) == 0 &&
              cl_ok(clEnqueueReadBuffer(q, s->bounds, CL_TRUE, 0, 4 * m, out, 0, NULL, NULL),
                    "clEnqueueReadBuffer(slab bounds)");
    return ok ? 0 : -1;
}

int slabs_after_build(mz_slabs *s)
{
    int wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    cl_uint t[2 * (MZ_SLABS_MAX_HALO + 1)], out[2 * (MZ_SLABS_MAX_HALO + 1)];
    int m = 0;
    for (int k = 0; k <= s->halo; k++) {
        int a = s->lo[s->rank] - k, b = s->hi[s->rank] + k;
        a = a < wlo ? wlo : a;
        b = b > whi ? whi : b;
        t[m++] = (cl_uint)(a - wlo) * s->layer_cells;
        t[m++] = (cl_uint)(b - wlo) * s->layer_cells;
    }
    if (query_bounds(s, s->grid->keys, s->grid->n, t, (size_t)m, out) != 0)
        return -1;
    for (int k = 0; k <= s->halo; k++) {
        s->ring_begin[k] = out[2 * k];
        s->ring_end[k] = out[2 * k + 1];
    }
    return 0;
}

static void *grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need > *cap) {
        free(*buf);
        *cap = need + need / 4;
        *buf = xmalloc(*cap);
    }
    return *buf;
}

int slabs_exchange(mz_slabs *s, cl_mem pos)
{
    double t0 = now_seconds();
    mz_grid *g = s->grid;
    mz_cl *cl = g->cl;
    int P = s->ranks, me = s->rank;
    size_t own = s->ring_end[0] - s->ring_begin[0];
    /* The owned particles stably sorted by their layer now, and each window's range of them. */
    cl_uint *win = xmalloc(2 * (size_t)P * sizeof *win), *at = xmalloc(2 * (size_t)P * sizeof *at);
    for (int r = 0; r < P; r++) {
        int wlo, whi;
        slabs_window(s, r, &wlo, &whi);
        win[2 * r] = (cl_uint)wlo;
        win[2 * r + 1] = (cl_uint)whi;
    }
    int rc = grid_slab_keys(g, pos, s->ring_begin[0], own, s->keys, s->vals) ||
                     grid_sort(g, s->keys, s->vals, own, s->key_bits) ||
                     query_bounds(s, s->keys, own, win, 2 * (size_t)P, at) ||
                     grid_gather(g, s->vals, own)
                 ? -1
                 : 0;
    free(win);
    uint64_t *scount = xcalloc((size_t)P, sizeof *scount), *rcount = xcalloc((size_t)P, 8);
    for (int r = 0; r < P && rc == 0; r++)
        scount[r] = at[2 * r + 1] - at[2 * r];
    if (rc != 0)
        dist_abort(MZ_EXIT_RUNTIME); /* the other ranks wait in the exchange */
    dist_alltoall_u64(scount, rcount);
    uint64_t total = 0;
    for (int r = 0; r < P; r++)
        total += rcount[r];
    if (total > g->cap) {
        mz_error("rank %d's layers %d to %d hold %llu particles with their halo, more than the "
                 "%zu it has room for", me, s->lo[me], s->hi[me], (unsigned long long)total,
                 g->cap);
        dist_abort(MZ_EXIT_RUNTIME);
    }
    /* Pack: per destination, each registered buffer's range in turn. */
    size_t rec = 0;
    for (int k = 0; k < g->n_reg; k++)
        rec += g->reg[k].elem;
    int *sc = xcalloc((size_t)P, sizeof *sc), *sd = xcalloc((size_t)P, sizeof *sd);
    int *rcb = xcalloc((size_t)P, sizeof *rcb), *rd = xcalloc((size_t)P, sizeof *rd);
    size_t sbytes = 0, rbytes = 0;
    for (int r = 0; r < P; r++) {
        size_t out_b = r == me ? 0 : (size_t)scount[r] * rec;
        size_t in_b = r == me ? 0 : (size_t)rcount[r] * rec;
        if (out_b > 0x7fffffff || in_b > 0x7fffffff) {
            mz_error("an exchange of %zu bytes between two ranks (MPI counts stop at 2^31)",
                     out_b > in_b ? out_b : in_b);
            dist_abort(MZ_EXIT_RUNTIME);
        }
        sd[r] = (int)sbytes;
        sc[r] = (int)out_b;
        rd[r] = (int)rbytes;
        rcb[r] = (int)in_b;
        sbytes += out_b;
        rbytes += in_b;
        if (r != me)
            s->sent += scount[r];
    }
    unsigned char *sendb = grow(&s->send, &s->send_cap, sbytes + 1);
    unsigned char *recvb = grow(&s->recv, &s->recv_cap, rbytes + 1);
    bool ok = true;
    for (int r = 0; r < P && ok; r++) {
        if (r == me || scount[r] == 0)
            continue;
        size_t off = (size_t)sd[r];
        for (int k = 0; k < g->n_reg && ok; k++) {
            size_t e = g->reg[k].elem, bytes = (size_t)scount[r] * e;
            ok = cl_ok(clEnqueueReadBuffer(cl->queue, *g->reg[k].buf, CL_FALSE, e * at[2 * r],
                                           bytes, sendb + off, 0, NULL, NULL),
                       "clEnqueueReadBuffer(exchange)");
            off += bytes;
        }
    }
    ok = ok && cl_ok(clFinish(cl->queue), "clFinish(exchange)");
    if (!ok)
        dist_abort(MZ_EXIT_RUNTIME);
    dist_alltoallv(sendb, sc, sd, recvb, rcb, rd);
    /* Lay out the new window by source rank: what lower ranks sent, this rank's own that stay,
     * what higher ranks sent — the single process's order. */
    for (int k = 0; k < g->n_reg && ok; k++) {
        size_t e = g->reg[k].elem, dst = 0, src_off = 0;
        for (int r = 0; r < P && ok; r++) {
            size_t bytes = (size_t)rcount[r] * e;
            if (bytes == 0)
                continue;
            if (r == me) {
                ok = cl_ok(clEnqueueCopyBuffer(cl->queue, *g->reg[k].buf, g->reg[k].scratch,
                                               e * at[2 * me], dst, bytes, 0, NULL, NULL),
                           "clEnqueueCopyBuffer(exchange)");
            } else {
                /* record k of source r sits after the records of buffers before k */
                src_off = (size_t)rd[r];
                for (int j = 0; j < k; j++)
                    src_off += (size_t)rcount[r] * g->reg[j].elem;
                ok = cl_ok(clEnqueueWriteBuffer(cl->queue, g->reg[k].scratch, CL_FALSE, dst,
                                                bytes, recvb + src_off, 0, NULL, NULL),
                           "clEnqueueWriteBuffer(exchange)");
            }
            dst += bytes;
        }
        cl_mem t = *g->reg[k].buf;
        *g->reg[k].buf = g->reg[k].scratch;
        g->reg[k].scratch = t;
    }
    ok = ok && cl_ok(clFinish(cl->queue), "clFinish(exchange)");
    free(at);
    free(scount);
    free(rcount);
    free(sc);
    free(sd);
    free(rcb);
    free(rd);
    if (!ok || grid_set_count(g, (size_t)total) != 0)
        dist_abort(MZ_EXIT_RUNTIME);
    set_window(s); /* after a repartition, the new one */
    s->exchanges++;
    s->exchange_s += now_seconds() - t0;
    return 0;
}

bool slabs_rebalance(mz_slabs *s)
{
    /* Per-layer counts of the owned particles, from the sorted keys of the last build. */
    int lo = s->lo[s->rank], hi = s->hi[s->rank], wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    size_t m = (size_t)(hi - lo) + 1;
    cl_uint *t = xmalloc(m * sizeof *t), *out = xmalloc(m * sizeof *out);
    for (size_t i = 0; i < m; i++)
        t[i] = (cl_uint)(lo + (int)i - wlo) * s->layer_cells;
    if (query_bounds(s, s->grid->keys, s->grid->n, t, m, out) != 0)
        dist_abort(MZ_EXIT_RUNTIME);
    uint64_t *per_layer = xcalloc((size_t)s->layers, sizeof *per_layer);
    for (size_t i = 0; i + 1 < m; i++)
        per_layer[lo + (int)i] = out[i + 1] - out[i];
    free(t);
    free(out);
    dist_sum_u64(per_layer, (size_t)s->layers);
    uint64_t total = 0, most = 0;
    for (int r = 0; r < s->ranks; r++) {
        uint64_t own = 0;
        for (int l = s->lo[r]; l < s->hi[r]; l++)
            own += per_layer[l];
        total += own;
        most = own > most ? own : most;
    }
    /* more than 10% above the mean: most > 1.1 · total / ranks */
    bool redo = (double)most * (double)s->ranks > 1.1 * (double)total;
    if (redo) {
        partition(s, per_layer);
        s->repartitions++;
    }
    free(per_layer);
    return redo;
}
