/* Probes and gauges (solvers/observe.h, kernels/grid/probes.cl) on PoCL: samples against a
 * host brute force over the particles read back (WCSPH and PBF in 2D, a WCSPH dam break in 2D,
 * WCSPH in 3D on a dense and a hashed grid: the grids that reorder particles and the one that
 * sorts a copy; WCSPH's taken after the next step's grid build and on a grid indexed at once),
 * FLIP's and WCSPH's still tanks read at ten depths within 1% of rho0 g depth below the
 * gauge's level (WCSPH's also against its own particles), and a uniform flow's velocity exact
 * to 1e-5. The resumed run's samples are checked in tests/cli/test_stops.c. */
#include "device/grid.h"
#include "solvers/observe.h"
#include "test_util.h"
#include "test_world.h"

#include <math.h>

/* A scene text: a tank of water `depth` deep and 0.4 m wide (box 0.4 × 0.6, 2D or 3D 0.1 m
 * deep), its solver and extra keys, ten probes at x = 0.2 from y = 0.04 up by 0.03, one in
 * the air, and a gauge from the floor to the top. */
static char *tank_scene_in(const char *solver, int dim, const char *fluid_extra,
                           const char *sim_extra, const char *boundary, const char *domain_max)
{
    char probes[4096] = "", *p = probes;
    for (int k = 0; k < 10; k++)
        p += sprintf(p, "{\"name\": \"p%d\", \"position\": [0.2, %.2f, 0.05]},", k, 0.04 + 0.03 * k);
    sprintf(p, "{\"name\": \"air\", \"position\": [0.2, 0.55, 0.05], \"rate\": 100}");
    char *text = malloc(8192);
    snprintf(text, 8192,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 10, "
             "\"dimensions\": %d %s},"
             "\"domain\": {\"min\": [0, 0, 0], \"max\": %s, \"boundary\": {\"type\": "
             "\"%s\"}},"
             "\"fluids\": [{\"solver\": \"%s\", \"box\": {\"min\": [0, 0, 0], \"max\": [0.4, 0.4, "
             "%s]}, \"spacing\": 0.01 %s}],"
             "\"probes\": [%s],"
             "\"gauges\": [{\"name\": \"level\", \"start\": [0.2, 0, 0.05], \"end\": [0.2, 0.6, "
             "0.05], \"rate\": 200}]}",
             dim, sim_extra, domain_max ? domain_max : dim == 3 ? "[0.4, 0.6, 0.1]" : "[0.4, 0.6, 0]",
             boundary, solver, dim == 3 ? "0.1" : "0", fluid_extra, probes);
    return text;
}

static char *tank_scene(const char *solver, int dim, const char *fluid_extra,
                        const char *sim_extra, const char *boundary)
{
    return tank_scene_in(solver, dim, fluid_extra, sim_extra, boundary, NULL);
}

static double wendland(double r2, double kh)
{
    double q = sqrt(r2) / kh;
    if (!(q < 1))
        return 0;
    double a = (1 - q) * (1 - q);
    return a * a * (1 + 4 * q);
}

/* The host's sums at x over every fluid particle of the state read back: weight, pressure,
 * density, velocity (Shepard-normalised when the fraction reaches 0.05). */
static void host_probe(const world *w, const mz_observers *o, const double x[3], double out[6])
{
    int dim = w->scene.sim.dimensions;
    double sw = 0, sp = 0, sr = 0, sv[3] = {0, 0, 0};
    for (size_t j = 0; j < w->parts.n; j++) {
        double r2 = 0;
        for (int a = 0; a < dim; a++)
            r2 += (w->pos[4 * j + a] - x[a]) * (w->pos[4 * j + a] - x[a]);
        double wt = wendland(r2, o->kh);
        sw += wt;
        sp += wt * w->p[j];
        sr += wt * w->rho[j];
        for (int a = 0; a < 3; a++)
            sv[a] += wt * w->vel[4 * j + a];
    }
    double fraction = sw * o->inv_rest, inv = fraction >= 0.05 ? 1 / sw : 0;
    double v[6] = {fraction, sp * inv, sr * inv, sv[0] * inv, sv[1] * inv, sv[2] * inv};
    memcpy(out, v, sizeof v);
}

