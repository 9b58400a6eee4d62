/* Triangle meshes: OBJ reading and its errors, edges and bending pairs, closedness, transform,
 * and voxelisation against exact counts, the mesh's own volume and a brute-force reference. */
#include "test_util.h"

#include "scene/mesh.h"

#include <math.h>
#include <stdbool.h>
#include <time.h>

#define MESHES "scenes/meshes/"

static void load(const char *path, mz_mesh *m)
{
    mz_diag d = {0};
    if (mesh_load_obj(path, m, NULL, &d) != 0)
        fail_msg("%s: %s", path, d.count ? d.msgs[0] : "?");
    diag_free(&d);
}

/* Parse, expecting failure; the messages joined by '\n'. */
static char *parse_errors(const char *text)
{
    mz_mesh m = {.n_verts = 7};
    mz_diag d = {0};
    assert_int_equal(mesh_parse_obj(text, strlen(text), "t.obj", &m, &d), -1);
    assert_true(m.n_verts == 0 && m.n_tris == 0 && !m.v && !m.tri);
    mz_str all = {0};
    for (size_t i = 0; i < d.count; i++)
        str_addf(&all, "%s%s", i ? "\n" : "", d.msgs[i]);
    diag_free(&d);
    return all.s ? all.s : xstrdup("");
}

static void assert_tri(const mz_mesh *m, size_t t, uint32_t a, uint32_t b, uint32_t c)
{
    if (m->tri[t][0] != a || m->tri[t][1] != b || m->tri[t][2] != c)
        fail_msg("triangle %zu: expected %u %u %u, got %u %u %u", t, a, b, c, m->tri[t][0],
                 m->tri[t][1], m->tri[t][2]);
}

static void test_parse_forms(void **state)
{
    (void)state;
    const char *text = "# comment\r\n"
                       "mtllib x.mtl\r\n"
                       "o thing\n"
                       "f 1 2 3\n" /* positive indices may name later vertices */
                       "v 0 0 0\n"
                       "v 1 0 0 1.0\n" /* w ignored */
                       "\n"
                       "   \t\n"
                       "v 1 1 0\r\n"
                       "v 0 1 0 # inline comment\n"
                       "v 0.5 0.5 1e0\n"
                       "vt 0 0\nvn 0 0 1\ng grp\ns off\nusemtl m\nl 1 2\n"
                       "f 1/1 2/2 3/3\n"
                       "f 1/1/1 2/2/2 3/3/3\r\n"
                       "f 1//1 2//1 3//1\n"
                       "f -5 -4 -3\n"        /* relative: vertices 1 2 3 */
                       "f 1 2 3 4\n"         /* a quad: two triangles */
                       "f 1 2 3 4 5\n"       /* a pentagon: three */
                       "f 1 1 2\n"           /* degenerate: dropped */
                       "f 1 2 2 3\n"         /* one of its fan's triangles is degenerate */
                       "v -1 -1 -1\nf -1 -2 -3"; /* relative to the vertices so far; no newline */
    mz_mesh m;
    mz_diag d = {0};
    assert_int_equal(mesh_parse_obj(text, strlen(text), "t.obj", &m, &d), 0);
    assert_int_equal(d.count, 0);
    assert_int_equal(m.n_verts, 6);
    assert_true(m.v[1][0] == 1 && m.v[1][1] == 0 && m.v[1][2] == 0);
    assert_true(m.v[4][0] == 0.5 && m.v[4][2] == 1);
    assert_true(m.v[5][0] == -1);
    assert_int_equal(m.n_tris, 5 + 2 + 3 + 1 + 1);
    for (size_t t = 0; t < 5; t++)
        assert_tri(&m, t, 0, 1, 2);
    assert_tri(&m, 5, 0, 1, 2);
    assert_tri(&m, 6, 0, 2, 3);
    assert_tri(&m, 7, 0, 1, 2);
    assert_tri(&m, 8, 0, 2, 3);
    assert_tri(&m, 9, 0, 3, 4);
    assert_tri(&m, 10, 0, 1, 2); /* from f 1 2 2 3: (1 2 2) dropped, (1 2 3) kept */
    assert_tri(&m, 11, 5, 4, 3);
    mesh_free(&m);
    assert_true(m.n_verts == 0 && !m.v);
}

