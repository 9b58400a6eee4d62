/* The neighbour grid on PoCL: the radix sort against a host stable sort, neighbour sets and
 * counts against brute force (exact: the same float arithmetic as the kernels), determinism of
 * whole builds, and the reorder of registered buffers. */
#include "test_util.h"
#include "test_world.h"

#include "device/cl_prog.h"
#include "device/grid.h"
#include "solvers/sim.h"

#include <math.h>

#define PI 3.14159265358979323846

/* xorshift64*: the same clouds on every run. */
static uint64_t rng = 88172645463325252ull;
static uint32_t rnd32(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}
static double rnd_unit(void) { return rnd32() / 4294967296.0; }
static double rnd_gauss(void)
{
    double u = rnd_unit() + 1e-12, v = rnd_unit();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static cl_mem upload(const void *data, size_t bytes)
{
    cl_mem m = mz_cl_buffer(&cl, CL_MEM_READ_WRITE, bytes, (void *)data, "test buffer");
    assert_non_null(m);
    return m;
}

static void download(cl_mem m, void *data, size_t bytes)
{
    assert_int_equal(clEnqueueReadBuffer(cl.queue, m, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
                     CL_SUCCESS);
}

static void write_buf(cl_mem m, const void *data, size_t bytes)
{
    assert_int_equal(clEnqueueWriteBuffer(cl.queue, m, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
                     CL_SUCCESS);
}

static uint32_t *iota(size_t n)
{
    uint32_t *v = malloc(4 * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    return v;
}

/* ---- radix sort ---------------------------------------------------------------------------- */

typedef struct pair {
    uint32_t key, val;
} pair;
static uint32_t sort_mask;

/* By masked key, then by original position: the order a stable sort must produce. */
static int cmp_pair(const void *a, const void *b)
{
    const pair *p = a, *q = b;
    uint32_t x = p->key & sort_mask, y = q->key & sort_mask;
    if (x != y)
        return x < y ? -1 : 1;
    return (p->val > q->val) - (p->val < q->val);
}

enum { RANDOM_DUPS, ALL_EQUAL, ASCENDING, DESCENDING, N_PATTERNS };

static void check_sort(mz_grid *g, size_t n, int bits, int pattern)
{
    sort_mask = bits == 32 ? 0xffffffffu : (1u << bits) - 1u;
    uint32_t *keys = malloc(4 * n), *vals = iota(n);
    pair *ref = malloc(sizeof *ref * n);
    size_t pool = n / 8 + 1; /* random keys drawn from few values: many duplicates */
    for (size_t i = 0; i < n; i++) {
        /* The low `bits` bits carry the pattern; the high ones are noise the sort must ignore. */
        uint32_t low = 0, noise = rnd32() & ~sort_mask;
        uint64_t ramp = n > 1 ? (uint64_t)i * sort_mask / (n - 1) : 0;
        switch (pattern) {
        case RANDOM_DUPS: low = (uint32_t)((rnd32() % pool) * 2654435761u); break;
        case ALL_EQUAL: low = 0x5a5a5a5au; noise = 0xa5a5a5a5u & ~sort_mask; break;
        case ASCENDING: low = (uint32_t)ramp; break;
        default: low = sort_mask - (uint32_t)ramp;
        }
        keys[i] = (low & sort_mask) | noise;
        ref[i] = (pair){keys[i], (uint32_t)i};
    }
    qsort(ref, n, sizeof *ref, cmp_pair);
    cl_mem kb = upload(keys, 4 * n), vb = upload(vals, 4 * n);
    assert_int_equal(grid_sort(g, kb, vb, n, bits), 0);
    download(kb, keys, 4 * n);
    download(vb, vals, 4 * n);
    for (size_t i = 0; i < n; i++)
        if (keys[i] != ref[i].key || vals[i] != ref[i].val)
            fail_msg("sort of %zu keys, %d bits, pattern %d (geometry %zux%zu, %d bits a pass): "
                     "slot %zu holds (%08x, %u), expected (%08x, %u)",
                     n, bits, pattern, g->group_size, g->items_per_item, g->radix_bits, i,
                     keys[i], vals[i], ref[i].key, ref[i].val);
    clReleaseMemObject(kb);
    clReleaseMemObject(vb);
    free(keys);
    free(vals);
    free(ref);
}

/* Every size, pattern and bit width, under the device's geometry (NULL), a GPU-like one and an
 * odd one with 8-bit digits (all on the CPU device: the kernels are the same code). */
static void sort_suite(const char *geometry)
{
    if (geometry)
        setenv("MIZU_GRID_SORT", geometry, 1);
    mz_grid g;
    double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    int created = grid_create(&g, &cl, 100003, 0.1, 3, lo, hi, MZ_GRID_AUTO);
    unsetenv("MIZU_GRID_SORT");
    assert_int_equal(created, 0);
    size_t b = g.group_size * g.items_per_item;
    size_t sizes[] = {1, 2, 255, 256, 257, b - 1, b, b + 1, 100003};
    int widths[] = {1, 4, 13, 24, 32};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (int p = 0; p < N_PATTERNS; p++)
                check_sort(&g, sizes[s], widths[w], p);
    /* More pairs than the grid holds is an error, not an overrun. */
    assert_int_equal(grid_sort(&g, g.keys, g.vals, 100004, 8), -1);
    grid_release(&g);
}

static void test_sort_device_geometry(void **state) { (void)state; sort_suite(NULL); }
static void test_sort_gpu_geometry(void **state) { (void)state; sort_suite("256,8,4"); }
static void test_sort_odd_geometry(void **state) { (void)state; sort_suite("32,3,8"); }

/* ---- neighbour sets ------------------------------------------------------------------------ */

typedef struct cloud {
    size_t n;
    int dim;
    double h, lo[3], hi[3];
    mz_grid_mode mode;
    float *pos; /* 4n: x, y, z, radius */
} cloud;

/* |pj − pi|² exactly as grid.clh computes it. */
static float dist2(const float *pi, const float *pj, int dim)
{
    float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
    return dim == 2 ? dx * dx + dy * dy : dx * dx + dy * dy + dz * dz;
}

/* Neighbour lists by particle id, ascending, in CSR form (first[p] .. first[p + 1]). */
typedef struct nlists {
    size_t *first;
    uint32_t *ids;
} nlists;

typedef struct pairs {
    uint32_t (*v)[2];
    size_t len, cap;
} pairs;
static void add_pair(pairs *ps, uint32_t a, uint32_t b)
{
    if (ps->len == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 1024;
        ps->v = realloc(ps->v, ps->cap * sizeof *ps->v);
    }
    ps->v[ps->len][0] = a;
    ps->v[ps->len++][1] = b;
}

static const float *sweep_pos;
static int cmp_x(const void *a, const void *b)
{
    float x = sweep_pos[4 * *(const uint32_t *)a], y = sweep_pos[4 * *(const uint32_t *)b];
    return (x > y) - (x < y);
}
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Brute force, independent of the grid: all pairs up to 10,000 particles, else a sweep along x
 * (sorted by x; a candidate further than 1.01 h along x has dx² > h², and the float sum only
 * grows, so stopping there loses nothing). NaN x cannot be sorted and matches nobody anyway. */
static nlists reference(const cloud *c, float h2)
{
    pairs ps = {0};
    size_t n = c->n;
    const float *p = c->pos;
    if (n <= 10000) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                if (dist2(p + 4 * i, p + 4 * j, c->dim) <= h2)
                    add_pair(&ps, (uint32_t)i, (uint32_t)j);
    } else {
        uint32_t *order = malloc(4 * n);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(p[4 * i]))
                order[m++] = (uint32_t)i;
        sweep_pos = p;
        qsort(order, m, 4, cmp_x);
        float reach = 1.01f * (float)c->h;
        for (size_t a = 0; a < m; a++) {
            const float *pi = p + 4 * order[a];
            if (dist2(pi, pi, c->dim) <= h2)
                add_pair(&ps, order[a], order[a]);
            for (size_t b = a + 1; b < m && !(p[4 * order[b]] - pi[0] > reach); b++)
                if (dist2(pi, p + 4 * order[b], c->dim) <= h2) {
                    add_pair(&ps, order[a], order[b]);
                    add_pair(&ps, order[b], order[a]);
                }
        }
        free(order);
    }
    nlists r = {calloc(n + 1, sizeof *r.first), malloc(4 * (ps.len ? ps.len : 1))};
    for (size_t k = 0; k < ps.len; k++)
        r.first[ps.v[k][0] + 1]++;
    for (size_t i = 0; i < n; i++)
        r.first[i + 1] += r.first[i];
    size_t *fill = malloc(sizeof *fill * (n ? n : 1));
    memcpy(fill, r.first, sizeof *fill * n);
    for (size_t k = 0; k < ps.len; k++)
        r.ids[fill[ps.v[k][0]]++] = ps.v[k][1];
    for (size_t i = 0; i < n; i++)
        qsort(r.ids + r.first[i], r.first[i + 1] - r.first[i], 4, cmp_u32);
    free(fill);
    free(ps.v);
    return r;
}

static cl_kernel make_kernel(cl_program prog, const char *name)
{
    cl_kernel k = cl_prog_kernel(prog, name);
    assert_non_null(k);
    return k;
}

/* Build the grid over the cloud, list every slot's neighbours on the device, compare with the
 * reference per particle id; then the same for count_neighbours. */
static void check_neighbours(const cloud *c, const char *label)
{
    size_t n = c->n;
    mz_grid g;
    assert_int_equal(grid_create(&g, &cl, n, c->h, c->dim, c->lo, c->hi, c->mode), 0);
    if (c->mode != MZ_GRID_AUTO)
        assert_int_equal(g.desc.hashed, c->mode == MZ_GRID_HASHED);
    nlists ref = reference(c, g.desc.h2);
    uint32_t *ids = iota(n);
    cl_mem pos = upload(c->pos, 16 * n), id = upload(ids, 4 * n);
    assert_int_equal(grid_register(&g, &pos, 16), 0);
    assert_int_equal(grid_register(&g, &id, 4), 0);
    assert_int_equal(grid_build(&g, pos), 0);

    size_t maxn = 1;
    for (size_t i = 0; i < n; i++)
        if (ref.first[i + 1] - ref.first[i] > maxn)
            maxn = ref.first[i + 1] - ref.first[i];
    char defines[32];
    snprintf(defines, sizeof defines, "-DMZ_DIM=%d", c->dim);
    cl_program prog = cl_prog_build(&cl, "grid/grid_test.cl", defines);
    assert_non_null(prog);
    cl_kernel k = make_kernel(prog, "neighbour_list");
    cl_kernel kc = make_kernel(g.program, "count_neighbours");
    uint32_t zero = 0, *count = malloc(4 * n), *list = malloc(4 * n * maxn);
    cl_mem count_b = upload(count, 4 * n), list_b = upload(list, 4 * n * maxn),
           over_b = upload(&zero, 4);
    cl_uint n_u = (cl_uint)n, maxn_u = (cl_uint)maxn;
    assert_true(KARGS(k, "neighbour_list", A(n_u), A(g.desc), A(g.cell_words), A(g.cell_first),
                      A(pos), A(id), A(maxn_u), A(count_b), A(list_b), A(over_b)));
    assert_true(mz_cl_run1d(&cl, k, n, NULL, "neighbour_list"));
    uint32_t overflow = 1;
    download(over_b, &overflow, 4);
    download(count_b, count, 4 * n);
    download(list_b, list, 4 * n * maxn);
    download(id, ids, 4 * n);
    assert_int_equal(overflow, 0);
    for (size_t s = 0; s < n; s++) {
        uint32_t p = ids[s];
        size_t want = ref.first[p + 1] - ref.first[p];
        if (count[s] != want)
            fail_msg("%s: particle %u (slot %zu) at (%g, %g, %g) has %u neighbours, brute force "
                     "%zu", label, p, s, c->pos[4 * p], c->pos[4 * p + 1], c->pos[4 * p + 2],
                     count[s], want);
        uint32_t *got = list + s * maxn;
        qsort(got, want, 4, cmp_u32);
        for (size_t e = 0; e < want; e++)
            if (got[e] != ref.ids[ref.first[p] + e])
                fail_msg("%s: particle %u: neighbour %zu is %u, brute force %u", label, p, e,
                         got[e], ref.ids[ref.first[p] + e]);
    }
    assert_true(KARGS(kc, "count_neighbours", A(n_u), A(g.desc), A(g.cell_words),
                      A(g.cell_first), A(pos), A(count_b)));
    assert_true(mz_cl_run1d(&cl, kc, n, NULL, "count_neighbours"));
    download(count_b, count, 4 * n);
    for (size_t s = 0; s < n; s++)
        if (count[s] != ref.first[ids[s] + 1] - ref.first[ids[s]])
            fail_msg("%s: count_neighbours of particle %u: %u, brute force %zu", label, ids[s],
                     count[s], ref.first[ids[s] + 1] - ref.first[ids[s]]);

    cl_mem ms[] = {pos, id, count_b, list_b, over_b};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        clReleaseMemObject(ms[i]);
    clReleaseKernel(k);
    clReleaseKernel(kc);
    clReleaseProgram(prog);
    grid_release(&g);
    free(ids);
    free(count);
    free(list);
    free(ref.first);
    free(ref.ids);
}

static cloud new_cloud(size_t n, int dim, double h, double lo, double hi, mz_grid_mode mode)
{
    cloud c = {n, dim, h, {lo, lo, dim == 3 ? lo : 0}, {hi, hi, dim == 3 ? hi : 0}, mode,
               calloc(4 * (n ? n : 1), sizeof(float))};
    return c;
}

static void set_pos(cloud *c, size_t i, double x, double y, double z)
{
    c->pos[4 * i] = (float)x;
    c->pos[4 * i + 1] = (float)y;
    c->pos[4 * i + 2] = c->dim == 3 ? (float)z : 0.0f;
    c->pos[4 * i + 3] = (float)(0.25 * c->h); /* a radius: must not count as a coordinate */
}

/* Uniform in the box, h giving about 30 neighbours. */
static cloud uniform(size_t n, int dim, double lo, double hi, mz_grid_mode mode)
{
    double side = hi - lo, volume = dim == 3 ? side * side * side : side * side;
    double per = 30.0 / (double)n * volume; /* volume holding 30 particles */
    double h = dim == 3 ? cbrt(per * 3.0 / (4.0 * PI)) : sqrt(per / PI);
    cloud c = new_cloud(n, dim, h, lo, hi, mode);
    for (size_t i = 0; i < n; i++)
        set_pos(&c, i, lo + side * rnd_unit(), lo + side * rnd_unit(), lo + side * rnd_unit());
    return c;
}

static const mz_grid_mode modes[] = {MZ_GRID_DENSE, MZ_GRID_HASHED};
static const char *const mode_names[] = {"dense", "hashed"};

static void run(cloud c, const char *what, int m)
{
    char label[128];
    snprintf(label, sizeof label, "%s, %s, %dD, n = %zu", what, mode_names[m], c.dim, c.n);
    check_neighbours(&c, label);
    free(c.pos);
}

static void test_uniform(void **state)
{
    (void)state;
    size_t sizes[] = {1, 2, 17, 1000, 10000, 100000};
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                run(uniform(sizes[s], dim, 0.0, 1.0, modes[m]), "uniform", m);
}

/* Gaussian blobs: dense clumps next to empty space. */
static void test_clustered(void **state)
{
    (void)state;
    size_t sizes[] = {5000, 100000};
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++)
            for (size_t s = 0; s < 2; s++) {
                double h = 0.05;
                cloud c = new_cloud(sizes[s], dim, h, -1.0, 1.0, modes[m]);
                double centre[8][3];
                for (int b = 0; b < 8; b++)
                    for (int a = 0; a < 3; a++)
                        centre[b][a] = -0.6 + 1.2 * rnd_unit();
                double sigma = dim == 3 ? 4 * h : 8 * h;
                for (size_t i = 0; i < c.n; i++) {
                    const double *o = centre[rnd32() % 8];
                    set_pos(&c, i, o[0] + sigma * rnd_gauss(), o[1] + sigma * rnd_gauss(),
                            o[2] + sigma * rnd_gauss());
                }
                run(c, "clustered", m);
            }
}

/* Everyone in one cell: every particle sees all of them. */
static void test_one_cell(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++) {
            cloud c = new_cloud(1500, dim, 0.5, 0.0, 4.0, modes[m]);
            for (size_t i = 0; i < c.n; i++)
                set_pos(&c, i, 1.0 + 0.2 * rnd_unit(), 1.0 + 0.2 * rnd_unit(),
                        1.0 + 0.2 * rnd_unit());
            run(c, "one cell", m);
        }
}

