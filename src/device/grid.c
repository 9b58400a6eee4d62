/* The neighbour grid (contract in grid.h; kernels in kernels/grid/grid.cl, queries in grid.clh).
 *
 * A build is, all enqueued without waiting:
 *   empty the previous build's cells → cell_keys → radix passes (count, scan, scatter) →
 *   the cell tables (cell_marks, word_sums, radix_scan of those, word_bases, cell_firsts) →
 *   one gather per registered buffer, then the handles are swapped.
 * The sort's geometry (work-group size, elements per work-item, bits per pass) is a compile-time
 * constant of the program, chosen per device type below; MIZU_GRID_SORT=GS,ITEMS,BITS overrides
 * it (tuning, and tests that run the GPU geometry on the CPU device). */
#include "device/grid.h"
#include "device/grid_internal.h"

#include "device/cl_prog.h"
#include "device/kargs.h"
#include "util/err.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* The geometry for this device, or MIZU_GRID_SORT's; false after reporting a bad override or a
 * geometry the device cannot run. */
static bool choose_geometry(const mz_cl *cl, sort_geometry *geo)
{
    *geo = (cl->type & CL_DEVICE_TYPE_GPU) ? gpu_geometry : cpu_geometry;
    const char *env = getenv("MIZU_GRID_SORT");
    if (env && *env) {
        size_t gs, items;
        int bits;
        char tail;
        if (sscanf(env, "%zu,%zu,%d%c", &gs, &items, &bits, &tail) != 3 || !is_pow2(gs) ||
            items < 1 || items > 65536 || bits < 1 || bits > 8) {
            mz_error("MIZU_GRID_SORT=%s: expected GS,ITEMS,BITS (GS a power of two, ITEMS 1 to "
                     "65536, BITS 1 to 8)", env);
            return false;
        }
        *geo = (sort_geometry){gs, items, bits};
    }
    cl_ulong local_mem = 0;
    if (!cl_ok(clGetDeviceInfo(cl->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem,
                               &local_mem, NULL),
               "clGetDeviceInfo(CL_DEVICE_LOCAL_MEM_SIZE)"))
        return false;
    size_t radix = (size_t)1 << geo->bits;
    /* radix_scatter's tables, and on GPUs (gs > 1) its shuffle of the group's pairs */
    size_t local_bytes = 4 * (radix * geo->gs + geo->gs + radix) +
                         (geo->gs > 1 ? 8 * geo->gs * geo->items : 0);
    if (geo->gs > cl->max_wg || local_bytes > local_mem) {
        mz_error("grid sort geometry %zu×%zu, %d bits per pass: needs work-groups of %zu and %zu "
                 "bytes of local memory; the device allows %zu and %lu",
                 geo->gs, geo->items, geo->bits, geo->gs, local_bytes, cl->max_wg,
                 (unsigned long)local_mem);
        return false;
    }
    return true;
}

/* (grid_internal.h) */
bool grid_launch(mz_grid *g, cl_kernel k, size_t global, size_t local, const char *name)
{
    cl_event *ev = grid_next_event(g);
    cl_int s = clEnqueueNDRangeKernel(g->cl->queue, k, 1, NULL, &global, local ? &local : NULL,
                                      0, NULL, ev);
    if (s != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", name);
        return cl_ok(s, what);
    }
    grid_keep_event(g, ev, name);
    return true;
}

/* (grid_internal.h) */
bool grid_launch_n(mz_grid *g, cl_kernel k, size_t n, const char *name)
{
    return n == 0 || grid_launch(g, k, mz_cl_global(g->cl, n), g->cl->wg, name);
}

/* (grid_internal.h) */
bool grid_copy(mz_grid *g, cl_mem src, cl_mem dst, size_t bytes, const char *name)
{
    cl_event *ev = grid_next_event(g);
    cl_int s = clEnqueueCopyBuffer(g->cl->queue, src, dst, 0, 0, bytes, 0, NULL, ev);
    if (s != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clEnqueueCopyBuffer(%s)", name);
        return cl_ok(s, what);
    }
    grid_keep_event(g, ev, name);
    return true;
}

