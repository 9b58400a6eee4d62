/* FLIP's multigrid-preconditioned CG (simulation.pressure_solver "mgpcg", issue 21): the V-cycle
 * against a host reference in double on small 2D and 3D tanks with air, walls and a collider
 * (cell counts not powers of two), and its symmetry (CG needs it); the MGPCG solution of the
 * same system against red-black SOR's; the iterations from 32^3 to 64^3 cells; bit-identical
 * repeats. The dam break, the tank at rest and the closed-box projection with mgpcg: test_flip.
 * FLIP_TEST=pattern runs the tests whose names match. */
#include "solvers/flip/flip.h"
#include "solvers/flip/flip_multigrid.h"
#include "test_util.h"
#include "test_world.h"

#include <math.h>

/* ---- the host V-cycle ----------------------------------------------------------------------- */

typedef struct level {
    int cells[3], nodes[3];
    double w[3]; /* 1 / cell², 0 on an axis not simulated */
    uint8_t *type;
    double *diag; /* level 0 only: the device's diagonal */
    double (*b)[2], (*z)[2], (*res)[2];
} level;

static size_t at(const level *L, const int c[3])
{
    return ((size_t)c[2] * (size_t)L->nodes[1] + (size_t)c[1]) * (size_t)L->nodes[0] +
           (size_t)c[0];
}

static size_t count(const level *L)
{
    return (size_t)L->nodes[0] * L->nodes[1] * L->nodes[2];
}

static int type_at(const level *L, const int c[3])
{
    for (int a = 0; a < 3; a++)
        if (c[a] < 0 || c[a] >= L->cells[a])
            return FLIP_SOLID;
    return L->type[at(L, c)];
}

static void coord(const level *L, size_t node, int c[3])
{
    c[0] = (int)(node % (size_t)L->nodes[0]);
    c[1] = (int)(node / (size_t)L->nodes[0] % (size_t)L->nodes[1]);
    c[2] = (int)(node / ((size_t)L->nodes[0] * L->nodes[1]));
}

/* b − A z at fluid cell c, and the diagonal: level 0's operator (its diagonal, fluid neighbours
 * only) or a coarse one (every non-solid neighbour, air as 0). */
static void residual(const level *L, bool fine, int dim, const int c[3], double r[2], double *d)
{
    size_t node = at(L, c);
    double diag = 0;
    for (int k = 0; k < 2; k++)
        r[k] = L->b[node][k];
    for (int a = 0; a < dim; a++)
        for (int s = -1; s <= 1; s += 2) {
            int n[3] = {c[0], c[1], c[2]};
            n[a] += s;
            int t = type_at(L, n);
            if (t == FLIP_FLUID)
                for (int k = 0; k < 2; k++)
                    r[k] += L->w[a] * L->z[at(L, n)][k];
            if (t != FLIP_SOLID)
                diag += L->w[a];
        }
    if (fine)
        diag = L->diag[node];
    for (int k = 0; k < 2; k++)
        r[k] -= diag * L->z[node][k];
    *d = diag;
}

static void sweep(level *L, bool fine, int dim, bool mirrored)
{
    for (int h = 0; h < 2; h++) {
        int colour = mirrored ? 1 - h : h;
        for (size_t node = 0; node < count(L); node++) {
            int c[3];
            coord(L, node, c);
            if (((c[0] + c[1] + c[2]) & 1) != colour || type_at(L, c) != FLIP_FLUID)
                continue;
            double r[2], d;
            residual(L, fine, dim, c, r, &d);
            for (int k = 0; d > 0 && k < 2; k++)
                L->z[node][k] += r[k] / d;
        }
    }
}

/* Corner s of fine cell f (bit a: the coarse neighbour on f's side along a) and its weight. */
static double corner(const int f[3], int s, int dim, int k[3])
{
    double w = 1;
    for (int a = 0; a < 3; a++) {
        k[a] = f[a] >> 1;
        if (a < dim && (s >> a) & 1) {
            k[a] += (f[a] & 1) ? 1 : -1;
            w *= 0.25;
        } else if (a < dim) {
            w *= 0.75;
        }
    }
    return w;
}

/* P as the kernels define it, applied to z_c and added to the fine level; R = Pᵀ / 2^d made
 * from the same P by scattering (the device gathers). */
