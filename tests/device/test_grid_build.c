/* The neighbour grid's builds on PoCL: the radix sort against a host stable sort, the cell
 * tables, determinism of whole builds and the reorder of registered buffers, the sort's borrowed
 * copies, settled grids. The queries: test_grid.c. */
#include "grid_fixture.h"

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

/* ---- the resort ------------------------------------------------------------------------------ */

/* A grid and its six buffers, registered as a solver's own (pos, vel, id, body, the grid's
 * scratch) or as WCSPH's (sph.c: the scratch of both sizes and the sort's copies lent, the
 * 16-byte scratch doubling as the sort's value copy). */
typedef struct resort_grid {
    mz_grid g;
    cl_mem pos, vel, id, body, lent16, lent4, lent_keys;
} resort_grid;

static void resort_grid_create(resort_grid *r, const cloud *c, int way, int resort)
{
    size_t n = c->n;
    uint32_t *ids = iota(n);
    assert_int_equal(grid_create(&r->g, &cl, n, c->h, 3, c->lo, c->hi, c->mode), 0);
    r->g.resort_mode = resort;
    r->pos = upload(c->pos, 16 * n);
    r->vel = upload(c->pos, 16 * n);
    r->id = upload(ids, 4 * n);
    r->body = upload(ids, 4 * n);
    r->lent16 = r->lent4 = r->lent_keys = NULL;
    if (way == 1) {
        r->lent16 = upload(c->pos, 16 * n);
        r->lent4 = upload(ids, 4 * n);
        r->lent_keys = upload(c->pos, 16 * n);
        assert_int_equal(grid_borrow_scratch(&r->g, &r->lent16, 16), 0);
        assert_int_equal(grid_borrow_scratch(&r->g, &r->lent4, 4), 0);
        assert_int_equal(grid_borrow_sort_copies(&r->g, &r->lent_keys, &r->lent16), 0);
    }
    assert_int_equal(grid_register(&r->g, &r->pos, 16), 0);
    assert_int_equal(grid_register(&r->g, &r->vel, 16), 0);
    assert_int_equal(grid_register(&r->g, &r->id, 4), 0);
    assert_int_equal(grid_register(&r->g, &r->body, 4), 0);
    free(ids);
}

static void resort_grid_release(resort_grid *r)
{
    cl_mem ms[] = {r->pos, r->vel, r->id, r->body, r->lent16, r->lent4, r->lent_keys};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    grid_release(&r->g);
}

enum { STILL, JITTER, STIR, REVERSED, LOST, CROWD, N_MOVES };
static const char *const move_names[] = {"still", "jitter", "stir", "reversed slots",
                                         "lost particles", "one cell"};

/* The next step's buffers from the last build's (grid order): particles moved, or put in
 * another order (which the resort must sort like any other). */
static void move_particles(float *pos, float *vel, uint32_t *id, uint32_t *body, size_t n,
                           double h, int move)
{
    for (size_t i = 0; i < n; i++) {
        float *p = pos + 4 * i;
        switch (move) {
        case JITTER: /* a step's move: a few % change cells */
        case STIR:   /* most do */
            for (int a = 0; a < 3; a++)
                p[a] += (float)((move == JITTER ? 0.03 : 0.8) * h * (2.0 * rnd_unit() - 1.0));
            break;
        case LOST: /* far outside, non-finite */
            if (i % 97 == 0)
                p[0] = i % 2 ? NAN : 1e6f;
            break;
        case CROWD:
            p[0] = p[1] = p[2] = 0.25f;
            break;
        }
    }
    if (move == REVERSED)
        for (size_t i = 0; i < n / 2; i++) {
            size_t j = n - 1 - i;
            for (int a = 0; a < 4; a++) {
                float t = pos[4 * i + a];
                pos[4 * i + a] = pos[4 * j + a];
                pos[4 * j + a] = t;
                t = vel[4 * i + a];
                vel[4 * i + a] = vel[4 * j + a];
                vel[4 * j + a] = t;
            }
            uint32_t t = id[i];
            id[i] = id[j];
            id[j] = t;
            t = body[i];
            body[i] = body[j];
            body[j] = t;
        }
}

/* The resort (grid_resort.c) gives the full sort's build, byte for byte (keys, values, cell
 * tables, the reordered buffers), through steps that move a few particles, most of them, none,
 * reverse the slots, lose some far outside or crowd all into one cell; with the grid's own
 * scratch and with WCSPH's lent buffers; under the device's geometry, a GPU's, and odd ones
 * (an odd pass count packs the moved pairs elsewhere). */
