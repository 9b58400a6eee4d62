/* Slabs of grid layers and the particle exchange (slabs.h). */
#include "dist/slabs.h"
#include "dist/slabs_internal.h"

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

/* This rank's window into the grid's description: its table keys cells from the layer below
 * the window (the queries of the window's particles then never reach below the table, and need
 * only the grid's bounds checked: kernels/grid/grid.clh, mz_cell_rel). */
void slabs_set_window(mz_slabs *s)
{
    int wlo, whi;
    slabs_window(s, s->rank, &wlo, &whi);
    s->grid->desc.slab_lo = wlo > 0 ? wlo - 1 : 0; /* a layer below: kernels/grid/grid.clh */
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
        mz_error("a distributed run of this scene needs a halo of %d layers of cells of %g m "
                 "beyond each slab (its constraints' or neighbours' reach); a rank holds at "
                 "most %d: run it without mpirun",
                 halo, pl->desc.h, MZ_SLABS_MAX_HALO);
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
    size_t nt = 4 * (size_t)s->ranks + 2 * (MZ_SLABS_MAX_HALO + 1) + (size_t)s->layers + 4;
    s->targets = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab targets)");
    s->bounds = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * nt, NULL, "clCreateBuffer(slab bounds)");
    s->segment_of_layer = xcalloc((size_t)s->layers, sizeof *s->segment_of_layer);
    s->give = xcalloc(2 * (size_t)s->ranks, sizeof *s->give);
    s->take = xcalloc(2 * (size_t)s->ranks, sizeof *s->take);
    s->segments = mz_cl_buffer(cl, CL_MEM_READ_ONLY, 4 * (size_t)s->layers, NULL,
                               "clCreateBuffer(slab segments)");
    if (!s->keys || !s->vals || !s->targets || !s->bounds || !s->segments)
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
    if (slabs_query_bounds(s, s->keys, n, t, 2, at) != 0)
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
    slabs_set_window(s);
    return grid_set_count(grid, keep);
}

void slabs_release(mz_slabs *s)
{
    if (s->send)
        mz_cl_unpin(s->grid->cl, s->send_pin, s->send);
    if (s->recv)
        mz_cl_unpin(s->grid->cl, s->recv_pin, s->recv);
    cl_mem ms[] = {s->keys, s->vals, s->targets, s->bounds, s->segments, s->pack};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    free(s->lo);
    free(s->hi);
    free(s->segment_of_layer);
    free(s->give);
    free(s->take);
    if (s->share_out)
        mz_cl_unpin(s->grid->cl, s->share_out_pin, s->share_out);
    if (s->share_in)
        mz_cl_unpin(s->grid->cl, s->share_in_pin, s->share_in);
    memset(s, 0, sizeof *s);
}