static void prolong(level *F, const level *C, int dim)
{
    for (size_t node = 0; node < count(F); node++) {
        int f[3], k[3], p[3];
        coord(F, node, f);
        if (type_at(F, f) != FLIP_FLUID)
            continue;
        corner(f, 0, dim, p);
        for (int s = 0; s < (1 << dim); s++) {
            double w = corner(f, s, dim, k);
            int t = type_at(C, k);
            const double *v = t == FLIP_FLUID ? C->z[at(C, k)] : t == FLIP_SOLID ? C->z[at(C, p)]
                                                                                 : NULL;
            for (int m = 0; v && m < 2; m++)
                F->z[node][m] += w * v[m];
        }
    }
}

static void restrict_to(const level *F, level *C, int dim)
{
    memset(C->b, 0, count(C) * sizeof *C->b);
    memset(C->z, 0, count(C) * sizeof *C->z);
    for (size_t node = 0; node < count(F); node++) {
        int f[3], k[3], p[3];
        coord(F, node, f);
        if (type_at(F, f) != FLIP_FLUID)
            continue;
        corner(f, 0, dim, p);
        for (int s = 0; s < (1 << dim); s++) {
            double w = corner(f, s, dim, k);
            int t = type_at(C, k);
            const int *to = t == FLIP_FLUID ? k : t == FLIP_SOLID ? p : NULL;
            for (int m = 0; to && m < 2; m++)
                C->b[at(C, to)][m] += w * F->res[node][m] / (1 << dim);
        }
    }
}

static void vcycle(level *L, int levels, int dim)
{
    memset(L[0].z, 0, count(&L[0]) * sizeof *L[0].z);
    int last = levels - 1;
    for (int l = 0; l < last; l++) {
        for (int k = 0; k < MG_SMOOTH; k++)
            sweep(&L[l], l == 0, dim, false);
        for (size_t node = 0; node < count(&L[l]); node++) {
            int c[3];
            coord(&L[l], node, c);
            double d;
            if (type_at(&L[l], c) == FLIP_FLUID)
                residual(&L[l], l == 0, dim, c, L[l].res[node], &d);
            else
                L[l].res[node][0] = L[l].res[node][1] = 0;
        }
        restrict_to(&L[l], &L[l + 1], dim);
    }
    for (int k = 0; k < 2 * MG_COARSEST_SWEEPS; k++)
        sweep(&L[last], last == 0, dim, k >= MG_COARSEST_SWEEPS);
    for (int l = last - 1; l >= 0; l--) {
        prolong(&L[l], &L[l + 1], dim);
        for (int k = 0; k < MG_SMOOTH; k++)
            sweep(&L[l], l == 0, dim, true);
    }
}

/* The levels from the device's level 0 (types, diagonal), coarsened as the kernels do. */
static int make_levels(level *L, const flip_view *v, int dim)
{
    memset(L, 0, MG_MAX_LEVELS * sizeof *L);
    for (int a = 0; a < 3; a++) {
        L[0].cells[a] = v->grid.cells.s[a];
        L[0].nodes[a] = v->grid.nodes.s[a];
        L[0].w[a] = v->grid.inv_cell2.s[a];
    }
    int levels = 1;
    for (;;) {
        level *F = &L[levels - 1];
        if (!mg_coarsen_more(F->cells, dim) || levels == MG_MAX_LEVELS)
            break;
        level *C = &L[levels++];
        *C = *F;
        for (int a = 0; a < dim; a++) {
            C->cells[a] = (F->cells[a] + 1) / 2;
            C->nodes[a] = C->cells[a] + 1;
            C->w[a] = F->w[a] / 4;
        }
    }
    for (int l = 0; l < levels; l++) {
        size_t n = count(&L[l]);
        L[l].type = calloc(n, 1);
        L[l].b = calloc(n, sizeof *L[l].b);
        L[l].z = calloc(n, sizeof *L[l].z);
        L[l].res = calloc(n, sizeof *L[l].res);
    }
    size_t n0 = count(&L[0]);
    float *diag = malloc(4 * n0);
    cl_mem type = v->type, dm = v->diag;
    world_read_buffer(&type, L[0].type, n0);
    world_read_buffer(&dm, diag, 4 * n0);
    L[0].diag = calloc(n0, sizeof *L[0].diag);
    for (size_t k = 0; k < n0; k++)
        L[0].diag[k] = diag[k];
    free(diag);
    for (int l = 1; l < levels; l++)
        for (size_t node = 0; node < count(&L[l]); node++) {
            int c[3];
            coord(&L[l], node, c);
            bool fluid = false, air = false, inside = true;
            for (int a = 0; a < 3; a++)
                inside &= c[a] < L[l].cells[a];
            for (int s = 0; inside && s < (1 << dim); s++) {
                int f[3] = {2 * c[0] + (s & 1), 2 * c[1] + ((s >> 1) & 1),
                            2 * c[2] + ((s >> 2) & 1)};
                int t = type_at(&L[l - 1], f);
                fluid |= t == FLIP_FLUID;
                air |= t == FLIP_AIR;
            }
            L[l].type[node] = fluid ? FLIP_FLUID : air ? FLIP_AIR : FLIP_SOLID;
        }
    return levels;
}