static bool fill(mz_grid *g, cl_mem buf, size_t count, cl_uint value)
{
    cl_uint n_u = (cl_uint)count;
    return KARGS(g->k_clear, "clear_uint", A(n_u), A(value), A(buf)) &&
           grid_launch_n(g, g->k_clear, count, "clear_uint");
}

/* Entries of the radix histograms for `groups` sort groups: one a digit a group, then (spread
 * scans, hist_spread) a sum a block of them. */
static size_t hist_entries(const mz_grid *g, size_t groups)
{
    size_t count = groups << g->radix_bits, block = g->group_size * g->items_per_item;
    return count + (count + block - 1) / block;
}

/* Whether the histograms' scan is spread over groups: GPU geometries (many narrow groups, whose
 * one-group scan took 85 µs of a 10^7-particle pass on an H200); a CPU's one-work-item groups
 * scan fastest alone. */
static bool hist_spread(const mz_grid *g) { return g->group_size > 1; }

/* Exclusive prefix sum of the first `count` histogram entries. */
static bool scan_hist(mz_grid *g, cl_uint count)
{
    cl_uint zero = 0;
    if (!hist_spread(g))
        return KARGS(g->k_scan, "radix_scan", A(count), A(zero), A(g->hist)) &&
               grid_launch(g, g->k_scan, g->group_size, g->group_size, "radix_scan");
    size_t block = g->group_size * g->items_per_item, blocks = (count + block - 1) / block;
    cl_uint blocks_u = (cl_uint)blocks;
    return KARGS(g->k_hist_sums, "hist_sums", A(count), A(g->hist), A(count)) &&
           grid_launch(g, g->k_hist_sums, blocks * g->group_size, g->group_size, "hist_sums") &&
           KARGS(g->k_scan, "radix_scan", A(blocks_u), A(count), A(g->hist)) &&
           grid_launch(g, g->k_scan, g->group_size, g->group_size, "hist_sums scan") &&
           KARGS(g->k_hist_bases, "hist_bases", A(count), A(g->hist), A(count)) &&
           grid_launch(g, g->k_hist_bases, blocks * g->group_size, g->group_size, "hist_bases");
}

/* (grid_internal.h) */
int grid_radix_passes(int bits, int radix_bits) { return (bits + radix_bits - 1) / radix_bits; }

/* (grid_internal.h) */
bool grid_radix_sort(mz_grid *g, cl_mem keys, cl_mem vals, cl_mem keys2, cl_mem vals2,
                     size_t n, int bits)
{
    if (n == 0)
        return true; /* nothing to sort (a resort where no particle moved): no empty launches */
    size_t block = g->group_size * g->items_per_item;
    size_t groups = (n + block - 1) / block;
    cl_uint n_u = (cl_uint)n, hist_count = (cl_uint)(groups << g->radix_bits);
    cl_mem src_k = keys, src_v = vals, dst_k = keys2, dst_v = vals2;
    for (int shift = 0; shift < bits; shift += g->radix_bits) {
        int digit_bits = bits - shift < g->radix_bits ? bits - shift : g->radix_bits;
        cl_uint sh = (cl_uint)shift, mask = (1u << digit_bits) - 1u;
        if (!KARGS(g->k_count, "radix_count", A(n_u), A(sh), A(mask), A(src_k), A(g->hist)) ||
            !grid_launch(g, g->k_count, groups * g->group_size, g->group_size, "radix_count") ||
            !scan_hist(g, hist_count) ||
            !KARGS(g->k_scatter, "radix_scatter", A(n_u), A(sh), A(mask), A(src_k), A(src_v),
                   A(dst_k), A(dst_v), A(g->hist)) ||
            !grid_launch(g, g->k_scatter, groups * g->group_size, g->group_size, "radix_scatter"))
            return false;
        cl_mem t = src_k;
        src_k = dst_k;
        dst_k = t;
        t = src_v;
        src_v = dst_v;
        dst_v = t;
    }
    return true;
}