/* The part of the kernel's weight around x (radius kh) outside the domain, by a grid of 48
 * cells a side over its support: what the gauges count as filled besides the water. */
static double host_walls(const mz_scene *s, const double x[3], double kh)
{
    enum { M = 48 };
    int dim = s->sim.dimensions;
    double in = 0, all = 0, d = 2 * kh / M;
    for (int k = 0; k < (dim == 3 ? M : 1); k++)
        for (int j = 0; j < M; j++)
            for (int i = 0; i < M; i++) {
                double p[3] = {x[0] - kh + (i + 0.5) * d, x[1] - kh + (j + 0.5) * d,
                               dim == 3 ? x[2] - kh + (k + 0.5) * d : 0};
                double r2 = 0;
                for (int a = 0; a < dim; a++)
                    r2 += (p[a] - x[a]) * (p[a] - x[a]);
                double wt = wendland(r2, kh);
                bool inside = true;
                for (int a = 0; a < dim; a++)
                    inside = inside && p[a] >= s->domain.min[a] && p[a] <= s->domain.max[a];
                all += wt;
                in += inside ? wt : 0;
            }
    return 1 - in / all;
}

/* The sample of step `step` against the host's sums over the state world_read read at that
 * step: each probe's values to 1e-4 of their scale, the gauge's level to a hundredth of a
 * spacing (the device takes the walls' part from a table); the probes and the gauge that were
 * due. */
static void check_sample(world *w, long step)
{
    mz_observers *o = w->sim.obs;
    assert_non_null(o);
    assert_int_equal(observe_collect(o, &w->sim), 0);
    assert_true(o->taken.count > 0);
    const mz_samples *t = &o->taken;
    size_t last = t->count - 1, m = o->n_probes + o->n_gauges;
    while (last > 0 && t->step[last] != step)
        last--;
    assert_int_equal(t->step[last], step);
    const mz_scene *s = &w->scene;
    double worst = 0;
    for (size_t i = 0; i < o->n_probes; i++) {
        if (!t->due[last * m + i])
            continue;
        double ref[6];
        host_probe(w, o, s->probes[i].position, ref);
        const float *got = t->rows + last * o->row + 6 * i;
        double scale[6] = {1, fmax(fabs(ref[1]), 100), 1000, 1, 1, 1};
        for (int k = 0; k < 6; k++) {
            double e = fabs(got[k] - ref[k]) / scale[k];
            worst = fmax(worst, e);
            if (e > 1e-4)
                fail_msg("probe %s value %d: device %.7g, host %.7g", s->probes[i].name, k,
                         got[k], ref[k]);
        }
    }
    if (!t->due[last * m + o->n_probes])
        return;
    /* The gauge: fractions along it on the host, then the crossing. */
    const mz_gauge *g = &s->gauges[0];
    size_t np = scene_gauge_points(s, g);
    double len = 0;
    for (int a = 0; a < s->sim.dimensions; a++)
        len += (g->end[a] - g->start[a]) * (g->end[a] - g->start[a]);
    len = sqrt(len);
    double ds = len / (double)(np - 1), level = len;
    double *frac = calloc(np, sizeof *frac);
    for (size_t k = 0; k < np; k++) {
        double x[3], v[6];
        for (int a = 0; a < 3; a++)
            x[a] = g->start[a] + (double)k / (double)(np - 1) * (g->end[a] - g->start[a]);
        host_probe(w, o, x, v);
        frac[k] = v[0] + host_walls(s, x, o->kh);
    }
    /* the first point below 0.5 with the next two (a spacing) below too */
    for (size_t k = 0; k < np; k++)
        if (frac[k] < 0.5 && (k + 1 >= np || frac[k + 1] < 0.5) &&
            (k + 2 >= np || frac[k + 2] < 0.5)) {
            level = k == 0 ? 0 : ((double)k - 1 + (frac[k - 1] - 0.5) / (frac[k - 1] - frac[k])) * ds;
            break;
        }
    free(frac);
    float got = t->rows[last * o->row + 6 * o->n_probes];
    print_message("%s %dD, %s grid: %zu probes within %.1e of the host's sums; gauge %.5f m "
                  "(host %.5f m)\n", mz_solver_names[scene_solver(s)], s->sim.dimensions,
                  w->sim.grid->desc.hashed ? "hashed" : "dense", o->n_probes, worst, got, level);
    assert_true(fabs(got - level) < 1e-2 * s->fluids[0].spacing);
    /* The air probe reads no fluid: zeros, not NaN. */
    const float *air = t->rows + last * o->row + 6 * 10;
    for (int k = 0; k < 6; k++)
        assert_true(!t->due[last * m + 10] || air[k] == 0.0f);
}