static void free_levels(level *L, int levels)
{
    for (int l = 0; l < levels; l++) {
        free(L[l].type);
        free(L[l].b);
        free(L[l].z);
        free(L[l].res);
        free(L[l].diag);
    }
}

/* ---- scenes --------------------------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static double uniform(void) /* in [-0.5, 0.5) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 - 0.5;
}

/* Tanks of 23 x 15 x 11 and 41 x 25 cells (odd: padded on every level; three levels each): a
 * block of water, a sphere (disc) collider on the floor beside it and a box one above it, so
 * that fluid cells border air, the walls and the colliders. */
static const char *tank_3d =
    "{\"mizu_scene\": 1, \"simulation\": {\"pressure_solver\": \"mgpcg\"},"
    " \"domain\": {\"min\": [0,0,0], \"max\": [0.46,0.3,0.22]},"
    " \"fluids\": [{\"solver\": \"flip\", \"box\": {\"min\": [0,0,0], \"max\": [0.2,0.15,0.22]},"
    "   \"spacing\": 0.01}],"
    " \"colliders\": [{\"sphere\": {\"center\": [0.27,0.05,0.11], \"radius\": 0.06}},"
    "   {\"box\": {\"min\": [0.05,0.2,0.0], \"max\": [0.3,0.24,0.12]}}]}";
static const char *tank_2d =
    "{\"mizu_scene\": 1, \"simulation\": {\"dimensions\": 2, \"pressure_solver\": \"mgpcg\"},"
    " \"domain\": {\"min\": [0,0,0], \"max\": [0.82,0.5,0]},"
    " \"fluids\": [{\"solver\": \"flip\", \"box\": {\"min\": [0,0,0], \"max\": [0.4,0.3,0]},"
    "   \"spacing\": 0.01}],"
    " \"colliders\": [{\"sphere\": {\"center\": [0.5,0.08,0], \"radius\": 0.08}},"
    "   {\"box\": {\"min\": [0.1,0.36,-1], \"max\": [0.5,0.42,1]}}]}";

/* A world stepped to its first projection (the system the checks use). */
static void open_projected(world *w, const char *json, const char *const *sets, size_t n_sets)
{
    world_open(w, json, sets, n_sets);
    double dt = scene_substep_dt(&w->scene);
    assert_int_equal(flip_p2g(&w->sim, dt), 0);
    assert_int_equal(flip_project(&w->sim, dt), 0);
}

static cl_mem device_vector(double (*v)[2], size_t n)
{
    float *f = malloc(8 * n);
    for (size_t k = 0; k < n; k++)
        f[2 * k] = (float)v[k][0], f[2 * k + 1] = (float)v[k][1];
    cl_int err;
    cl_mem m = clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 8 * n, f, &err);
    assert_int_equal(err, CL_SUCCESS);
    free(f);
    return m;
}

/* z = V-cycle(b) on the device, back in double. */
static void device_vcycle(world *w, double (*b)[2], double (*z)[2], size_t n)
{
    cl_mem bm = device_vector(b, n), zm = device_vector(z, n);
    assert_int_equal(flip_mg_apply(&w->sim, bm, zm), 0);
    float *f = malloc(8 * n);
    world_read_buffer(&zm, f, 8 * n);
    for (size_t k = 0; k < n; k++)
        z[k][0] = f[2 * k], z[k][1] = f[2 * k + 1];
    free(f);
    clReleaseMemObject(bm);
    clReleaseMemObject(zm);
}