static cl_mem grid_buffer(mz_grid *g, size_t bytes, const char *what)
{
    if (bytes > g->cl->max_alloc) {
        mz_error("neighbour grid: %s needs %.1f MiB, more than the device's largest allocation "
                 "(%.1f MiB)", what, (double)bytes / 1048576.0,
                 (double)g->cl->max_alloc / 1048576.0);
        return NULL;
    }
    return mz_cl_buffer(g->cl, CL_MEM_READ_WRITE, bytes, NULL, what);
}

/* (grid_internal.h) The sort's copies of keys and values: the owner's
 * (grid_borrow_sort_copies); else the reorder scratch of both sizes where the grid has its own
 * (whose contents are dead until the gather); else its own copies, made on the first sort (so
 * that the others never hold them). */
bool grid_sort_copies(mz_grid *g, cl_mem *keys2, cl_mem *vals2)
{
    if (g->lent_keys) {
        *keys2 = *g->lent_keys;
        *vals2 = *g->lent_vals;
        return true;
    }
    if (g->spare4 && g->spare16) {
        *keys2 = g->spare4;
        *vals2 = g->spare16;
        return true;
    }
    if (!g->keys_tmp && !(g->keys_tmp = grid_buffer(g, 4 * g->cap, "grid keys (sort scratch)")))
        return false;
    if (!g->vals_tmp && !(g->vals_tmp = grid_buffer(g, 4 * g->cap, "grid values (sort scratch)")))
        return false;
    *keys2 = g->keys_tmp;
    *vals2 = g->vals_tmp;
    return true;
}

static int choose_layout(mz_grid *g, size_t n, double h, int dim, const double dmin[3],
                         const double dmax[3], mz_grid_mode mode)
{
    double dense_cells = 1.0, widest = 1.0;
    int dims[3] = {1, 1, 1};
    for (int a = 0; a < dim; a++) {
        if (!isfinite(dmin[a]) || !isfinite(dmax[a]) || !(dmax[a] >= dmin[a])) {
            mz_error("neighbour grid: domain axis %d is [%g, %g]", a, dmin[a], dmax[a]);
            return -1;
        }
        double c = fmax(1.0, ceil((dmax[a] - dmin[a]) / h));
        dense_cells *= c;
        widest = fmax(widest, c);
        dims[a] = c > MAX_AXIS_CELLS ? 0 : (int)c; /* only used when dense, within the limits */
    }
    bool fits = dense_cells <= MAX_DENSE_CELLS && widest <= MAX_AXIS_CELLS, dense;
    switch (mode) {
    case MZ_GRID_SLABS:
    case MZ_GRID_DENSE:
        if (!fits) {
            mz_error("neighbour grid: a dense grid of this domain needs %.3g cells (%.3g along "
                     "one axis), more than 2^32 (2^24); use the hashed grid",
                     dense_cells, widest);
            return -1;
        }
        dense = true;
        break;
    case MZ_GRID_HASHED:
        dense = false;
        break;
    default:
        dense = fits && dense_cells <= fmax(8.0 * (double)n, 4194304.0);
    }
    if (dense) {
        g->cells = (size_t)dense_cells;
    } else {
        g->cells = MIN_TABLE;
        while (g->cells < 2 * n)
            g->cells *= 2;
        if (g->cells > (size_t)1 << 32) {
            mz_error("neighbour grid: a hash table for %zu particles exceeds 32-bit keys", n);
            return -1;
        }
    }
    g->words = (g->cells + 31) / 32;
    g->key_bits = 0;
    while (((size_t)1 << g->key_bits) < g->cells)
        g->key_bits++;

    mz_grid_desc *d = &g->desc;
    cl_float hf = (cl_float)h;
    d->origin = (cl_float4){{(float)dmin[0], (float)dmin[1], dim == 3 ? (float)dmin[2] : 0.0f,
                             0.0f}};
    d->dims = (cl_int4){{dims[0], dims[1], dims[2], 1}};
    d->h = hf;
    /* Cells a hair (2^-10) wider than h: two points within h then lie in adjacent cells even
     * after the float rounding of their cell coordinates (relative 2^-23 of the coordinate),
     * provably up to about 4000 (2^12 − 2) cells from the origin, so neighbour sets are exact
     * there rather than almost surely exact: with cells exactly h wide, tests/test_grid finds
     * pairs within h two cells apart. Costs 0.3% more candidates. (Rounding the product to
     * float, 2^-24, cannot undo the margin.) */
    d->inv_h = (cl_float)((1.0 - 1.0 / 1024.0) / h);
    d->h2 = hf * hf; /* float, as the kernels compare float squared distances with it */
    d->table_mask = dense ? 0u : (cl_uint)(g->cells - 1);
    d->hashed = !dense;
    d->dim = dim;
    d->slab_lo = 0;
    d->slab_hi = dims[dim - 1];
    return 0;
}