static void test_resort_is_the_full_sort(void **state)
{
    (void)state;
    const char *geometries[] = {NULL, "256,8,4", "32,3,5", "1,64,7"};
    for (size_t t = 0; t < sizeof geometries / sizeof *geometries; t++) {
        if (geometries[t])
            setenv("MIZU_GRID_SORT", geometries[t], 1);
        for (int m = 0; m < 2; m++)
            for (int way = 0; way < 2; way++) {
                cloud c = uniform(20000, 3, -1.0, 1.0, modes[m]);
                size_t n = c.n;
                resort_grid full, re;
                resort_grid_create(&full, &c, way, 0);
                resort_grid_create(&re, &c, way, 2);
                float *pos = malloc(16 * n), *vel = malloc(16 * n);
                uint32_t *id = malloc(4 * n), *body = malloc(4 * n);
                for (int step = -1; step < N_MOVES; step++) {
                    if (step >= 0) { /* both grids get the same next step */
                        download(re.pos, pos, 16 * n);
                        download(re.vel, vel, 16 * n);
                        download(re.id, id, 4 * n);
                        download(re.body, body, 4 * n);
                        move_particles(pos, vel, id, body, n, c.h, step);
                        for (int k = 0; k < 2; k++) {
                            resort_grid *r = k ? &re : &full;
                            write_buf(r->pos, pos, 16 * n);
                            write_buf(r->vel, vel, 16 * n);
                            write_buf(r->id, id, 4 * n);
                            write_buf(r->body, body, 4 * n);
                        }
                    }
                    re.g.moved_seen = UINT32_MAX; /* a resort counts the moved ones */
                    assert_int_equal(grid_build(&full.g, full.pos), 0);
                    assert_int_equal(grid_build(&re.g, re.pos), 0);
                    /* the first build sorts in full; every later one resorts */
                    assert_true((re.g.moved_seen != UINT32_MAX) == (step >= 0));
                    snapshot a, b;
                    cl_mem *const regs_full[4] = {&full.pos, &full.vel, &full.id, &full.body};
                    cl_mem *const regs_re[4] = {&re.pos, &re.vel, &re.id, &re.body};
                    take(&full.g, regs_full, &a);
                    take(&re.g, regs_re, &b);
                    const uint32_t *keys = a.b[KEYS];
                    size_t occupied = 1;
                    for (size_t i = 1; i < n; i++)
                        occupied += keys[i] != keys[i - 1];
                    for (int k = 0; k < N_SNAP; k++)
                        if (memcmp(a.b[k], b.b[k], k == FIRST ? 4 * (occupied + 1) : a.bytes[k]))
                            fail_msg("%s, %s grid, %s buffers, after '%s': buffer %d of the "
                                     "resort differs from the full sort's",
                                     geometries[t] ? geometries[t] : "the device's geometry",
                                     mode_names[m], way ? "lent" : "own",
                                     step < 0 ? "the first build" : move_names[step], k);
                    check_ranges(&re.g, b.b[KEYS], b.b[WORDS], b.b[FIRST]);
                    if (step == STILL)
                        assert_int_equal(re.g.moved_seen, 0);
                    if (step == JITTER)
                        assert_true(re.g.moved_seen > 0 && re.g.moved_seen < n / 4);
                    if (step == STIR || step == REVERSED)
                        assert_true(re.g.moved_seen > n / 2);
                    drop(&a);
                    drop(&b);
                }
                free(pos);
                free(vel);
                free(id);
                free(body);
                resort_grid_release(&full);
                resort_grid_release(&re);
                free(c.pos);
            }
        unsetenv("MIZU_GRID_SORT");
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_device_geometry),
        cmocka_unit_test(test_sort_gpu_geometry),
        cmocka_unit_test(test_sort_odd_geometry),
        cmocka_unit_test(test_build_determinism_and_reorder),
        cmocka_unit_test(test_tables_across_blocks),
        cmocka_unit_test(test_borrowed_sort_copies),
        cmocka_unit_test(test_settle_and_occupied),
        cmocka_unit_test(test_resort_is_the_full_sort),
    };
    return cmocka_run_group_tests(tests, open_device, close_device);
}