/* Lattices from a negative origin. Spacing h/2 with h a power of two: every coordinate and
 * distance is exact and many pairs are exactly h apart (included). Spacing half the grid's true
 * cell width (a hair over h): every other particle sits on a cell face, where the float cell
 * coordinate rounds either way. */
static void test_cell_boundaries(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++)
            for (int faces = 0; faces < 2; faces++) {
                int side = dim == 3 ? 21 : 101;
                size_t n = (size_t)side * side * (dim == 3 ? side : 1);
                cloud c = new_cloud(n, dim, 0.5, -2.0, 3.0, modes[m]);
                mz_grid probe;
                assert_int_equal(grid_create(&probe, &cl, n, c.h, dim, c.lo, c.hi, c.mode), 0);
                float step = faces ? 0.5f / probe.desc.inv_h : 0.25f;
                grid_release(&probe);
                for (size_t i = 0; i < n; i++)
                    set_pos(&c, i, -2.0f + step * (float)(i % side),
                            -2.0f + step * (float)(i / side % side),
                            -2.0f + step * (float)(i / side / side));
                run(c, faces ? "lattice on cell faces" : "lattice of exact distances", m);
            }
}

/* Pairs within h straddling cell faces, nudged a few ulps either way: with h = 0.1 and cells
 * exactly fl(1/h)⁻¹ wide, some of them (a at -0.200000048, b at -0.100000054, origin -1) get
 * cell coordinates two apart and would be missed; the grid's wider cells must find them all. */