static int create(mz_grid *g, mz_cl *cl, size_t n, double h, int dim, const double dmin[3],
                  const double dmax[3], mz_grid_mode mode)
{
    g->cl = cl;
    g->n = g->cap = g->built = n;
    g->own_scratch = mode == MZ_GRID_SLABS;
    if (!(h > 0.0) || !isfinite(h) || !isfinite(1.0 / h)) {
        mz_error("neighbour grid: cell size h = %g must be positive and finite", h);
        return -1;
    }
    if (dim != 2 && dim != 3) {
        mz_error("neighbour grid: %d dimensions (2 or 3)", dim);
        return -1;
    }
    if (n > 0x7fffffffu) { /* slots, and block offsets a little past n, are 32-bit */
        mz_error("neighbour grid: %zu particles, more than 2^31 - 1", n);
        return -1;
    }
    sort_geometry geo;
    cl_uint align_bits = 0;
    if (choose_layout(g, n, h, dim, dmin, dmax, mode) != 0 || !choose_geometry(cl, &geo) ||
        !grid_resort_mode(&g->resort_mode) ||
        !cl_ok(clGetDeviceInfo(cl->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits,
                               &align_bits, NULL),
               "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)"))
        return -1;
    g->base_align = align_bits / 8;
    g->group_size = geo.gs;
    g->items_per_item = geo.items;
    g->radix_bits = geo.bits;
    size_t block = geo.gs * geo.items;
    g->groups = n ? (n + block - 1) / block : 1;

    char defines[192];
    snprintf(defines, sizeof defines,
             "-DMZ_DIM=%d -DMZ_SORT_GS=%zu -DMZ_SORT_ITEMS=%zu -DMZ_RADIX_BITS=%d -DMZ_SLABS=%d "
             "-DMZ_SORT_SHUFFLE=%d",
             dim, geo.gs, geo.items, geo.bits, mode == MZ_GRID_SLABS, geo.gs > 1);
    g->program = cl_prog_build(cl, "grid/grid.cl", defines, false);
    if (!g->program)
        return -1;
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {{&g->k_keys, "cell_keys"},     {&g->k_count, "radix_count"},
              {&g->k_scan, "radix_scan"},    {&g->k_scatter, "radix_scatter"},
              {&g->k_clear, "clear_uint"},   {&g->k_cell_clear, "cell_clear"},
              {&g->k_marks, "cell_marks"},   {&g->k_word_sums, "word_sums"},
              {&g->k_word_bases, "word_bases"}, {&g->k_firsts, "cell_firsts"},
              {&g->k_hist_sums, "hist_sums"}, {&g->k_hist_bases, "hist_bases"},
              {&g->k_gather4, "gather4"},    {&g->k_gather16, "gather16"},
              {&g->k_slab_keys, "slab_keys"}, {&g->k_bounds, "key_bounds"},
              {&g->k_slab_segments, "slab_segments"}, {&g->k_gather4_at, "gather4_at"},
              {&g->k_gather16_at, "gather16_at"}, {&g->k_moved_sums, "moved_sums"},
              {&g->k_moved_pack, "moved_pack"}, {&g->k_resort_merge, "resort_merge"}};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (!(*ks[i].k = cl_prog_kernel(g->program, ks[i].name)))
            return -1;

    size_t nb = 4 * n;
    if (!(g->keys = grid_buffer(g, nb, "grid keys")) ||
        !(g->vals = grid_buffer(g, nb, "grid values")) ||
        !(g->cell_words = grid_buffer(g, 8 * g->words, "grid cell words")) ||
        !(g->cell_first = grid_buffer(g, 4 * (n + 1), "grid cells' first slots")) ||
        !(g->word_sums = grid_buffer(g, 4 * ((g->words + block - 1) / block),
                                     "grid cell word sums")) ||
        !(g->hist = grid_buffer(g, 4 * hist_entries(g, g->groups), "grid radix histograms")) ||
        !(g->moved = grid_buffer(g, 4, "grid resort count")))
        return -1;
    /* Empty tables and all-zero "previous keys", so the first build's clearing (grid_build)
     * finds a consistent state. */
    bool ok = fill(g, g->cell_words, 2 * g->words, 0) && fill(g, g->keys, n, 0);
    grid_release_events(g);
    return ok ? 0 : -1;
}