static const struct bad_case {
    const char *text, *expected;
} bad_cases[] = {
    {"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n",
     "t.obj:4: face index 4 is out of range (the file has 3 vertices)"},
    {"v 0 0 0\nv 1 0 0\nf -1 -2 -3\nv 0 1 0\n",
     "t.obj:3: face index -3 is out of range (2 vertices defined so far)"},
    {"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n",
     "t.obj:4: face index 0 is invalid (OBJ indices start at 1)"},
    {"v 0 0 0\nv 1 0 x\n", "t.obj:2: 'x' is not a number"},
    {"v 0 0 0\nv 1 0 1.5.2\n", "t.obj:2: '1.5.2' is not a number"},
    {"v 0 nan 0\nv 1 0 1e999\n", "t.obj:1: 'nan' is not a finite number\n"
                                 "t.obj:2: '1e999' is not a finite number"},
    {"v 0 0\n", "t.obj:1: a vertex needs 3 coordinates (got 2)"},
    {"v 0 0 0\nv 1 0 0\nv 0 1 0\r\nf 1 2\r\n",
     "t.obj:4: a face needs at least 3 vertices (got 2)"},
    {"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2/x 3\nf 1 2/1/1/1 3\nf 1 2 3x\n",
     "t.obj:4: '2/x' is not a face vertex (expected v, v/t, v/t/n or v//n)\n"
     "t.obj:5: '2/1/1/1' is not a face vertex (expected v, v/t, v/t/n or v//n)\n"
     "t.obj:6: '3x' is not a face vertex (expected v, v/t, v/t/n or v//n)"},
    {"", "t.obj: no triangles (the file has 0 vertices and no faces or lines)"},
    {"# nothing\nv 0 0 0\n", "t.obj: no triangles (the file has 1 vertices and no faces or lines)"},
    {"v 0 0 0\nv 1 0 0\nf 1 1 2\nf 2 2 2\n", "t.obj: no triangles (all 2 faces are degenerate)"},
    /* several problems reported together, valid lines between them */
    {"v 0 0 0\nv 1 0 0\nv 0 1 z\nf 1 2 3\nf 1 2 9\nf 1\n",
     "t.obj:3: 'z' is not a number\n"
     "t.obj:5: face index 9 is out of range (the file has 3 vertices)\n"
     "t.obj:6: a face needs at least 3 vertices (got 1)"},
};

static void test_parse_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        char *got = parse_errors(bad_cases[i].text);
        if (strcmp(got, bad_cases[i].expected))
            fail_msg("case %zu:\n  expected: %s\n  got:      %s", i, bad_cases[i].expected, got);
        free(got);
    }
}

static void test_load_file(void **state)
{
    (void)state;
    const char *path = test_path("bad.obj");
    write_text(path, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 40\n");
    mz_mesh m;
    mz_diag d = {0};
    assert_int_equal(mesh_load_obj(path, &m, NULL, &d), -1);
    assert_int_equal(d.count, 1);
    char want[600];
    snprintf(want, sizeof want, "%s:5: face index 40 is out of range (the file has 3 vertices)",
             path);
    assert_string_equal(d.msgs[0], want);
    diag_free(&d);

    const char *missing = test_path("no_such.obj");
    assert_int_equal(mesh_load_obj(missing, &m, NULL, &d), -1);
    assert_true(m.n_verts == 0 && !m.v && !m.tri);
    snprintf(want, sizeof want, "%s: cannot read the mesh: No such file or directory", missing);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0], want);
    diag_free(&d);

    load(MESHES "icosphere.obj", &m);
    assert_int_equal(m.n_verts, 162);
    assert_int_equal(m.n_tris, 320);
    for (size_t i = 0; i < m.n_verts; i++)
        assert_true(fabs(sqrt(m.v[i][0] * m.v[i][0] + m.v[i][1] * m.v[i][1] +
                              m.v[i][2] * m.v[i][2]) - 1) < 1e-12);
    mesh_free(&m);
}