static void test_rounding_at_faces(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++) {
            cloud c = new_cloud(19 * 81 * 2, dim, 0.1, -1.0, 1.0, modes[m]);
            float hf = (float)c.h;
            size_t i = 0;
            for (int k = 1; k < 20; k++)
                for (int da = -4; da <= 4; da++)
                    for (int db = -4; db <= 4; db++) {
                        float a = -1.0f + (float)k * hf, b;
                        for (int t = 0; t < abs(da); t++)
                            a = nextafterf(a, da > 0 ? INFINITY : -INFINITY);
                        b = a + hf;
                        for (int t = 0; t < abs(db); t++)
                            b = nextafterf(b, db > 0 ? INFINITY : -INFINITY);
                        set_pos(&c, i++, a, 0.3, 0.3);
                        set_pos(&c, i++, b, 0.3, 0.3);
                    }
            run(c, "pairs across cell faces", m);
        }
}

/* Negative coordinates; a tenth of the particles outside the domain, some just beyond it, some
 * very far (pairs of them close together, so clamped far cells still find their neighbours);
 * and non-finite positions, which must see no one and be seen by no one. */
static void test_outside_and_nonfinite(void **state)
{
    (void)state;
    size_t sizes[] = {3000, 30000};
    for (int dim = 2; dim <= 3; dim++)
        for (int m = 0; m < 2; m++)
            for (size_t s = 0; s < 2; s++) {
                cloud c = uniform(sizes[s], dim, -7.5, -1.5, modes[m]);
                double far[] = {1e6, -1e6, 1e12, -3e30, 3e38, -3e38};
                size_t i = 0;
                for (; i < c.n / 10; i++)
                    set_pos(&c, i, -7.5 - 3 * c.h + 9 * rnd_unit(), -7.5 - 3 * c.h + 9 * rnd_unit(),
                            -1.5 + 3 * c.h * rnd_unit());
                for (size_t f = 0; f < sizeof far / sizeof *far; f++, i += 3) {
                    set_pos(&c, i, far[f], -4.0, far[f]);
                    set_pos(&c, i + 1, far[f], -4.0, far[f]); /* same spot: neighbours */
                    set_pos(&c, i + 2, -4.0, far[f] + 0.5 * c.h, -4.0);
                }
                set_pos(&c, i++, NAN, NAN, NAN);
                set_pos(&c, i++, -4.0, NAN, -4.0);
                set_pos(&c, i++, INFINITY, -4.0, -4.0);
                set_pos(&c, i++, -4.0, -INFINITY, -INFINITY);
                set_pos(&c, i++, c.lo[0], c.lo[1], c.lo[2]); /* next to cell (0,0,0), */
                set_pos(&c, i++, c.lo[0], c.lo[1], c.lo[2]); /* where NaNs are put */
                run(c, "outside the domain and non-finite", m);
            }
}