int grid_create(mz_grid *g, mz_cl *cl, size_t n, double h, int dim, const double dmin[3],
                const double dmax[3], mz_grid_mode mode)
{
    memset(g, 0, sizeof *g);
    if (create(g, cl, n, h, dim, dmin, dmax, mode) == 0)
        return 0;
    grid_release(g); /* what was made before the failure */
    return -1;
}

int grid_describe(size_t n, double h, int dim, const double dmin[3], const double dmax[3],
                  mz_grid_mode mode, mz_grid_desc *desc)
{
    mz_grid g;
    memset(&g, 0, sizeof g);
    if (choose_layout(&g, n, h, dim, dmin, dmax, mode) != 0)
        return -1;
    *desc = g.desc;
    return 0;
}

/* A new buffer of `bytes` holding the first `keep` bytes of *old, which it replaces. */
static bool regrow(mz_grid *g, cl_mem *old, size_t bytes, size_t keep, const char *what)
{
    cl_mem b = grid_buffer(g, bytes, what);
    if (!b || (keep > 0 && !grid_copy(g, *old, b, keep, what))) {
        if (b)
            clReleaseMemObject(b);
        return false;
    }
    clReleaseMemObject(*old); /* OpenCL frees it once the copy has run */
    *old = b;
    return true;
}

int grid_reserve(mz_grid *g, size_t cap)
{
    if (cap <= g->cap)
        return 0;
    if (g->settled) {
        mz_error("neighbour grid: room for more particles in a settled grid");
        return -1;
    }
    if (cap > 0x7fffffffu) {
        mz_error("neighbour grid: room for %zu particles, more than 2^31 - 1", cap);
        return -1;
    }
    size_t block = g->group_size * g->items_per_item, groups = (cap + block - 1) / block;
    /* The last build's keys stay: the next build empties their cells. */
    bool ok = regrow(g, &g->keys, 4 * cap, 4 * g->built, "grid keys") &&
              regrow(g, &g->vals, 4 * cap, 0, "grid values") &&
              regrow(g, &g->cell_first, 4 * (cap + 1), 4 * (g->built + 1),
                     "grid cells' first slots") &&
              (!g->keys_tmp ||
               regrow(g, &g->keys_tmp, 4 * cap, 0, "grid keys (sort scratch)")) &&
              (!g->vals_tmp ||
               regrow(g, &g->vals_tmp, 4 * cap, 0, "grid values (sort scratch)")) &&
              regrow(g, &g->hist, 4 * hist_entries(g, groups), 0, "grid radix histograms");
    for (int r = 0; ok && r < g->n_reg; r++) {
        size_t e = g->reg[r].elem;
        ok = regrow(g, g->reg[r].buf, e * cap, e * g->n, "grid registered buffer") &&
             (!g->reg[r].scratch ||
              regrow(g, &g->reg[r].scratch, e * cap, 0, "grid reorder scratch"));
    }
    ok = ok && (!g->spare4 || regrow(g, &g->spare4, 4 * cap, 0, "grid reorder scratch")) &&
         (!g->spare16 || regrow(g, &g->spare16, 16 * cap, 0, "grid reorder scratch"));
    if (!ok)
        return -1;
    g->cap = cap;
    g->groups = groups;
    return 0;
}