static void check_edges_sorted(uint32_t (*e)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(e[i][0] < e[i][1]);
        if (i)
            assert_true(e[i - 1][0] < e[i][0] || (e[i - 1][0] == e[i][0] && e[i - 1][1] < e[i][1]));
    }
}

/* `l` polylines: segments join the edges (ropes), merged with the triangles' own edges; a file
 * of lines alone is a valid mesh with no triangles. */
static void test_lines(void **state)
{
    (void)state;
    const char *rope = "v 0 0 0\nv 0 -1 0\nv 0 -2 0\nv 0 -3 0\nl 1 2 3\nl 3 4\nl 2 1\n";
    mz_mesh m;
    mz_diag d = {0};
    assert_int_equal(mesh_parse_obj(rope, strlen(rope), "rope.obj", &m, &d), 0);
    assert_int_equal(m.n_tris, 0);
    assert_int_equal(m.n_lines, 4);
    uint32_t(*e)[2];
    size_t ne = mesh_edges(&m, &e);
    assert_int_equal(ne, 3); /* 1-2 given twice */
    for (size_t i = 0; i < ne; i++) {
        assert_int_equal(e[i][0], i);
        assert_int_equal(e[i][1], i + 1);
    }
    free(e);
    mesh_free(&m);
    const char *mixed = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 5 5 5\nf 1 2 3\nl 1 2 4\n";
    assert_int_equal(mesh_parse_obj(mixed, strlen(mixed), "m.obj", &m, &d), 0);
    ne = mesh_edges(&m, &e);
    assert_int_equal(ne, 4); /* three triangle edges and 2-4 */
    free(e);
    mesh_free(&m);
    const char *bad = "v 0 0 0\nl 1\nl 1 7\n";
    assert_int_equal(mesh_parse_obj(bad, strlen(bad), "b.obj", &m, &d), -1);
    assert_int_equal(d.count, 2);
    assert_string_equal(d.msgs[0], "b.obj:2: a line needs at least 2 vertices (got 1)");
    assert_string_equal(d.msgs[1], "b.obj:3: line index 7 is out of range (the file has 1 "
                                   "vertices)");
    diag_free(&d);
}

static void test_edges(void **state)
{
    (void)state;
    const char *quad = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";
    mz_mesh m;
    mz_diag d = {0};
    assert_int_equal(mesh_parse_obj(quad, strlen(quad), "q.obj", &m, &d), 0);
    uint32_t(*e)[2];
    assert_int_equal(mesh_edges(&m, &e), 5);
    static const uint32_t want[5][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {2, 3}};
    assert_memory_equal(e, want, sizeof want);
    free(e);
    assert_false(mesh_is_closed(&m));
    mesh_free(&m);

    load(MESHES "icosphere.obj", &m);
    size_t n = mesh_edges(&m, &e);
    assert_int_equal(2 * n, 3 * m.n_tris);
    assert_int_equal(m.n_verts - n + m.n_tris, 2); /* Euler: a sphere */
    check_edges_sorted(e, n);
    free(e);
    mesh_free(&m);
}