/* A domain far too big for a dense grid: MZ_GRID_AUTO picks the hash table. */
static void test_auto_hashed(void **state)
{
    (void)state;
    cloud c = uniform(20000, 3, 0.0, 1.0, MZ_GRID_AUTO);
    c.hi[0] = c.hi[1] = c.hi[2] = 1e4;
    mz_grid g;
    assert_int_equal(grid_create(&g, &cl, c.n, c.h, 3, c.lo, c.hi, MZ_GRID_AUTO), 0);
    assert_true(g.desc.hashed);
    assert_int_equal(g.cells, 65536); /* next power of two ≥ 2n */
    grid_release(&g);
    run(c, "auto (hashed)", 1);
}

/* ---- whole builds --------------------------------------------------------------------------- */

/* Everything a build leaves: keys, values, both cell tables and the four registered buffers. */
enum { KEYS, VALS, WORDS, FIRST, POS, VEL, ID, BODY, N_SNAP };
typedef struct snapshot {
    void *b[N_SNAP];
    size_t bytes[N_SNAP];
} snapshot;

static void take(const mz_grid *g, cl_mem *const regs[4], snapshot *s)
{
    size_t n = g->n;
    cl_mem from[N_SNAP] = {g->keys, g->vals, g->cell_words, g->cell_first,
                           *regs[0], *regs[1], *regs[2], *regs[3]};
    size_t bytes[N_SNAP] = {4 * n, 4 * n, 8 * g->words, 4 * (n + 1), 16 * n, 16 * n, 4 * n, 4 * n};
    for (int k = 0; k < N_SNAP; k++) {
        s->bytes[k] = bytes[k];
        s->b[k] = malloc(bytes[k]);
        download(from[k], s->b[k], bytes[k]);
    }
}

