/* Slabs of grid layers and the particle exchange (slabs.h). */
#include "dist/slabs.h"

#include "dist/dist.h"
#include "util/clock.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void slabs_window(const mz_slabs *s, int r, int *wlo, int *whi)
{
    *wlo = s->lo[r] - s->halo > 0 ? s->lo[r] - s->halo : 0;
    *whi = s->hi[r] + s->halo < s->layers ? s->hi[r] + s->halo : s->layers;
}

/* Balanced slabs: rank r ends its slab at the first layer where the particles so far reach
 * (r + 1)/ranks of all, keeping at least one layer for each rank after it. */
static void partition(int ranks, int layers, int *lo, int *hi, const uint64_t *per_layer)
{
    uint64_t total = 0, acc = 0;
    for (int l = 0; l < layers; l++)
        total += per_layer[l];
    int r = 0;
    lo[0] = 0;
    for (int l = 0; l < layers && r < ranks - 1; l++) {
        acc += per_layer[l];
        int ranks_left = ranks - 1 - r, layers_left = layers - 1 - l;
        bool enough = acc * (uint64_t)ranks >= (uint64_t)(r + 1) * total;
        if (layers_left >= ranks_left && (enough || layers_left == ranks_left)) {
            hi[r] = l + 1;
            lo[++r] = l + 1;
        }
    }
    hi[ranks - 1] = layers;
}

/* This rank's window into the grid's description: the layers its table holds. */
static void set_window(mz_slabs *s)
{
    int wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    s->grid->desc.slab_lo = wlo;
    s->grid->desc.slab_hi = whi;
}

/* The layer of a position as the device's mz_cell_coord finds it (float arithmetic, clamped
 * into the grid); the plan keeps a layer's margin either way, so a rounding difference between
 * host and device cannot lose a particle. */
static int host_layer(const mz_slab_plan *pl, const float x[3])
{
    int axis = pl->desc.dim - 1;
    float f = floorf((x[axis] - pl->desc.origin.s[axis]) * pl->desc.inv_h);
    if (!(f >= 0.0f))
        return 0;
    return f >= (float)(pl->layers - 1) ? pl->layers - 1 : (int)f;
}

typedef struct layer_count {
    const mz_slab_plan *pl;
    uint64_t *per_layer;
} layer_count;

static bool count_only(void *ctx, const float x[3])
{
    layer_count *c = ctx;
    c->per_layer[host_layer(c->pl, x)]++;
    return false;
}

/* The layers this rank builds: its window and one more on either side. */
static void share_layers(const mz_slab_plan *pl, int *a, int *b)
{
    *a = pl->lo[pl->rank] - pl->halo - 1 > 0 ? pl->lo[pl->rank] - pl->halo - 1 : 0;
    *b = pl->hi[pl->rank] + pl->halo + 1 < pl->layers ? pl->hi[pl->rank] + pl->halo + 1
                                                        : pl->layers;
}

static bool in_share(void *ctx, const float x[3])
{
    const mz_slab_plan *pl = ctx;
    int a, b, l = host_layer(pl, x);
    share_layers(pl, &a, &b);
    return l >= a && l < b;
}