/* An nx × ny grid of unit quads, each split along the same diagonal. */
static void grid_mesh(int nx, int ny, mz_mesh *m)
{
    m->n_verts = (size_t)(nx + 1) * (size_t)(ny + 1);
    m->v = xcalloc(m->n_verts, sizeof *m->v);
    for (int j = 0; j <= ny; j++)
        for (int i = 0; i <= nx; i++) {
            m->v[j * (nx + 1) + i][0] = i;
            m->v[j * (nx + 1) + i][1] = j;
        }
    m->n_tris = 2 * (size_t)nx * (size_t)ny;
    m->tri = xcalloc(m->n_tris, sizeof *m->tri);
    size_t t = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            uint32_t a = (uint32_t)(j * (nx + 1) + i), b = a + 1, c = a + (uint32_t)nx + 1,
                     dd = c + 1;
            memcpy(m->tri[t++], (uint32_t[3]){a, b, dd}, sizeof(uint32_t[3]));
            memcpy(m->tri[t++], (uint32_t[3]){a, dd, c}, sizeof(uint32_t[3]));
        }
}

static void test_bending_pairs(void **state)
{
    (void)state;
    const char *two = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n";
    mz_mesh m;
    mz_diag d = {0};
    assert_int_equal(mesh_parse_obj(two, strlen(two), "two.obj", &m, &d), 0);
    uint32_t(*p)[2];
    size_t bad = 9;
    assert_int_equal(mesh_bending_pairs(&m, &p, &bad), 1);
    assert_true(p[0][0] == 1 && p[0][1] == 3);
    assert_int_equal(bad, 0);
    free(p);
    mesh_free(&m);

    /* a flat grid: one pair across every diagonal, every inner horizontal and vertical edge */
    int nx = 3, ny = 2;
    grid_mesh(nx, ny, &m);
    size_t n = mesh_bending_pairs(&m, &p, NULL);
    assert_int_equal(n, nx * ny + nx * (ny - 1) + (nx - 1) * ny);
    check_edges_sorted(p, n);
    uint32_t(*e)[2];
    size_t ne = mesh_edges(&m, &e);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ne; k++)
            assert_false(p[i][0] == e[k][0] && p[i][1] == e[k][1]);
    free(e);
    free(p);
    mesh_free(&m);

    /* three triangles on one edge: non-manifold, no pair there */
    const char *fin = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n";
    assert_int_equal(mesh_parse_obj(fin, strlen(fin), "fin.obj", &m, &d), 0);
    assert_int_equal(mesh_bending_pairs(&m, &p, &bad), 0);
    assert_int_equal(bad, 1);
    free(p);
    assert_false(mesh_is_closed(&m));
    mesh_free(&m);

    /* a closed surface: one pair per edge, less any that are edges or repeats */
    load(MESHES "cube.obj", &m);
    n = mesh_bending_pairs(&m, &p, &bad);
    assert_int_equal(bad, 0);
    assert_true(n > 0 && n <= 288);
    check_edges_sorted(p, n);
    free(p);
    mesh_free(&m);
}

static void test_closed(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int closed;
    } cases[] = {{"icosphere.obj", 1}, {"cube.obj", 1}, {"torus.obj", 1}, {"flag.obj", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[256];
        snprintf(path, sizeof path, MESHES "%s", cases[i].file);
        mz_mesh m;
        load(path, &m);
        if (mesh_is_closed(&m) != cases[i].closed)
            fail_msg("%s: expected closed = %d", cases[i].file, cases[i].closed);
        mesh_free(&m);
    }
    mz_mesh m;
    load(MESHES "flag.obj", &m);
    double lo[3], hi[3];
    mesh_bounds(&m, lo, hi);
    assert_true(fabs(hi[0] - lo[0] - 1) < 1e-12 && fabs(hi[1] - lo[1] - 0.6) < 1e-12);
    assert_true(lo[2] == 0 && hi[2] == 0);
    mesh_free(&m);
}