/* (grid_internal.h) */
cl_mem *grid_spare_of(mz_grid *g, size_t elem)
{
    if (elem == 16)
        return g->lent16 ? g->lent16 : &g->spare16;
    return g->lent4 ? g->lent4 : &g->spare4;
}

int grid_borrow_scratch(mz_grid *g, cl_mem *buf, size_t elem)
{
    if (g->own_scratch || (elem != 4 && elem != 16) || *grid_spare_of(g, elem)) {
        mz_error("neighbour grid: cannot borrow a %zu-byte reorder scratch here", elem);
        return -1;
    }
    *(elem == 16 ? &g->lent16 : &g->lent4) = buf;
    return 0;
}

int grid_borrow_sort_copies(mz_grid *g, cl_mem *keys, cl_mem *vals)
{
    if (g->own_scratch || g->keys_tmp || g->vals_tmp || keys == vals) {
        mz_error("neighbour grid: cannot borrow the sort's copies here");
        return -1;
    }
    g->lent_keys = keys;
    g->lent_vals = vals;
    return 0;
}

int grid_register(mz_grid *g, cl_mem *buf, size_t elem)
{
    if (g->n_reg == MZ_GRID_MAX_REGISTERED) {
        mz_error("neighbour grid: more than %d registered buffers", MZ_GRID_MAX_REGISTERED);
        return -1;
    }
    if (elem != 4 && elem != 16) {
        mz_error("neighbour grid: registered elements are 4 or 16 bytes, not %zu", elem);
        return -1;
    }
    cl_mem scratch = NULL, *spare = grid_spare_of(g, elem);
    if (g->own_scratch ? !(scratch = grid_buffer(g, elem * g->cap, "grid reorder scratch"))
                       : !*spare && !(*spare = grid_buffer(g, elem * g->cap,
                                                            "grid reorder scratch")))
        return -1;
    g->reg[g->n_reg].buf = buf;
    g->reg[g->n_reg].scratch = scratch;
    g->reg[g->n_reg].elem = elem;
    g->reg[g->n_reg].owner_only = false;
    g->n_reg++;
    return 0;
}

int grid_register_owned(mz_grid *g, cl_mem *buf, size_t elem)
{
    if (grid_register(g, buf, elem) != 0)
        return -1;
    g->reg[g->n_reg - 1].owner_only = true;
    return 0;
}

/* The cell tables from the sorted keys (mz_cell_range in grid.clh), the words already clear. */
static bool cell_tables(mz_grid *g)
{
    size_t gs = g->group_size, block = gs * g->items_per_item;
    size_t groups = (g->words + block - 1) / block;
    cl_uint n_u = (cl_uint)g->n, words_u = (cl_uint)g->words, groups_u = (cl_uint)groups, zero = 0;
    return KARGS(g->k_marks, "cell_marks", A(n_u), A(g->keys), A(g->cell_words)) &&
           grid_launch_n(g, g->k_marks, g->n, "cell_marks") &&
           KARGS(g->k_word_sums, "word_sums", A(words_u), A(g->cell_words), A(g->word_sums)) &&
           grid_launch(g, g->k_word_sums, groups * gs, gs, "word_sums") &&
           KARGS(g->k_scan, "radix_scan", A(groups_u), A(zero), A(g->word_sums)) &&
           grid_launch(g, g->k_scan, gs, gs, "word_sums scan") &&
           KARGS(g->k_word_bases, "word_bases", A(words_u), A(g->cell_words), A(g->word_sums)) &&
           grid_launch(g, g->k_word_bases, groups * gs, gs, "word_bases") &&
           KARGS(g->k_firsts, "cell_firsts", A(n_u), A(g->keys), A(g->cell_words),
                 A(g->cell_first)) &&
           grid_launch_n(g, g->k_firsts, g->n, "cell_firsts");
}