static void drop(snapshot *s)
{
    for (int k = 0; k < N_SNAP; k++)
        free(s->b[k]);
}

/* The cell tables against the sorted keys: each key's range (grid_cell_range) is exactly its run
 * of slots, empty cells get 0..0, ranges of consecutive non-empty cells abut from 0 to n, the
 * words' bits past the last cell are clear, and runs of consecutive keys are one range each. */
static void check_ranges(const mz_grid *g, const uint32_t *keys, const uint32_t *words,
                         const uint32_t *first)
{
    size_t n = g->n;
    for (size_t i = 0; i < n; i++) {
        assert_true(keys[i] < g->cells && (i == 0 || keys[i - 1] <= keys[i]));
        uint32_t lo, hi;
        grid_cell_range(words, first, keys[i], &lo, &hi);
        assert_true(lo <= i && i < hi);
        assert_true(lo == 0 || keys[lo - 1] != keys[i]);
        assert_true(hi == n || keys[hi] != keys[i]);
    }
    uint32_t next = 0;
    for (size_t k = 0; k < g->cells; k++) {
        uint32_t lo, hi;
        grid_cell_range(words, first, (uint32_t)k, &lo, &hi);
        assert_true(lo < hi || (lo == 0 && hi == 0));
        if (lo < hi) {
            assert_int_equal(lo, next);
            next = hi;
        }
    }
    assert_int_equal(next, n);
    if (g->cells % 32)
        assert_int_equal(words[2 * (g->words - 1)] >> (g->cells % 32), 0);
    /* Runs of up to three consecutive keys (a dense row's x − 1 .. x + 1, grid_keys_range): from
     * the first slot keyed k0 or more to the first keyed past k1, up to the table's last key. */
    size_t at = 0, past = 0;
    for (size_t k0 = 0; k0 < g->cells; k0++) {
        while (at < n && keys[at] < k0)
            at++;
        for (size_t k1 = k0; k1 < k0 + 3 && k1 < g->cells; k1++) {
            past = at;
            while (past < n && keys[past] <= k1)
                past++;
            uint32_t lo, hi;
            grid_keys_range(words, first, (uint32_t)k0, (uint32_t)k1, &lo, &hi);
            assert_int_equal(lo, at);
            assert_int_equal(hi, past);
        }
    }
}