static void test_transform(void **state)
{
    (void)state;
    mz_mesh m = {.n_verts = 3};
    double v[3][3] = {{1, 0, 0}, {0, 1, 0}, {1, 1, 1}};
    m.v = v;
    mesh_transform(&m, 1, (double[3]){0, 0, 90}, (double[3]){0, 0, 0});
    assert_true(v[0][0] == 0 && v[0][1] == 1 && v[0][2] == 0); /* x̂ → ŷ, exactly */
    assert_true(v[1][0] == -1 && v[1][1] == 0 && v[1][2] == 0);
    /* R = Rz·Ry·Rx: about x first, so ŷ → ẑ → x̂ under (90, 90, 0) */
    memcpy(v, (double[3][3]){{1, 0, 0}, {0, 1, 0}, {1, 1, 1}}, sizeof v);
    mesh_transform(&m, 1, (double[3]){90, 90, 0}, NULL);
    assert_true(v[0][0] == 0 && v[0][1] == 0 && v[0][2] == -1);
    assert_true(v[1][0] == 1 && v[1][1] == 0 && v[1][2] == 0);
    /* scale, then translate */
    memcpy(v, (double[3][3]){{1, 0, 0}, {0, 1, 0}, {1, 1, 1}}, sizeof v);
    mesh_transform(&m, 2, (double[3]){0, 0, 0}, (double[3]){1, 2, 3});
    assert_true(v[2][0] == 3 && v[2][1] == 4 && v[2][2] == 5);
    /* any angle */
    memcpy(v, (double[3][3]){{1, 0, 0}, {0, 1, 0}, {1, 1, 1}}, sizeof v);
    mesh_transform(&m, 1, (double[3]){0, 0, -30}, NULL);
    assert_true(fabs(v[0][0] - sqrt(3) / 2) < 1e-15 && fabs(v[0][1] + 0.5) < 1e-15);
}

/* Volume enclosed by a closed, outward-oriented mesh (divergence theorem). */
static double mesh_volume(const mz_mesh *m)
{
    double vol = 0;
    for (size_t t = 0; t < m->n_tris; t++) {
        const double *a = m->v[m->tri[t][0]], *b = m->v[m->tri[t][1]], *c = m->v[m->tri[t][2]];
        vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                a[2] * (b[0] * c[1] - b[1] * c[0])) / 6;
    }
    return vol;
}

/* Inside by brute force: ray crossings along a skewed direction, each triangle tested
 * (Möller–Trumbore). Not robust, but a generic direction never meets an edge here. */
static bool inside_reference(const mz_mesh *m, const double p[3])
{
    static const double dir[3] = {1, 0.0123456789, 0.0313131313};
    int n = 0;
    for (size_t t = 0; t < m->n_tris; t++) {
        const double *a = m->v[m->tri[t][0]], *b = m->v[m->tri[t][1]], *c = m->v[m->tri[t][2]];
        double e1[3], e2[3], s[3], h[3], qv[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = b[k] - a[k];
            e2[k] = c[k] - a[k];
            s[k] = p[k] - a[k];
        }
        h[0] = dir[1] * e2[2] - dir[2] * e2[1];
        h[1] = dir[2] * e2[0] - dir[0] * e2[2];
        h[2] = dir[0] * e2[1] - dir[1] * e2[0];
        double det = e1[0] * h[0] + e1[1] * h[1] + e1[2] * h[2];
        if (det == 0)
            continue;
        double u = (s[0] * h[0] + s[1] * h[1] + s[2] * h[2]) / det;
        qv[0] = s[1] * e1[2] - s[2] * e1[1];
        qv[1] = s[2] * e1[0] - s[0] * e1[2];
        qv[2] = s[0] * e1[1] - s[1] * e1[0];
        double w = (dir[0] * qv[0] + dir[1] * qv[1] + dir[2] * qv[2]) / det;
        double dist = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) / det;
        n += u >= 0 && w >= 0 && u + w <= 1 && dist > 0;
    }
    return n % 2;
}