/* grid_build without the reorder: keys, sort, cell tables. */
static bool sort_cells(mz_grid *g, cl_mem key_source)
{
    if (g->settled) {
        mz_error("neighbour grid: a settled grid built again");
        return false;
    }
    grid_release_events(g); /* a previous build's, if nobody collected them */
    g->last_build_ms = 0.0;
    cl_uint n_u = (cl_uint)g->n, built_u = (cl_uint)g->built;
    /* Empty the words the previous build filled: all of them when they are no more than the
     * particles, else only the previous keys' words: O(n) writes, not O(cells / 32). (The scan
     * of the words reads every one all the same: cells / 32 is at most max(n / 4, 2^17) in the
     * grids MZ_GRID_AUTO picks; more only in forced dense ones, such as a rank's, which has
     * room for the whole grid.) */
    bool ok = g->words <= g->built
                  ? fill(g, g->cell_words, 2 * g->words, 0)
                  : KARGS(g->k_cell_clear, "cell_clear", A(built_u), A(g->keys),
                          A(g->cell_words)) &&
                        grid_launch_n(g, g->k_cell_clear, g->built, "cell_clear");
    if (g->n != g->built)
        g->in_order = false; /* not the last build's particles: their keys are not the resort's */
    g->built = g->n;
    if (g->n == 0)
        return ok;
    /* The sorted pairs end in keys and vals, never in the copies (which may be borrowed): with
     * an odd number of passes the cell keys go into the copies first. */
    cl_mem keys2, vals2;
    if (!ok || !grid_sort_copies(g, &keys2, &vals2))
        return false;
    bool odd = grid_radix_passes(g->key_bits, g->radix_bits) % 2 != 0;
    cl_mem k0 = odd ? keys2 : g->keys, v0 = odd ? vals2 : g->vals;
    cl_mem k1 = odd ? g->keys : keys2, v1 = odd ? g->vals : vals2;
    if (key_source == keys2 || key_source == vals2) {
        mz_error("neighbour grid: keys from a buffer lent as the sort's copies");
        return false;
    }
    if (grid_resort_chosen(g, key_source))
        return grid_resort(g, key_source) && cell_tables(g);
    return KARGS(g->k_keys, "cell_keys", A(n_u), A(g->desc), A(key_source), A(k0), A(v0)) &&
           grid_launch_n(g, g->k_keys, g->n, "cell_keys") &&
           grid_radix_sort(g, k0, v0, k1, v1, g->n, g->key_bits) && cell_tables(g);
}

int grid_build(mz_grid *g, cl_mem key_source)
{
    g->indexed = false;
    if (!sort_cells(g, key_source))
        return -1;
    g->in_order = true;
    return g->n == 0 || grid_gather(g, g->vals, g->n) == 0 ? 0 : -1;
}

int grid_index(mz_grid *g, cl_mem key_source)
{
    g->indexed = true;
    g->in_order = false;
    return sort_cells(g, key_source) ? 0 : -1;
}

bool grid_moves(const mz_grid *g, const cl_mem *buf)
{
    for (int k = 0; k < g->n_reg; k++)
        if (g->reg[k].buf == buf)
            return true;
    return false;
}

int grid_sort(mz_grid *g, cl_mem keys, cl_mem vals, size_t n, int bits)
{
    grid_release_events(g);
    if (n > g->n || bits < 0 || bits > 32) {
        mz_error("grid_sort: %zu pairs by %d bits (the grid holds %zu pairs, keys have 32 bits)",
                 n, bits, g->n);
        return -1;
    }
    if (n == 0)
        return 0;
    cl_mem keys2, vals2;
    if (!grid_sort_copies(g, &keys2, &vals2) || !grid_radix_sort(g, keys, vals, keys2, vals2, n, bits))
        return -1;
    /* An odd number of passes ends in the copies: home again. */
    return grid_radix_passes(bits, g->radix_bits) % 2 == 0 ||
                   (grid_copy(g, keys2, keys, 4 * n, "sort keys back") &&
                    grid_copy(g, vals2, vals, 4 * n, "sort values back"))
               ? 0
               : -1;
}