int slabs_plan(mz_slab_plan *pl, const mz_scene *s, double h, int halo)
{
    memset(pl, 0, sizeof *pl);
    pl->ranks = dist_size();
    pl->rank = dist_rank();
    pl->halo = halo;
    size_t n = scene_particle_count(s);
    int dim = s->sim.dimensions, axis = dim - 1;
    if (grid_describe(n, h, dim, s->domain.min, s->domain.max, MZ_GRID_AUTO, &pl->desc) != 0)
        return -1;
    if (pl->desc.hashed) {
        mz_error("a distributed run needs a dense neighbour grid; this domain has too many cells "
                 "for one (make the domain smaller or the support radius larger)");
        return -1;
    }
    if (halo < 1 || halo > MZ_SLABS_MAX_HALO) {
        mz_error("slabs: a halo of %d layers (1 to %d)", halo, MZ_SLABS_MAX_HALO);
        return -1;
    }
    pl->layers = pl->desc.dims.s[axis];
    if (pl->layers < pl->ranks) {
        mz_error("%d ranks but the domain has only %d layers of cells along %c (cells of %g m): "
                 "run with at most %d ranks",
                 pl->ranks, pl->layers, "xyz"[axis], pl->desc.h, pl->layers);
        return -1;
    }
    pl->lo = xcalloc((size_t)pl->ranks, sizeof *pl->lo);
    pl->hi = xcalloc((size_t)pl->ranks, sizeof *pl->hi);
    layer_count c = {pl, xcalloc((size_t)pl->layers, sizeof(uint64_t))};
    mz_particles none;
    build_particles_where(s, &none, count_only, &c);
    particles_free(&none);
    partition(pl->ranks, pl->layers, pl->lo, pl->hi, c.per_layer);
    int a, b;
    share_layers(pl, &a, &b);
    for (int l = a; l < b; l++)
        pl->share += c.per_layer[l];
    free(c.per_layer);
    /* Room for the share and a quarter more: particles drift between rebalances. */
    pl->cap = pl->share + pl->share / 4 + 256;
    return 0;
}

void slabs_plan_build(const mz_slab_plan *pl, const mz_scene *s, mz_particles *p)
{
    build_particles_where(s, p, in_share, (void *)pl);
}

void slabs_plan_release(mz_slab_plan *pl)
{
    free(pl->lo);
    free(pl->hi);
    memset(pl, 0, sizeof *pl);
}

static int query_bounds(mz_slabs *s, cl_mem keys, size_t n, const cl_uint *targets, size_t m,
                        cl_uint *out);

int slabs_create(mz_slabs *s, mz_grid *grid, const mz_slab_plan *plan, cl_mem pos)
{
    memset(s, 0, sizeof *s);
    s->grid = grid;
    s->ranks = plan->ranks;
    s->rank = plan->rank;
    s->halo = plan->halo;
    int axis = grid->desc.dim - 1;
    s->layers = plan->layers;
    s->layer_cells = 1;
    for (int a = 0; a < axis; a++)
        s->layer_cells *= (cl_uint)grid->desc.dims.s[a];
    if (grid->desc.hashed || grid->desc.dims.s[axis] != plan->layers) {
        mz_error("slabs: the grid is not the one planned");
        return -1;
    }
    while ((1 << s->key_bits) < s->layers)
        s->key_bits++;
    s->lo = xmalloc((size_t)s->ranks * sizeof *s->lo);
    s->hi = xmalloc((size_t)s->ranks * sizeof *s->hi);
    memcpy(s->lo, plan->lo, (size_t)s->ranks * sizeof *s->lo);
    memcpy(s->hi, plan->hi, (size_t)s->ranks * sizeof *s->hi);
    mz_cl *cl = grid->cl;
    s->keys_cap = grid->cap ? grid->cap : 1;
    s->keys = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * s->keys_cap, NULL, "clCreateBuffer(slab keys)");
    s->vals = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * s->keys_cap, NULL, "clCreateBuffer(slab slots)");
    size_t nt = 2 * (size_t)s->ranks + 2 * (MZ_SLABS_MAX_HALO + 1) + (size_t)s->layers + 1;
    s->targets = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab targets)");
    s->bounds = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab bounds)");
    if (!s->keys || !s->vals || !s->targets || !s->bounds)
        return -1;
    /* The share, in id order, sorted stably by layer: this rank keeps its window's stretch
     * (still in id order within a layer, as the first build of one process sees them). */
    size_t n = grid->n;
    if (grid_slab_keys(grid, pos, 0, n, s->keys, s->vals) ||
        grid_sort(grid, s->keys, s->vals, n, s->key_bits) || grid_gather(grid, s->vals, n))
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

/* Room for `need` particles and a quarter more: the solver's buffers (grow), then the
 * exchange's own sort buffers. The particles' data and the owned range stay where they are. */