/* Voxelise, and check the result against inside_reference point by point. */
static size_t voxelize_checked(const mz_mesh *m, double spacing, size_t dims[3])
{
    double origin[3];
    uint8_t *in;
    size_t n = mesh_voxelize(m, spacing, origin, dims, &in), count = 0, wrong = 0;
    for (size_t k = 0; k < dims[2]; k++)
        for (size_t j = 0; j < dims[1]; j++)
            for (size_t i = 0; i < dims[0]; i++) {
                double p[3] = {origin[0] + (i + 0.5) * spacing, origin[1] + (j + 0.5) * spacing,
                               origin[2] + (k + 0.5) * spacing};
                uint8_t got = in[(k * dims[1] + j) * dims[0] + i];
                count += got;
                wrong += got != inside_reference(m, p);
            }
    free(in);
    assert_int_equal(count, n);
    if (wrong)
        fail_msg("spacing %g: %zu of %zu points differ from the reference", spacing, wrong,
                 dims[0] * dims[1] * dims[2]);
    return n;
}

static void test_voxelize_sphere(void **state)
{
    (void)state;
    mz_mesh m;
    load(MESHES "icosphere.obj", &m);
    double vol = mesh_volume(&m), origin[3];
    size_t dims[3];
    uint8_t *in;
    size_t n = mesh_voxelize(&m, 0.05, origin, dims, &in);
    free(in);
    assert_true(dims[0] == 40 && dims[1] == 40 && dims[2] == 40);
    double got = (double)n * 0.05 * 0.05 * 0.05;
    if (fabs(got / vol - 1) > 0.03)
        fail_msg("voxel volume %g, mesh volume %g", got, vol);
    /* rows along y = 0 and z = 0 pass through vertices and edges at spacing 2/21 and 2/41 */
    voxelize_checked(&m, 2.0 / 21, dims);
    voxelize_checked(&m, 2.0 / 41, dims);
    voxelize_checked(&m, 0.05, dims);
    mesh_free(&m);

    load(MESHES "torus.obj", &m);
    n = voxelize_checked(&m, 0.05, dims);
    got = (double)n * 0.05 * 0.05 * 0.05;
    assert_true(fabs(got / mesh_volume(&m) - 1) < 0.05);
    mesh_free(&m);
}

static void test_voxelize_cube(void **state)
{
    (void)state;
    mz_mesh m;
    load(MESHES "cube.obj", &m);
    /* faces on lattice half-points; at 0.1 rows also run through vertices and along edges */
    static const struct {
        double spacing;
        size_t per_axis;
    } cases[] = {{0.05, 20}, {0.1, 10}, {0.125, 8}, {0.25, 4}, {1.0 / 12, 12}, {0.02, 50}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double origin[3];
        size_t dims[3], p = cases[c].per_axis;
        uint8_t *in;
        size_t n = mesh_voxelize(&m, cases[c].spacing, origin, dims, &in);
        free(in);
        if (dims[0] != p || dims[1] != p || dims[2] != p || n != p * p * p)
            fail_msg("spacing %g: dims %zu %zu %zu, %zu inside; expected %zu per axis, all in",
                     cases[c].spacing, dims[0], dims[1], dims[2], n, p);
    }
    /* a quarter turn keeps it exactly aligned */
    mesh_transform(&m, 1, (double[3]){90, 0, 270}, (double[3]){0.3, 0, 0});
    size_t dims[3];
    assert_int_equal(voxelize_checked(&m, 0.1, dims), 1000);

    /* two unit cubes 0.05 apart along each axis in turn, at spacing 0.1: the second's faces sit
     * exactly on lattice points 10 and 20 of that axis; half-open, it owns the first and not the
     * second (10 points a row each, none doubled, none missing) */
    size_t nv = m.n_verts, nt = m.n_tris;
    m.v = xrealloc(m.v, 2 * nv * sizeof *m.v);
    m.tri = xrealloc(m.tri, 2 * nt * sizeof *m.tri);
    for (size_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++)
            m.tri[nt + t][k] = m.tri[t][k] + (uint32_t)nv;
    m.n_verts *= 2;
    m.n_tris *= 2;
    for (int a = 0; a < 3; a++) {
        for (size_t i = 0; i < nv; i++) {
            memcpy(m.v[nv + i], m.v[i], sizeof *m.v);
            m.v[nv + i][a] += 1.05;
        }
        double origin[3];
        uint8_t *in;
        assert_int_equal(mesh_voxelize(&m, 0.1, origin, dims, &in), 2000);
        assert_int_equal(dims[a], 21);
        size_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
        for (size_t i = 0; i < dims[a]; i++)
            assert_int_equal(in[i * stride], i < 20);
        free(in);
    }
    mesh_free(&m);
}