static void run_and_check(const char *json, int frames, int hashed)
{
    world w;
    world_open(&w, json, NULL, 0);
    assert_int_equal(w.sim.grid->desc.hashed, hashed);
    for (int f = 0; f < frames; f++)
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    /* The frame's last sample, which WCSPH takes after the next step's grid build (a build
     * that moves the particles: the last step's densities and pressures are read through its
     * map), against the state read before that step; then that step's, which waits for no
     * step (the grid indexed at once). */
    long step = w.sim.step;
    world_read(&w);
    assert_int_equal(sim_substep(&w.sim, 1e-4), 0);
    check_sample(&w, step);
    world_read(&w);
    check_sample(&w, w.sim.step);
    world_close(&w);
}

static void test_host_reference(void **state)
{
    (void)state;
    char *wc2 = tank_scene("wcsph", 2, "", ", \"adaptive\": true", "particles");
    char *wc3 = tank_scene("wcsph", 3, "", ", \"adaptive\": true", "particles");
    char *pbf = tank_scene("pbf", 2, "", ", \"substeps\": 4", "penalty");
    /* The same 3D tank in a domain of 2000 x 30 x 2000 cells: a hashed grid, whose buckets the
     * 125 cells around a point may share (each is summed once). */
    char *hashed = tank_scene_in("wcsph", 3, "", ", \"adaptive\": true", "penalty",
                                 "[40, 0.6, 40]");
    run_and_check(wc2, 3, 0);
    /* The same water let go in a box three times as wide: a dam break, whose particles change
     * cells, and places, every step. */
    char *dam = tank_scene_in("wcsph", 2, "", ", \"adaptive\": true", "particles",
                              "[1.2, 0.6, 0]");
    run_and_check(dam, 5, 0);
    free(dam);
    run_and_check(wc3, 1, 0);
    run_and_check(pbf, 3, 0);
    run_and_check(hashed, 1, 1);
    free(wc2);
    free(wc3);
    free(pbf);
    free(hashed);
}

/* The samples at or after time `since`: each of the ten probes' mean pressure, and the gauge's
 * mean level. */
static void mean_readings(const mz_observers *o, double since, double *p, double *level)
{
    const mz_samples *t = &o->taken;
    size_t m = o->n_probes + o->n_gauges;
    double lsum = 0;
    long lcnt = 0;
    for (size_t i = 0; i < 10; i++) {
        double sum = 0;
        long cnt = 0;
        for (size_t k = 0; k < t->count; k++)
            if (t->time[k] >= since && t->due[k * m + i]) {
                sum += t->rows[k * o->row + 6 * i + 1];
                cnt++;
            }
        p[i] = sum / (double)cnt;
    }
    for (size_t k = 0; k < t->count; k++)
        if (t->time[k] >= since && t->due[k * m + o->n_probes]) {
            lsum += t->rows[k * o->row + 6 * o->n_probes];
            lcnt++;
        }
    *level = lsum / (double)lcnt;
}

/* FLIP's still tank: its grid pressure is hydrostatic, and the probes read it within 1% at ten
 * depths below the gauge's level (measured: within 0.3%), which is the filled 0.4 m within a
 * tenth of a spacing, from the lattice. Jittered (FLIP's default start), the water is
 * unordered: the gauge must not stop at a hole inside it (a hole of one point in a hundred
 * put it at 0.327 m before gauges asked for a spacing of air), and reads the rough surface
 * within half a spacing. */