static double dot(const level *L, double (*a)[2], double (*b)[2], int m)
{
    double s = 0;
    for (size_t k = 0; k < count(L); k++)
        if (L->type[k] == FLIP_FLUID)
            s += a[k][m] * b[k][m];
    return s;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* The device's V-cycle of random vectors within 1e-4 (of the largest value) of the host's in
 * double; <u, M v> = <v, M u> within 1e-4 and <v, M v> > 0 (CG needs M symmetric positive). */
static void check_vcycle(const char *json)
{
    world w;
    open_projected(&w, json, NULL, 0);
    flip_view v = flip_get_view(&w.sim);
    int dim = w.scene.sim.dimensions;
    level L[MG_MAX_LEVELS];
    int levels = make_levels(L, &v, dim);
    size_t n = count(&L[0]);
    long kinds[3] = {0, 0, 0};
    for (size_t k = 0; k < n; k++) {
        int c[3];
        coord(&L[0], k, c);
        kinds[type_at(&L[0], c)] += c[0] < L[0].cells[0] && c[1] < L[0].cells[1] &&
                                    c[2] < L[0].cells[2];
    }
    assert_true(kinds[FLIP_FLUID] > 0 && kinds[FLIP_AIR] > 0 && kinds[FLIP_SOLID] > 0);
    double(*u)[2] = calloc(n, sizeof *u), (*vv)[2] = calloc(n, sizeof *vv);
    double(*mu)[2] = calloc(n, sizeof *mu), (*mv)[2] = calloc(n, sizeof *mv);
    for (size_t k = 0; k < n; k++)
        if (L[0].type[k] == FLIP_FLUID)
            for (int m = 0; m < 2; m++)
                u[k][m] = uniform(), vv[k][m] = uniform() + 0.5 * m;
    /* host */
    memcpy(L[0].b, u, n * sizeof *u);
    vcycle(L, levels, dim);
    double worst = 0, big = 0;
    device_vcycle(&w, u, mu, n);
    for (size_t k = 0; k < n; k++)
        if (L[0].type[k] == FLIP_FLUID)
            for (int m = 0; m < 2; m++) {
                worst = fmax(worst, fabs(mu[k][m] - L[0].z[k][m]));
                big = fmax(big, fabs(L[0].z[k][m]));
            }
    device_vcycle(&w, vv, mv, n);
    double sym = 0, pos = INFINITY;
    for (int m = 0; m < 2; m++) {
        double uMv = dot(&L[0], u, mv, m), vMu = dot(&L[0], vv, mu, m);
        sym = fmax(sym, fabs(uMv - vMu) / sqrt(dot(&L[0], u, mu, m) * dot(&L[0], vv, mv, m)));
        pos = fmin(pos, fmin(dot(&L[0], u, mu, m), dot(&L[0], vv, mv, m)));
    }
    print_message("V-cycle %dD, %d levels (%d x %d x %d cells; fluid %ld, air %ld, solid %ld): "
                  "device within %.2g of the host's largest value; symmetry %.2g; smallest "
                  "<v, Mv> %.3g\n", dim, levels, L[0].cells[0], L[0].cells[1], L[0].cells[2],
                  kinds[FLIP_FLUID], kinds[FLIP_AIR], kinds[FLIP_SOLID], worst / big, sym, pos);
    assert_true(levels >= 3);
    assert_true(worst <= 1e-4 * big);
    assert_true(sym <= 1e-4);
    assert_true(pos > 0);
    free(u);
    free(vv);
    free(mu);
    free(mv);
    free_levels(L, levels);
    world_close(&w);
}

static void test_vcycle_matches_host(void **state)
{
    (void)state;
    check_vcycle(tank_2d);
    check_vcycle(tank_3d);
}

/* The same system solved by red-black SOR and by MGPCG to 1e-6: pressure and correction
 * potential agree within 1e-4 of the largest value. */
static void check_against_sor(const char *json)
{
    const char *common[] = {"simulation.pressure_tolerance=1e-6",
                            "simulation.pressure_iterations=100000"};
    const char *sor[] = {common[0], common[1], "simulation.pressure_solver=rbgs"};
    world a, b;
    open_projected(&a, json, sor, 3);
    open_projected(&b, json, common, 2);
    flip_view va = flip_get_view(&a.sim), vb = flip_get_view(&b.sim);
    size_t n = va.nodes;
    float(*pa)[2] = malloc(8 * n), (*pb)[2] = malloc(8 * n);
    uint8_t *type = malloc(n);
    world_read_buffer(&va.pressure, pa, 8 * n);
    world_read_buffer(&vb.pressure, pb, 8 * n);
    world_read_buffer(&va.type, type, n);
    double diff[2] = {0, 0}, big[2] = {0, 0};
    for (size_t k = 0; k < n; k++)
        for (int m = 0; type[k] == FLIP_FLUID && m < 2; m++) {
            diff[m] = fmax(diff[m], fabs((double)pa[k][m] - pb[k][m]));
            big[m] = fmax(big[m], fabs((double)pa[k][m]));
        }
    const flip_stats *sa = flip_get_stats(&a.sim), *sb = flip_get_stats(&b.sim);
    print_message("%dD, tolerance 1e-6: SOR %d sweeps, MGPCG %d iterations; pressure within "
                  "%.2g of its largest (%.4g Pa), correction within %.2g\n",
                  a.scene.sim.dimensions, sa->last_iterations, sb->last_iterations,
                  diff[0] / big[0], big[0], diff[1] / fmax(big[1], 1e-30));
    assert_true(sb->capped == 0 && sa->capped == 0);
    assert_true(big[0] > 0 && diff[0] <= 1e-4 * big[0]);
    assert_true(diff[1] <= 1e-4 * fmax(big[1], big[0] * 1e-6));
    free(pa);
    free(pb);
    free(type);
    world_close(&a);
    world_close(&b);
}

static void test_matches_sor(void **state)
{
    (void)state;
    check_against_sor(tank_2d);
    check_against_sor(tank_3d);
}

/* A water column in the corner of a cubic tank of n^3 cells (cells one spacing wide), the first
 * solve's iterations (from zero pressure) to the default tolerance. */
static int column_iterations(int n)
{
    double h = 0.64 / n;
    char json[768];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"pressure_solver\": \"mgpcg\","
             "   \"substeps\": 8}, \"domain\": {\"min\": [0,0,0], \"max\": [0.64,0.64,0.64]},"
             " \"fluids\": [{\"solver\": \"flip\", \"box\": {\"min\": [0,0,0],"
             "   \"max\": [0.32,0.48,0.64]}, \"spacing\": %.17g, \"cell_size\": %.17g}]}",
             h, h);
    world w;
    open_projected(&w, json, NULL, 0);
    const flip_stats *st = flip_get_stats(&w.sim);
    int it = st->last_iterations;
    print_message("water column in a %d^3 tank: %ld fluid cells, %d MGPCG iterations (relative "
                  "residual %.2g)\n", n, st->fluid_cells, it, st->last_residual);
    assert_int_equal(st->capped, 0);
    world_close(&w);
    return it;
}

