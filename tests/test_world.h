/* Shared by the tests that run kernels: the OpenCL device (PoCL unless MIZU_TEST_DEVICE says
 * cpu, gpu or P:D) and a "world": a scene from JSON text, its particles and simulation, and the
 * state read back in device order. Include after test_util.h. */
#ifndef MZ_TEST_WORLD_H
#define MZ_TEST_WORLD_H
#include "build/build.h"
#include "device/cl_ctx.h"
#include "scene/scene.h"
#include "solvers/sim.h"

#include <math.h>
#include <stdio.h>

static mz_cl cl;

static int open_device(void **state)
{
    (void)state;
    const char *spec = getenv("MIZU_TEST_DEVICE");
    return mz_cl_open(&cl, spec && *spec ? spec : "cpu", false);
}

static int close_device(void **state)
{
    (void)state;
    mz_cl_close(&cl);
    return 0;
}

typedef struct world {
    mz_scene scene;
    mz_particles parts;
    mz_sim sim;
    float *pos, *vel, *rho, *p; /* device order; rho and p when the solver makes them */
    uint32_t *id;
} world;

/* Like world_open, with a chance to change the built particles before they are uploaded
 * (edit may be NULL). name: the scene's path (OBJ files resolve against its directory). */
static inline void world_open_edit(world *w, const char *json, const char *name,
                                   const char *const *sets, size_t n_sets,
                                   void (*edit)(mz_particles *))
{
    mz_diag d = {0};
    memset(w, 0, sizeof *w);
    if (scene_load_text(json, strlen(json), name, sets, n_sets, &w->scene, &d) != 0) {
        diag_print(&d, "test scene");
        fail();
    }
    build_particles(&w->scene, &w->parts);
    if (edit)
        edit(&w->parts);
    assert_int_equal(sim_create(&w->sim, &cl, &w->scene, &w->parts), 0);
    size_t n = w->parts.n;
    w->pos = calloc(4 * n, sizeof(float));
    w->vel = calloc(4 * n, sizeof(float));
    w->rho = calloc(n, sizeof(float));
    w->p = calloc(n, sizeof(float));
    w->id = calloc(n, sizeof(uint32_t));
}

static inline void world_open(world *w, const char *json, const char *const *sets,
                              size_t n_sets)
{
    world_open_edit(w, json, "test.json", sets, n_sets, NULL);
}

/* The same from a scene file (paths relative to the repository root, where tests run). */
static inline void world_open_file(world *w, const char *path, const char *const *sets,
                                   size_t n_sets)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text)
        fail_msg("cannot read %s", path);
    world_open_edit(w, text, path, sets, n_sets, NULL);
    free(text);
}

static inline void world_read_buffer(cl_mem *m, void *dst, size_t bytes)
{
    if (m)
        assert_int_equal(clEnqueueReadBuffer(cl.queue, *m, CL_TRUE, 0, bytes, dst, 0, NULL, NULL),
                         CL_SUCCESS);
}

/* The current state, through the output fields' handles (they follow every swap). */
static inline void world_read(world *w)
{
    size_t n = w->parts.n;
    mz_sim *s = &w->sim;
    world_read_buffer(s->field[MZ_FIELD_POSITION], w->pos, 16 * n);
    world_read_buffer(s->field[MZ_FIELD_VELOCITY], w->vel, 16 * n);
    world_read_buffer(s->field[MZ_FIELD_DENSITY], w->rho, 4 * n);
    world_read_buffer(s->field[MZ_FIELD_PRESSURE], w->p, 4 * n);
    world_read_buffer(&s->id, w->id, 4 * n);
}

/* Σ m v over the particles read back, each of mass m (any order). */
static inline void world_momentum(world *w, double m, double out[3])
{
    world_read(w);
    out[0] = out[1] = out[2] = 0;
    for (size_t i = 0; i < w->parts.n; i++)
        for (int a = 0; a < 3; a++)
            out[a] += m * w->vel[4 * i + a];
}

/* A 2D step's momentum balance (g = 9.81 along −y): the forces on the n_loads solids of one
 * sample row (force then torque, 6 floats each) summed into total[0..1], against what the walls
 * gave the fluid of n particles of mass m over the step dt, ΣmΔv/dt − M g from the momenta p0
 * before and p1 after. Returns the worse axis's mismatch over the fluid's weight. */
static inline double world_loads_balance(const float *row, size_t n_loads, const double p0[3],
                                         const double p1[3], double dt, double m, size_t n,
                                         double total[2])
{
    double weight = m * (double)n * 9.81, worst = 0;
    total[0] = total[1] = 0;
    for (size_t k = 0; k < n_loads; k++)
        for (int a = 0; a < 2; a++)
            total[a] += row[6 * k + a];
    for (int a = 0; a < 2; a++) {
        double walls_on_fluid = (p1[a] - p0[a]) / dt - m * (double)n * (a ? -9.81 : 0);
        worst = fmax(worst, fabs(total[a] + walls_on_fluid) / weight);
    }
    return worst;
}

static inline void world_close(world *w)
{
    sim_release(&w->sim);
    particles_free(&w->parts);
    scene_free(&w->scene);
    free(w->pos);
    free(w->vel);
    free(w->rho);
    free(w->p);
    free(w->id);
}

/* The deepest any particle of the state just read lies inside a collider (a signed distance,
 * ≤ 0 when inside), starting from `deepest`; deeper than half a spacing fails, naming frame f,
 * the particle and the collider. */