static void hydrostatic_flip(bool jittered)
{
    char *json = tank_scene("flip", 2,
                            jittered ? ", \"rest_density\": 1000, \"seeding\": \"jittered\""
                                     : ", \"rest_density\": 1000, \"seeding\": \"lattice\"",
                            ", \"substeps\": 4", "penalty");
    world w;
    world_open(&w, json, NULL, 0);
    for (int f = 0; f < 50; f++)
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    assert_int_equal(observe_collect(w.sim.obs, &w.sim), 0);
    double p[10], level;
    mean_readings(w.sim.obs, 0.5, p, &level);
    double worst = 0, g = 9.81;
    for (int k = 0; k < 10; k++) {
        double y = 0.04 + 0.03 * k, ref = 1000 * g * (level - y);
        worst = fmax(worst, fabs(p[k] / ref - 1));
    }
    print_message("flip (%s): gauge level %.5f m; ten probes within %.2f%% of rho0 g depth\n",
                  jittered ? "jittered" : "lattice", level, 100 * worst);
    if (jittered) {
        assert_true(fabs(level - 0.4) < 0.5 * 0.01);
    } else {
        assert_true(fabs(level - 0.4) < 0.1 * 0.01);
        assert_true(worst < 0.01);
    }
    world_close(&w);
    free(json);
}

static void test_hydrostatic_flip(void **state)
{
    (void)state;
    hydrostatic_flip(false);
    hydrostatic_flip(true);
}

/* WCSPH's still tank (scenes/hydrostatic.json's settings): the probes read what its particles
 * carry, checked against the particles of their own layer (within 1.5%: measured 1.21%, the
 * layer's mean height is not exactly the probe's: 1 mm is 1.1% at the shallowest probe), and
 * ten depths below the gauge's level within 1% of rho0 g depth (measured 0.44%; 2.5% before
 * the pressure force's kernel gradient correction, kernels/sph/sph_kernels.clh: mz_kgc, when
 * the settled packing made the force 2.5% weak and the pressure that much high). */
static void test_hydrostatic_wcsph(void **state)
{
    (void)state;
    char *json = tank_scene("wcsph", 2,
                            ", \"viscosity\": 1, \"artificial_viscosity\": 0.1, "
                            "\"density_method\": \"continuity\", \"gradient_correction\": true",
                            ", \"adaptive\": true", "particles");
    world w;
    world_open(&w, json, NULL, 0);
    /* Over the last 36 frames: the probes' mean, and the mean pressure of the particles of
     * each probe's layer (within half a spacing of its height, 0.1 m either side of it). */
    enum { FRAMES = 100, AVG = 36 };
    double layer[10] = {0};
    long cnt[10] = {0};
    for (int f = 1; f <= FRAMES; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        if (f <= FRAMES - AVG)
            continue;
        world_read(&w);
        for (int k = 0; k < 10; k++)
            for (size_t j = 0; j < w.parts.n; j++)
                if (fabs(w.pos[4 * j + 1] - (0.04 + 0.03 * k)) < 0.005 &&
                    fabs(w.pos[4 * j] - 0.2) < 0.1) {
                    layer[k] += w.p[j];
                    cnt[k]++;
                }
    }
    assert_int_equal(observe_collect(w.sim.obs, &w.sim), 0);
    double p[10], level;
    mean_readings(w.sim.obs, (double)(FRAMES - AVG) / 50.0, p, &level);
    double worst_ref = 0, worst_layer = 0;
    for (int k = 0; k < 10; k++) {
        double y = 0.04 + 0.03 * k, ref = 1000 * 9.81 * (level - y);
        worst_ref = fmax(worst_ref, fabs(p[k] / ref - 1));
        worst_layer = fmax(worst_layer, fabs(p[k] / (layer[k] / (double)cnt[k]) - 1));
    }
    print_message("wcsph: gauge level %.5f m; ten probes within %.2f%% of their layers' "
                  "particles, %.2f%% of rho0 g depth\n", level, 100 * worst_layer,
                  100 * worst_ref);
    assert_true(fabs(level - 0.4) < 0.5 * 0.01);
    assert_true(worst_layer < 0.015);
    assert_true(worst_ref < 0.01);
    world_close(&w);
    free(json);
}

/* A block of water moving at (0.5, -0.2, 0.3) m/s with no gravity, far from the walls:
 * continuity density stays at rest, no force acts, and each of 1000 probes inside reads the
 * velocity to 1e-5 m/s after each of 200 steps. So many probes make long sample rows: the
 * device's buffer of rows fills (174 rows) and is read back mid-frame, which is checked too. */