/* After a build: buffers are the originals permuted by id, and the cell tables hold the sorted
 * keys' ranges (check_ranges). */
static void check_build(const mz_grid *g, const snapshot *s, const float *pos0, const float *vel0,
                        const uint32_t *body0)
{
    const uint32_t *id = s->b[ID], *body = s->b[BODY];
    const float *pos = s->b[POS], *vel = s->b[VEL];
    size_t n = g->n;
    char *seen = calloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        uint32_t p = id[i];
        assert_true(p < n && !seen[p]);
        seen[p] = 1;
        assert_memory_equal(pos + 4 * i, pos0 + 4 * p, 16);
        assert_memory_equal(vel + 4 * i, vel0 + 4 * p, 16);
        assert_int_equal(body[i], body0[p]);
    }
    check_ranges(g, s->b[KEYS], s->b[WORDS], s->b[FIRST]);
    free(seen);
}

/* The tables' scan over the words runs in blocks of GS · ITEMS words: a sparse cloud (one
 * particle in 62 dense cells: 3,907 words, more than the particles, so a build empties only the
 * previous keys' words; hashed, 128 words, all of them) under geometries with several blocks,
 * then a denser cloud whose build must empty the first one's cells. */
static void test_tables_across_blocks(void **state)
{
    (void)state;
    const char *geometries[] = {"32,3,8", "256,8,4", "1,64,8"};
    for (size_t t = 0; t < sizeof geometries / sizeof *geometries; t++) {
        setenv("MIZU_GRID_SORT", geometries[t], 1);
        for (int m = 0; m < 2; m++) {
            size_t n = 2000;
            cloud c = new_cloud(n, 3, 0.02, 0.0, 1.0, modes[m]); /* 125,000 dense cells */
            for (size_t i = 0; i < n; i++)
                set_pos(&c, i, rnd_unit(), rnd_unit(), rnd_unit());
            mz_grid g;
            assert_int_equal(grid_create(&g, &cl, n, c.h, 3, c.lo, c.hi, c.mode), 0);
            cl_mem pos = upload(c.pos, 16 * n);
            assert_int_equal(grid_register(&g, &pos, 16), 0);
            uint32_t *keys = malloc(4 * n), *words = malloc(8 * g.words);
            uint32_t *first = malloc(4 * (n + 1));
            for (int round = 0; round < 2; round++) {
                if (round == 1) /* denser: a corner of the box */
                    for (size_t i = 0; i < n; i++)
                        set_pos(&c, i, 0.3 * rnd_unit(), 0.3 * rnd_unit(), 0.3 * rnd_unit());
                write_buf(pos, c.pos, 16 * n);
                assert_int_equal(grid_build(&g, pos), 0);
                download(g.keys, keys, 4 * n);
                download(g.cell_words, words, 8 * g.words);
                download(g.cell_first, first, 4 * (n + 1));
                check_ranges(&g, keys, words, first);
            }
            free(keys);
            free(words);
            free(first);
            clReleaseMemObject(pos);
            grid_release(&g);
            free(c.pos);
        }
    }
    unsetenv("MIZU_GRID_SORT");
}

/* Two builds from the same input are byte-identical, also with another cloud built in between
 * (its cells must be emptied); a rebuild of the reordered buffers keeps them in place (the sort
 * is stable: values come back as the identity). */