static inline double world_deepest_in_colliders(const world *w, int f, double deepest)
{
    const mz_scene *s = &w->scene;
    double spacing = s->fluids[0].spacing;
    int dim = s->sim.dimensions;
    for (size_t i = 0; i < w->parts.n; i++)
        for (size_t c = 0; c < s->n_colliders; c++) {
            double x[3] = {w->pos[4 * i], w->pos[4 * i + 1], w->pos[4 * i + 2]};
            double d = collider_distance(&s->colliders[c], x, dim);
            deepest = fmin(deepest, d);
            if (d < -0.5 * spacing)
                fail_msg("frame %d: particle %u is %.4f m inside colliders[%zu]", f, w->id[i],
                         -d, c);
        }
    return deepest;
}

/* A dam break's surge front Z(T) (frames 0..nf, T = t sqrt(g/a), Z = x/a) against Martin &
 * Moyce (1952): the worst relative error over the data points with the one time shift
 * |dT| <= 0.3 that fits best (the experiment's release time is uncertain,
 * ../shared/validation/README). Returns the number of data points. */
static inline int martin_moyce_fit(const double *T, const double *Z, int nf, double *best,
                                   double *best_shift)
{
    FILE *csv = fopen("tests/data/validation/martin_moyce_1952_n2_1_front.csv", "r");
    assert_non_null(csv);
    char line[512];
    double te[64], ze[64];
    int points = 0;
    while (points < 64 && fgets(line, sizeof line, csv))
        if (line[0] != '#' && sscanf(line, "%lf,%lf", &te[points], &ze[points]) == 2)
            points++;
    fclose(csv);
    *best = 1e9;
    *best_shift = 0;
    for (int k = -30; k <= 30; k++) {
        double shift = 0.01 * k, worst = 0;
        for (int q = 0; q < points; q++) {
            double t = te[q] + shift;
            int f = 1;
            while (f < nf && T[f] < t)
                f++;
            double zs = Z[f - 1] + (Z[f] - Z[f - 1]) * (t - T[f - 1]) / (T[f] - T[f - 1]);
            worst = fmax(worst, fabs(zs / ze[q] - 1));
        }
        if (worst < *best) {
            *best = worst;
            *best_shift = shift;
        }
    }
    return points;
}

/* Issue 19's protocol: the mean relative error of the surge front Z(T) (frames 0..nf) over
 * Martin & Moyce's points, with the release shift |dT| <= max_shift (steps of 0.005) that fits
 * best; the experiment's points outside the run's times are left out. Returns the points used
 * at the best shift. */
static inline int martin_moyce_mean(const double *T, const double *Z, int nf, double max_shift,
                                    double *best, double *best_shift)
{
    FILE *csv = fopen("tests/data/validation/martin_moyce_1952_n2_1_front.csv", "r");
    assert_non_null(csv);
    char line[512];
    double te[64], ze[64];
    int points = 0, used = 0;
    while (points < 64 && fgets(line, sizeof line, csv))
        if (line[0] != '#' && sscanf(line, "%lf,%lf", &te[points], &ze[points]) == 2)
            points++;
    fclose(csv);
    *best = 1e9;
    *best_shift = 0;
    int steps = (int)(max_shift / 0.005 + 0.5);
    for (int k = -steps; k <= steps; k++) {
        double shift = 0.005 * k, sum = 0;
        int n = 0;
        for (int q = 0; q < points; q++) {
            double t = te[q] - shift;
            if (t < T[0] || t > T[nf])
                continue;
            int f = 1;
            while (f < nf && T[f] < t)
                f++;
            double zs = Z[f - 1] + (Z[f] - Z[f - 1]) * (t - T[f - 1]) / (T[f] - T[f - 1]);
            sum += fabs(zs / ze[q] - 1);
            n++;
        }
        if (n >= 5 && sum / n < *best) {
            *best = sum / n;
            *best_shift = shift;
            used = n;
        }
    }
    return used;
}

/* The 99.5th percentile of the particles' x (issue 19's surge front): robust to the few
 * splashing ahead. */
static inline int cmp_float_(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static inline double front_percentile(const float *pos4, size_t n)
{
    float *x = malloc((n + 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = pos4[4 * i];
    qsort(x, n, sizeof *x, cmp_float_);
    double v = n ? x[(size_t)(0.995 * (double)(n - 1) + 0.5)] : 0;
    free(x);
    return v;
}

/* Run an open dam-break world frame by frame and fit its front (the 99.5th percentile of x,
 * column width a) to Martin & Moyce with martin_moyce_mean (release shift <= 0.1). Returns
 * the points used. */
static inline int flume_front_error(world *w, double a, double *mean, double *shift)
{
    const mz_scene *s = &w->scene;
    double T[64], Z[64];
    int nf = s->sim.frames;
    assert_true(nf < 64);
    for (int f = 0; f <= nf; f++) {
        if (f > 0)
            assert_int_equal(sim_advance_frame(&w->sim, scene_frame_dt(s)), 0);
        world_read(w);
        T[f] = w->sim.time * sqrt(9.81 / a);
        Z[f] = front_percentile(w->pos, w->parts.n) / a;
    }
    return martin_moyce_mean(T, Z, nf, 0.1, mean, shift);
}

/* The log law of the wall functions (FLIP's, PBF's), in double, as the kernels solve it
 * (kernels/common/wall_law.clh). */
static inline double host_wall_stress(double u, double y, double nu)
{
    double ut = sqrt(nu * u / y);
    if (y * ut / nu < 11.2)
        return nu * u / y;
    for (int k = 0; k < 6; k++)
        ut = 0.41 * u / log(9.8 * y * ut / nu);
    return ut * ut;
}

#endif
