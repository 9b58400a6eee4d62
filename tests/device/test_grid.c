/* The neighbour grid on PoCL: neighbour sets and counts against brute force (exact: the same
 * float arithmetic as the kernels), in dense and hashed grids, at cell faces, for particles outside
 * or not finite; and bad arguments. The sort and whole builds: test_grid_build.c. */
#include "grid_fixture.h"

/* ---- neighbour sets ------------------------------------------------------------------------ */


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
    cl_program prog = cl_prog_build(&cl, "grid/grid_test.cl", defines, false);
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
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_clustered),
        cmocka_unit_test(test_one_cell),
        cmocka_unit_test(test_cell_boundaries),
        cmocka_unit_test(test_rounding_at_faces),
        cmocka_unit_test(test_outside_and_nonfinite),
        cmocka_unit_test(test_auto_hashed),
        cmocka_unit_test(test_bad_arguments_and_empty),
    };
    /* Both of the dense walk's ways to its rows (MIZU_GRID_ROWS): the device's own (a CPU's
     * looks them up first, a GPU's in turn), then the other. */
    unsetenv("MIZU_GRID_ROWS");
    if (open_device(NULL) != 0)
        return 1;
    const char *other = cl.rows_first ? "each" : "first";
    close_device(NULL);
    int failed = cmocka_run_group_tests_name("the device's own walk", tests, open_device,
                                             close_device);
    setenv("MIZU_GRID_ROWS", other, 1);
    failed += cmocka_run_group_tests_name(other[0] == 'f' ? "rows looked up first"
                                                          : "rows looked up in turn",
                                          tests, open_device, close_device);
    unsetenv("MIZU_GRID_ROWS");
    return failed;
}