/* Multigrid's point: the iterations barely grow with the grid. */
static void test_iterations_bounded(void **state)
{
    (void)state;
    int small = column_iterations(32), large = column_iterations(64);
    assert_true(small <= 20);
    assert_true(large <= small + 4);
}

/* Two runs of the 2D dam break with mgpcg: bit-identical particles and pressure, the one's
 * fluid cells listed a work-item a chunk (a CPU's way), the other's a work-group a chunk (a
 * GPU's): the same lists at every level. */
static void test_determinism(void **state)
{
    (void)state;
    const char *sets[] = {"simulation.pressure_solver=mgpcg"};
    world a, b;
    setenv("MIZU_FLIP_LISTERS", "items", 1);
    world_open_file(&a, "scenes/flip_dam_break_2d.json", sets, 1);
    setenv("MIZU_FLIP_LISTERS", "groups", 1);
    world_open_file(&b, "scenes/flip_dam_break_2d.json", sets, 1);
    unsetenv("MIZU_FLIP_LISTERS");
    double fdt = scene_frame_dt(&a.scene);
    for (int f = 0; f < 4; f++) {
        assert_int_equal(sim_advance_frame(&a.sim, fdt), 0);
        assert_int_equal(sim_advance_frame(&b.sim, fdt), 0);
    }
    world_read(&a);
    world_read(&b);
    size_t n = a.parts.n;
    assert_memory_equal(a.pos, b.pos, 16 * n);
    assert_memory_equal(a.vel, b.vel, 16 * n);
    flip_view va = flip_get_view(&a.sim), vb = flip_get_view(&b.sim);
    float *pa = malloc(8 * va.nodes), *pb = malloc(8 * vb.nodes);
    world_read_buffer(&va.pressure, pa, 8 * va.nodes);
    world_read_buffer(&vb.pressure, pb, 8 * vb.nodes);
    assert_memory_equal(pa, pb, 8 * va.nodes);
    const flip_stats *st = flip_get_stats(&a.sim);
    print_message("determinism (mgpcg): two runs of %ld steps, listing by work-items and by "
                  "work-groups, bit-identical (%.1f iterations a step)\n",
                  a.sim.step, (double)st->iterations / st->projections);
    free(pa);
    free(pb);
    world_close(&a);
    world_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vcycle_matches_host),
        cmocka_unit_test(test_matches_sor),
        cmocka_unit_test(test_iterations_bounded),
        cmocka_unit_test(test_determinism),
    };
    test_filter_from_env("FLIP_TEST");
    return cmocka_run_group_tests_name("flip_mg", tests, open_device, close_device);
}