static void test_build_determinism_and_reorder(void **state)
{
    (void)state;
    for (int m = 0; m < 2; m++) {
        cloud c = uniform(50000, 3, -1.0, 1.0, modes[m]);
        cloud other = uniform(c.n, 3, -1.2, 0.3, modes[m]);
        set_pos(&c, 7, NAN, 0, 0);
        set_pos(&c, 8, 50.0, -50.0, 3.0);
        size_t n = c.n;
        float *vel0 = malloc(16 * n);
        uint32_t *body0 = malloc(4 * n), *ids = iota(n);
        for (size_t i = 0; i < 4 * n; i++)
            vel0[i] = (float)rnd_gauss();
        for (size_t i = 0; i < n; i++)
            body0[i] = rnd32() % 5;
        mz_grid g;
        assert_int_equal(grid_create(&g, &cl, n, c.h, 3, c.lo, c.hi, c.mode), 0);
        cl_mem pos = upload(c.pos, 16 * n), vel = upload(vel0, 16 * n),
               id = upload(ids, 4 * n), body = upload(body0, 4 * n);
        cl_mem *const regs[4] = {&pos, &vel, &id, &body};
        const size_t elems[4] = {16, 16, 4, 4};
        for (int r = 0; r < 4; r++)
            assert_int_equal(grid_register(&g, regs[r], elems[r]), 0);
        const void *orig[4] = {c.pos, vel0, ids, body0}, *moved[4] = {other.pos, vel0, ids, body0};
        snapshot a, b;
        assert_int_equal(grid_build(&g, pos), 0);
        take(&g, regs, &a);
        check_build(&g, &a, c.pos, vel0, body0);

        assert_int_equal(grid_build(&g, pos), 0); /* already in grid order */
        take(&g, regs, &b);
        check_build(&g, &b, c.pos, vel0, body0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(((uint32_t *)b.b[VALS])[i], i);
        drop(&b);

        for (int r = 0; r < 4; r++) /* another cloud in between */
            write_buf(*regs[r], moved[r], elems[r] * n);
        assert_int_equal(grid_build(&g, pos), 0);
        take(&g, regs, &b);
        check_build(&g, &b, other.pos, vel0, body0);
        drop(&b);

        for (int r = 0; r < 4; r++)
            write_buf(*regs[r], orig[r], elems[r] * n);
        assert_int_equal(grid_build(&g, pos), 0);
        take(&g, regs, &b);
        for (int k = 0; k < N_SNAP; k++)
            if (memcmp(a.b[k], b.b[k], a.bytes[k]))
                fail_msg("%s grid: rebuild differs from the first build in buffer %d",
                         mode_names[m], k);
        drop(&a);
        drop(&b);
        for (int r = 0; r < 4; r++)
            clReleaseMemObject(*regs[r]);
        grid_release(&g);
        free(vel0);
        free(body0);
        free(ids);
        free(c.pos);
        free(other.pos);
    }
}

/* The sort's copies borrowed (grid_borrow_sort_copies), and else the reorder scratch standing
 * in for them, give a build byte-identical to one with the grid's own copies, with odd and
 * even pass counts; the borrowed buffers are the owner's again afterwards. */
static void test_borrowed_sort_copies(void **state)
{
    (void)state;
    const char *geometries[] = {"1,4096,8", "256,8,4", "32,3,5", "1,64,7"};
    for (size_t t = 0; t < sizeof geometries / sizeof *geometries; t++) {
        setenv("MIZU_GRID_SORT", geometries[t], 1);
        for (int m = 0; m < 2; m++) {
            cloud c = uniform(20000, 3, -1.0, 1.0, modes[m]);
            size_t n = c.n;
            uint32_t *ids = iota(n);
            snapshot s[3];
            for (int way = 0; way < 3; way++) { /* own copies, the scratch's, borrowed */
                mz_grid g;
                assert_int_equal(grid_create(&g, &cl, n, c.h, 3, c.lo, c.hi, c.mode), 0);
                cl_mem pos = upload(c.pos, 16 * n), vel = upload(c.pos, 16 * n),
                       id = upload(ids, 4 * n), body = upload(ids, 4 * n);
                cl_mem lent_k = upload(ids, 4 * n), lent_v = upload(ids, 4 * n);
                cl_mem *const regs[4] = {&pos, &vel, &id, &body};
                if (way == 2)
                    assert_int_equal(grid_borrow_sort_copies(&g, &lent_k, &lent_v), 0);
                assert_int_equal(grid_register(&g, &pos, 16), 0);
                assert_int_equal(grid_register(&g, &vel, 16), 0);
                if (way > 0) {
                    assert_int_equal(grid_register(&g, &id, 4), 0);
                    assert_int_equal(grid_register(&g, &body, 4), 0);
                }
                for (int round = 0; round < 2; round++) /* the second one sorted already */
                    assert_int_equal(grid_build(&g, pos), 0);
                take(&g, regs, &s[way]);
                assert_true((way == 0) == (g.keys_tmp != NULL)); /* made only when needed */
                assert_true(g.keys != lent_k && g.vals != lent_v && g.keys != lent_v);
                for (int r = 0; r < 4; r++)
                    clReleaseMemObject(*regs[r]);
                clReleaseMemObject(lent_k);
                clReleaseMemObject(lent_v);
                grid_release(&g);
            }
            /* The first slots past the non-empty cells' (and the end) are never written. */
            const uint32_t *sorted = s[0].b[KEYS];
            size_t occupied = 1;
            for (size_t i = 1; i < n; i++)
                occupied += sorted[i] != sorted[i - 1];
            for (int way = 1; way < 3; way++) {
                for (int k = KEYS; k <= VEL; k++)
                    if (memcmp(s[0].b[k], s[way].b[k],
                               k == FIRST ? 4 * (occupied + 1) : s[0].bytes[k]))
                        fail_msg("%s, %s grid: buffer %d differs with the copies' way %d",
                                 geometries[t], mode_names[m], k, way);
                drop(&s[way]);
            }
            drop(&s[0]);
            free(ids);
            free(c.pos);
        }
    }
    unsetenv("MIZU_GRID_SORT");
}

/* grid_settle cuts the first slots to the non-empty cells, which grid_occupied_cells finds on
 * the host from the same positions (non-finite and outside ones among them), and the tables
 * read as before. */
static void test_settle_and_occupied(void **state)
{
    (void)state;
    for (int m = 0; m < 2; m++) {
        cloud c = uniform(30000, 3, -1.0, 1.0, modes[m]);
        set_pos(&c, 3, NAN, 0, 0);
        set_pos(&c, 4, 50.0, -50.0, 3.0);
        for (size_t i = 10; i < 5000; i++) /* a dense clump: cells of many particles */
            set_pos(&c, i, 0.1 * rnd_unit(), 0.1 * rnd_unit(), 0.1 * rnd_unit());
        size_t n = c.n;
        mz_grid g;
        assert_int_equal(grid_create(&g, &cl, n, c.h, 3, c.lo, c.hi, c.mode), 0);
        cl_mem pos = upload(c.pos, 16 * n);
        assert_int_equal(grid_register(&g, &pos, 16), 0);
        assert_int_equal(grid_build(&g, pos), 0);
        uint32_t *keys = malloc(4 * n), *words = malloc(8 * g.words);
        uint32_t *first = malloc(4 * (n + 1));
        download(g.keys, keys, 4 * n);
        size_t occupied = 1;
        for (size_t i = 1; i < n; i++)
            occupied += keys[i] != keys[i - 1];
        assert_true(occupied < n / 2);
        assert_int_equal(grid_occupied_cells(&g.desc, g.cells, c.pos, n), occupied);
        assert_int_equal(grid_settle(&g), 0);
        size_t bytes = 0;
        assert_int_equal(clGetMemObjectInfo(g.cell_first, CL_MEM_SIZE, sizeof bytes, &bytes,
                                            NULL),
                         CL_SUCCESS);
        assert_int_equal(bytes, 4 * (occupied + 1));
        assert_int_equal(grid_settled_bytes(g.cells, occupied), 8 * g.words + bytes);
        download(g.cell_words, words, 8 * g.words);
        download(g.cell_first, first, bytes);
        check_ranges(&g, keys, words, first);
        assert_int_equal(grid_build(&g, pos), -1); /* settled */
        free(keys);
        free(words);
        free(first);
        clReleaseMemObject(pos);
        grid_release(&g);
        free(c.pos);
    }
}

static void test_bad_arguments_and_empty(void **state)
{
    (void)state;
    mz_grid g;
    double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, huge[3] = {1e6, 1e6, 1e6};
    assert_int_equal(grid_create(&g, &cl, 10, 0.0, 3, lo, hi, MZ_GRID_AUTO), -1);
    assert_int_equal(grid_create(&g, &cl, 10, NAN, 3, lo, hi, MZ_GRID_AUTO), -1);
    assert_int_equal(grid_create(&g, &cl, 10, 0.1, 4, lo, hi, MZ_GRID_AUTO), -1);
    assert_int_equal(grid_create(&g, &cl, 10, 0.1, 3, hi, lo, MZ_GRID_AUTO), -1);
    assert_int_equal(grid_create(&g, &cl, 10, 1e-3, 3, lo, huge, MZ_GRID_DENSE), -1);
    setenv("MIZU_GRID_SORT", "3,8,4", 1); /* group size not a power of two */
    int bad = grid_create(&g, &cl, 10, 0.1, 3, lo, hi, MZ_GRID_AUTO);
    unsetenv("MIZU_GRID_SORT");
    assert_int_equal(bad, -1);
    assert_int_equal(grid_create(&g, &cl, 10, 0.1, 3, lo, hi, MZ_GRID_AUTO), 0);
    cl_mem b;
    assert_int_equal(grid_register(&g, &b, 8), -1);
    grid_release(&g);
    /* No particles: nothing to sort, but a valid (empty) grid. */
    assert_int_equal(grid_create(&g, &cl, 0, 0.1, 2, lo, hi, MZ_GRID_AUTO), 0);
    assert_int_equal(grid_build(&g, g.keys), 0);
    assert_int_equal(grid_sort(&g, g.keys, g.vals, 0, 32), 0);
    grid_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_device_geometry),
        cmocka_unit_test(test_sort_gpu_geometry),
        cmocka_unit_test(test_sort_odd_geometry),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_clustered),
        cmocka_unit_test(test_one_cell),
        cmocka_unit_test(test_cell_boundaries),
        cmocka_unit_test(test_rounding_at_faces),
        cmocka_unit_test(test_outside_and_nonfinite),
        cmocka_unit_test(test_auto_hashed),
        cmocka_unit_test(test_build_determinism_and_reorder),
        cmocka_unit_test(test_tables_across_blocks),
        cmocka_unit_test(test_borrowed_sort_copies),
        cmocka_unit_test(test_settle_and_occupied),
        cmocka_unit_test(test_bad_arguments_and_empty),
    };
    return cmocka_run_group_tests(tests, open_device, close_device);
}