static int grow_room(mz_slabs *s, size_t need)
{
    size_t cap = need + need / 4 + 256;
    if (!s->grow || s->grow(s->grow_ctx, cap) != 0)
        return -1;
    cl_mem k = mz_cl_buffer(s->grid->cl, CL_MEM_READ_WRITE, 4 * cap, NULL,
                            "clCreateBuffer(slab keys)");
    cl_mem v = mz_cl_buffer(s->grid->cl, CL_MEM_READ_WRITE, 4 * cap, NULL,
                            "clCreateBuffer(slab slots)");
    if (!k || !v) {
        cl_mem ms[] = {k, v};
        mz_cl_release_mems(ms, 2);
        return -1;
    }
    cl_mem old[] = {s->keys, s->vals};
    mz_cl_release_mems(old, 2);
    s->keys = k;
    s->vals = v;
    s->keys_cap = cap;
    s->grows++;
    return 0;
}

int slabs_reserve(mz_slabs *s, size_t need)
{
    return need <= s->grid->cap ? 0 : grow_room(s, need);
}

int slabs_own_all(mz_slabs *s, size_t n)
{
    for (int k = 0; k <= MZ_SLABS_MAX_HALO; k++) {
        s->ring_begin[k] = 0;
        s->ring_end[k] = n;
    }
    return grid_set_count(s->grid, n);
}

int slabs_exchange(mz_slabs *s, cl_mem pos)
{
    /* The exchange waits for the step before anyway (its first read back); waiting here keeps
     * that compute out of exchange_s. */
    if (!cl_ok(clFinish(s->grid->cl->queue), "clFinish(exchange)"))
        dist_abort(MZ_EXIT_RUNTIME);
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
    if (total > g->cap && grow_room(s, (size_t)total) != 0)
        dist_abort(MZ_EXIT_RUNTIME);
    /* Pack: per destination, each registered buffer's range in turn (a whole number of
     * records of `rec` bytes); nothing to this rank itself. */
    size_t rec = 0;
    for (int k = 0; k < g->n_reg; k++)
        rec += g->reg[k].elem;
    uint64_t *sn = xcalloc((size_t)P, sizeof *sn), *rn = xcalloc((size_t)P, sizeof *rn);
    size_t *sd = xcalloc((size_t)P, sizeof *sd), *rd = xcalloc((size_t)P, sizeof *rd);
    size_t sbytes = 0, rbytes = 0;
    for (int r = 0; r < P; r++) {
        sn[r] = r == me ? 0 : scount[r];
        rn[r] = r == me ? 0 : rcount[r];
        sd[r] = sbytes;
        rd[r] = rbytes;
        sbytes += (size_t)sn[r] * rec;
        rbytes += (size_t)rn[r] * rec;
        s->sent += sn[r];
    }
    unsigned char *sendb = grow(&s->send, &s->send_cap, sbytes + 1);
    unsigned char *recvb = grow(&s->recv, &s->recv_cap, rbytes + 1);
    bool ok = true;
    for (int r = 0; r < P && ok; r++) {
        size_t off = sd[r];
        for (int k = 0; k < g->n_reg && ok && sn[r] > 0; k++) {
            size_t e = g->reg[k].elem, bytes = (size_t)sn[r] * e;
            ok = cl_ok(clEnqueueReadBuffer(cl->queue, *g->reg[k].buf, CL_FALSE, e * at[2 * r],
                                           bytes, sendb + off, 0, NULL, NULL),
                       "clEnqueueReadBuffer(exchange)");
            off += bytes;
        }
    }
    ok = ok && cl_ok(clFinish(cl->queue), "clFinish(exchange)");
    if (!ok)
        dist_abort(MZ_EXIT_RUNTIME);
    dist_alltoallv_records(sendb, sn, recvb, rn, rec);
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
    free(sn);
    free(rn);
    free(sd);
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
        partition(s->ranks, s->layers, s->lo, s->hi, per_layer);
        s->repartitions++;
    }
    free(per_layer);
    return redo;
}