/* out[t] = the first index of ascending keys[0..n) at or above targets[t], t < m (waits). */
int slabs_query_bounds(mz_slabs *s, cl_mem keys, size_t n, const cl_uint *targets, size_t m,
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

/* Slots (in the sorted window) of the layers [a, b) are out[i], out[i + 1]: their targets. */
static int layer_targets(const mz_slabs *s, int a, int b, cl_uint *t)
{
    if (b < a)
        b = a;
    t[0] = (cl_uint)(a - s->grid->desc.slab_lo) * s->layer_cells;
    t[1] = (cl_uint)(b - s->grid->desc.slab_lo) * s->layer_cells;
    return 2;
}

static int max_int(int a, int b) { return a > b ? a : b; }
static int min_int(int a, int b) { return a < b ? a : b; }

int slabs_after_build(mz_slabs *s)
{
    int P = s->ranks, me = s->rank, wlo, whi, lo = s->lo[me], hi = s->hi[me];
    slabs_window(s, me, &wlo, &whi);
    size_t most = 2 * (MZ_SLABS_MAX_HALO + 1) + 4 * (size_t)P + 2;
    cl_uint *t = xmalloc(most * sizeof *t), *out = xmalloc(most * sizeof *out);
    int m = 0;
    for (int k = 0; k <= s->halo; k++)
        m += layer_targets(s, max_int(lo - k, wlo), min_int(hi + k, whi), t + m);
    /* What slabs_share sends rank r (this rank's owned layers in r's window) and takes from
     * it (r's owned layers in this window). */
    for (int r = 0; r < P; r++) {
        int rlo, rhi;
        slabs_window(s, r, &rlo, &rhi);
        m += layer_targets(s, max_int(lo, rlo), min_int(hi, rhi), t + m);
        m += layer_targets(s, max_int(s->lo[r], wlo), min_int(s->hi[r], whi), t + m);
    }
    /* The owned particles with no halo layer within reach (one layer): the inner ones. */
    m += layer_targets(s, lo + (wlo < lo), hi - (whi > hi), t + m);
    int rc = slabs_query_bounds(s, s->grid->keys, s->grid->n, t, (size_t)m, out);
    if (rc == 0) {
        int i = 0;
        for (int k = 0; k <= s->halo; k++, i += 2) {
            s->ring_begin[k] = out[i];
            s->ring_end[k] = out[i + 1];
        }
        for (int r = 0; r < P; r++, i += 4) {
            bool self = r == me;
            s->give[2 * r] = out[i];
            s->give[2 * r + 1] = self ? out[i] : out[i + 1];
            s->take[2 * r] = out[i + 2];
            s->take[2 * r + 1] = self ? out[i + 2] : out[i + 3];
        }
        s->inner_begin = out[i];
        s->inner_end = out[i + 1];
    }
    free(t);
    free(out);
    return rc;
}

/* A copy of the first `bytes` of old in a new buffer of `cap` bytes (NULL after reporting). */
static cl_mem copied_buffer(mz_cl *cl, cl_mem old, size_t cap, size_t bytes)
{
    cl_mem m = mz_cl_buffer(cl, CL_MEM_READ_WRITE, cap, NULL, "clCreateBuffer(slab keys)");
    if (m && bytes > 0 &&
        !cl_ok(clEnqueueCopyBuffer(cl->queue, old, m, 0, 0, bytes, 0, NULL, NULL),
               "clEnqueueCopyBuffer(slab keys)")) {
        clReleaseMemObject(m);
        return NULL;
    }
    return m;
}

/* Room for `need` particles and a quarter more: the solver's buffers (grow), then the
 * exchange's own sort buffers, keeping the sorted slots of an exchange under way. The
 * particles' data and the owned range stay where they are. */
int slabs_grow_room(mz_slabs *s, size_t need)
{
    size_t cap = need + need / 4 + 256;
    if (!s->grow || s->grow(s->grow_ctx, cap) != 0)
        return -1;
    mz_cl *cl = s->grid->cl;
    cl_mem k = copied_buffer(cl, s->keys, 4 * cap, 4 * s->keys_cap),
           v = copied_buffer(cl, s->vals, 4 * cap, 4 * s->keys_cap);
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
    return need <= s->grid->cap ? 0 : slabs_grow_room(s, need);
}

int slabs_own_all(mz_slabs *s, size_t n)
{
    for (int k = 0; k <= MZ_SLABS_MAX_HALO; k++) {
        s->ring_begin[k] = 0;
        s->ring_end[k] = n;
    }
    return grid_set_count(s->grid, n);
}

bool slabs_rebalance(mz_slabs *s)
{
    /* Per-layer counts of the owned particles, from the sorted keys of the last build. */
    int lo = s->lo[s->rank], hi = s->hi[s->rank];
    size_t m = (size_t)(hi - lo) + 1;
    cl_uint *t = xmalloc(m * sizeof *t), *out = xmalloc(m * sizeof *out);
    for (size_t i = 0; i < m; i++)
        t[i] = (cl_uint)(lo + (int)i - s->grid->desc.slab_lo) * s->layer_cells;
    if (slabs_query_bounds(s, s->grid->keys, s->grid->n, t, m, out) != 0)
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