/* Split every triangle in four, midpoints pushed onto the unit sphere. */
static void subdivide_sphere(mz_mesh *m)
{
    uint32_t(*e)[2];
    size_t ne = mesh_edges(m, &e), nv = m->n_verts;
    m->v = xrealloc(m->v, (nv + ne) * sizeof *m->v);
    for (size_t i = 0; i < ne; i++) {
        double *p = m->v[nv + i], r = 0;
        for (int k = 0; k < 3; k++) {
            p[k] = m->v[e[i][0]][k] + m->v[e[i][1]][k];
            r += p[k] * p[k];
        }
        for (int k = 0; k < 3; k++)
            p[k] /= sqrt(r);
    }
    uint32_t(*tri)[3] = xmalloc(4 * m->n_tris * sizeof *tri);
    for (size_t t = 0; t < m->n_tris; t++) {
        uint32_t mid[3];
        for (int k = 0; k < 3; k++) {
            uint32_t a = m->tri[t][k], b = m->tri[t][(k + 1) % 3];
            uint32_t key[2] = {a < b ? a : b, a < b ? b : a};
            size_t lo = 0, hi = ne;
            while (hi - lo > 1) {
                size_t md = (lo + hi) / 2;
                if (e[md][0] < key[0] || (e[md][0] == key[0] && e[md][1] <= key[1]))
                    lo = md;
                else
                    hi = md;
            }
            mid[k] = (uint32_t)(nv + lo);
        }
        const uint32_t *v = m->tri[t];
        uint32_t quad[4][3] = {{v[0], mid[0], mid[2]}, {v[1], mid[1], mid[0]},
                               {v[2], mid[2], mid[1]}, {mid[0], mid[1], mid[2]}};
        memcpy(tri[4 * t], quad, sizeof quad);
    }
    free(e);
    free(m->tri);
    m->tri = tri;
    m->n_tris *= 4;
    m->n_verts = nv + ne;
}

static void test_voxelize_speed(void **state)
{
    (void)state;
    mz_mesh m;
    load(MESHES "icosphere.obj", &m);
    subdivide_sphere(&m);
    assert_int_equal(m.n_tris, 1280);
    assert_true(mesh_is_closed(&m));
    struct timespec t0, t1;
    double origin[3];
    size_t dims[3];
    uint8_t *in;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n = mesh_voxelize(&m, 0.04, origin, dims, &in);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(in);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    print_message("voxelise 50^3 against 1280 triangles: %.2f ms, %zu inside\n", 1e3 * s, n);
    assert_true(dims[0] == 50 && dims[1] == 50 && dims[2] == 50);
    assert_true(fabs((double)n * 0.04 * 0.04 * 0.04 / mesh_volume(&m) - 1) < 0.03);
    assert_true(s < 0.5);
    mesh_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_forms),     cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_load_file),       cmocka_unit_test(test_edges),
        cmocka_unit_test(test_bending_pairs),   cmocka_unit_test(test_closed),
        cmocka_unit_test(test_transform),       cmocka_unit_test(test_voxelize_sphere),
        cmocka_unit_test(test_voxelize_cube),   cmocka_unit_test(test_voxelize_speed),
    };
    return cmocka_run_group_tests_name("mesh", tests, NULL, NULL);
}