int grid_set_count(mz_grid *g, size_t n)
{
    if (n > g->cap) {
        mz_error("neighbour grid: %zu particles, more than the %zu its buffers hold", n, g->cap);
        return -1;
    }
    g->n = n;
    return 0;
}

int grid_gather(mz_grid *g, cl_mem vals, size_t n)
{
    cl_uint n_u = (cl_uint)n;
    for (int r = 0; r < g->n_reg; r++) {
        bool wide = g->reg[r].elem == 16;
        cl_kernel k = wide ? g->k_gather16 : g->k_gather4;
        const char *name = wide ? "gather16" : "gather4";
        cl_mem *scratch = g->reg[r].scratch ? &g->reg[r].scratch : grid_spare_of(g, g->reg[r].elem);
        if (!KARGS(k, name, A(n_u), A(vals), A(*g->reg[r].buf), A(*scratch)) ||
            !grid_launch_n(g, k, n, name))
            return -1;
        /* The kernel holds its own reference to the arguments: swapping now is safe (and the
         * buffer it reads from is the next one's scratch: launches run in order). */
        cl_mem t = *g->reg[r].buf;
        *g->reg[r].buf = *scratch;
        *scratch = t;
    }
    return 0;
}

int grid_settle(mz_grid *g)
{
    /* The build's launches hold its buffers until they have run: wait for them, so that the
     * memory is free for what is made next (once, at a solver's start). */
    clFinish(g->cl->queue);
    cl_mem *ms[] = {&g->keys, &g->vals, &g->keys_tmp, &g->vals_tmp, &g->hist, &g->spare4,
                    &g->spare16, &g->word_sums};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        if (*ms[i])
            clReleaseMemObject(*ms[i]);
        *ms[i] = NULL;
    }
    for (int r = 0; r < g->n_reg; r++) {
        if (g->reg[r].scratch)
            clReleaseMemObject(g->reg[r].scratch);
        g->reg[r].scratch = NULL;
    }
    g->settled = true;
    /* The first slots of the non-empty cells and the end: the last word's base and bits. */
    cl_uint last[2] = {0, 0};
    if (!g->words || !cl_ok(clEnqueueReadBuffer(g->cl->queue, g->cell_words, CL_TRUE,
                                                8 * (g->words - 1), 8, last, 0, NULL, NULL),
                            "clEnqueueReadBuffer(grid cell words)"))
        return g->words ? -1 : 0;
    size_t occupied = grid_cells_through(last, 31u);
    bool ok = occupied >= g->n || regrow(g, &g->cell_first, 4 * (occupied + 1),
                                         4 * (occupied + 1), "grid cells' first slots");
    grid_release_events(g);
    return ok ? 0 : -1;
}

void grid_release(mz_grid *g)
{
    grid_release_events(g);
    free(g->events);
    free(g->event_kernels);
    cl_kernel ks[] = {g->k_keys,    g->k_count,  g->k_scan,      g->k_scatter,
                      g->k_clear,   g->k_cell_clear, g->k_marks, g->k_word_sums,
                      g->k_word_bases, g->k_firsts, g->k_gather4,   g->k_gather16,
                      g->k_slab_keys, g->k_bounds, g->k_slab_segments, g->k_gather4_at,
                      g->k_gather16_at, g->k_hist_sums, g->k_hist_bases, g->k_moved_sums,
                      g->k_moved_pack, g->k_resort_merge};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    if (g->program)
        clReleaseProgram(g->program);
    cl_mem ms[] = {g->keys, g->vals, g->keys_tmp, g->vals_tmp, g->cell_words, g->cell_first,
                   g->word_sums, g->hist, g->moved};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    cl_mem own[MZ_GRID_MAX_REGISTERED + 2] = {g->spare4, g->spare16};
    for (int r = 0; r < g->n_reg; r++)
        own[r + 2] = g->reg[r].scratch;
    mz_cl_release_mems(own, (size_t)g->n_reg + 2);
    memset(g, 0, sizeof *g);
}