static void test_uniform_flow(void **state)
{
    (void)state;
    char probes[65536] = "", *p = probes;
    for (int k = 0; k < 1000; k++)
        p += sprintf(p, "%s{\"name\": \"p%d\", \"position\": [%.3f, %.3f, %.3f]%s}",
                     k ? ", " : "", k, -0.054 + 0.012 * (k % 10), -0.054 + 0.012 * (k / 10 % 10),
                     -0.054 + 0.012 * (k / 100), k == 1 ? ", \"fields\": [\"velocity\"]" : "");
    char *json = malloc(1 << 17);
    snprintf(json, 1 << 17,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 2, "
             "\"dimensions\": 3, \"gravity\": [0, 0, 0], \"substeps\": 100},"
             "\"domain\": {\"min\": [-1, -1, -1], \"max\": [1, 1, 1]},"
             "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [-0.1, -0.1, -0.1], "
             "\"max\": [0.1, 0.1, 0.1]}, \"spacing\": 0.01, \"velocity\": [0.5, -0.2, 0.3], "
             "\"density_method\": \"continuity\"}], \"probes\": [%s]}",
             probes);
    world w;
    world_open(&w, json, NULL, 0);
    mz_observers *o = w.sim.obs;
    assert_true(o->cap_rows < 200);
    for (int f = 0; f < 2; f++)
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    assert_int_equal(observe_collect(o, &w.sim), 0);
    assert_int_equal(o->taken.count, 200);
    double worst = 0, want[3] = {0.5, -0.2, 0.3};
    for (size_t k = 0; k < o->taken.count; k++) {
        assert_int_equal(o->taken.step[k], (long)k + 1);
        for (size_t i = 0; i < o->n_probes; i++)
            for (int a = 0; a < 3; a++)
                worst = fmax(worst, fabs(o->taken.rows[k * o->row + 6 * i + 3 + a] - want[a]));
    }
    print_message("uniform flow: %zu probes x 200 steps (device rows read back every %zu), "
                  "velocity within %.1e m/s\n", o->n_probes, o->cap_rows, worst);
    assert_true(worst < 1e-5);
    world_close(&w);
    free(json);
}

/* A film two particles deep on the floor: the gauge counts the floor as filled, so it reads
 * the film's 0.02 m (within a quarter spacing), where the fluid alone never fills half the
 * kernel and would read dry; a gauge that starts in the air reads 0. */
static void test_thin_film(void **state)
{
    (void)state;
    const char *json =
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 1, \"dimensions\": 2, "
        "\"adaptive\": true}, \"domain\": {\"min\": [0, 0, 0], \"max\": [0.4, 0.3, 0], "
        "\"boundary\": {\"type\": \"particles\"}}, \"fluids\": [{\"solver\": \"wcsph\", "
        "\"box\": {\"min\": [0, 0, 0], \"max\": [0.4, 0.02, 0]}, \"spacing\": 0.01, "
        "\"density_method\": \"continuity\"}], \"gauges\": [{\"name\": \"floor\", "
        "\"start\": [0.2, 0, 0], \"end\": [0.2, 0.3, 0]}, {\"name\": \"air\", \"start\": [0.2, "
        "0.1, 0], \"end\": [0.2, 0.3, 0]}]}";
    world w;
    world_open(&w, json, NULL, 0);
    assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    mz_observers *o = w.sim.obs;
    assert_int_equal(observe_collect(o, &w.sim), 0);
    const float *row = o->taken.rows + (o->taken.count - 1) * o->row;
    print_message("film 0.02 m deep: the floor gauge reads %.5f m, the one in the air %.5f m\n",
                  row[0], row[1]);
    assert_true(fabs(row[0] - 0.02) < 0.25 * 0.01);
    assert_true(row[1] == 0.0f);
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_reference),
        cmocka_unit_test(test_hydrostatic_flip),
        cmocka_unit_test(test_hydrostatic_wcsph),
        cmocka_unit_test(test_uniform_flow),
        cmocka_unit_test(test_thin_film),
    };
    return cmocka_run_group_tests(tests, open_device, close_device);
}
