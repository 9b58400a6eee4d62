/* Forces on solids (colliders[].forces, domain.boundary.forces; solvers/sph/loads.h and
 * observe.h) on PoCL, SPH with particle walls:
 *   - the sums: each load's force and torque against the host's sum, in double, of the
 *     elements the solver filled (their forces and positions read back);
 *   - momentum: over one step of a moving dam break, the forces on all solids are minus what
 *     the walls gave the fluid, Σ m Δv/dt − M g, for no-slip, free-slip and wall-function
 *     walls (the last two spread a non-pairwise part over the boundary particles);
 *   - physics: a still tank's floor carries the water's weight within 1% and its side walls
 *     ½ ρ g H² within 3%; a submerged box feels its buoyancy within 2% (WCSPH by summation,
 *     collapsed SPH, FLIP and PBF; DFSPH, about 2.5% over, within 4.5%). */
#include "build/build.h"
#include "solvers/observe.h"
#include "solvers/sph/sph.h"
#include "test_util.h"
#include "test_world.h"

#include <math.h>

/* The samples of load k (0-based among the loads) from `since` on: mean force and torque. */
static void mean_load(const mz_observers *o, size_t k, double since, double f[3], double t[3])
{
    const mz_samples *s = &o->taken;
    size_t m = o->n_probes + o->n_gauges + o->n_loads, i = o->n_probes + o->n_gauges + k;
    size_t at = 6 * o->n_probes + o->n_gauges + 6 * k;
    long cnt = 0;
    for (int a = 0; a < 3; a++)
        f[a] = t[a] = 0;
    for (size_t r = 0; r < s->count; r++)
        if (s->time[r] >= since && s->due[r * m + i]) {
            for (int a = 0; a < 3; a++) {
                f[a] += s->rows[r * o->row + at + a];
                t[a] += s->rows[r * o->row + at + 3 + a];
            }
            cnt++;
        }
    assert_true(cnt > 0);
    for (int a = 0; a < 3; a++) {
        f[a] /= (double)cnt;
        t[a] /= (double)cnt;
    }
}

/* The mean force of load k from `since` on, each sample weighted by the time since the one
 * before: with a sample every step, the impulse the solid took over the time. */
static void timed_load(const mz_observers *o, size_t k, double since, double f[3])
{
    const mz_samples *s = &o->taken;
    size_t m = o->n_probes + o->n_gauges + o->n_loads, i = o->n_probes + o->n_gauges + k;
    size_t at = 6 * o->n_probes + o->n_gauges + 6 * k;
    double last = 0, total = 0;
    for (int a = 0; a < 3; a++)
        f[a] = 0;
    for (size_t r = 0; r < s->count; r++)
        if (s->due[r * m + i]) {
            double dt = s->time[r] - last;
            last = s->time[r];
            if (s->time[r] < since)
                continue;
            for (int a = 0; a < 3; a++)
                f[a] += dt * s->rows[r * o->row + at + a];
            total += dt;
        }
    assert_true(total > 0);
    for (int a = 0; a < 3; a++)
        f[a] /= total;
}

/* The scene `json` opened into *w and run for `frames` frames, its samples collected. */
static mz_observers *run_observed(world *w, const char *json, int frames)
{
    world_open(w, json, NULL, 0);
    for (int f = 0; f < frames; f++)
        assert_int_equal(sim_advance_frame(&w->sim, scene_frame_dt(&w->scene)), 0);
    assert_int_equal(observe_collect(w->sim.obs, &w->sim), 0);
    return w->sim.obs;
}

/* The last sample's loads against the host's sums over the elements the device filled. */
static void check_sums(world *w)
{
    mz_observers *o = w->sim.obs;
    const mz_load_elems *e = &w->sim.loads;
    size_t n = e->n, nl = o->n_loads;
    float *at = malloc(16 * n), *force = malloc(16 * n);
    cl_uint *first = malloc(4 * nl), *count = malloc(4 * nl);
    world_read_buffer((cl_mem *)&e->at, at, 16 * n);
    world_read_buffer((cl_mem *)&e->force, force, 16 * n);
    world_read_buffer((cl_mem *)&e->first, first, 4 * nl);
    world_read_buffer((cl_mem *)&e->count, count, 4 * nl);
    assert_int_equal(observe_collect(o, &w->sim), 0);
    const float *row = o->taken.rows + (o->taken.count - 1) * o->row + 6 * o->n_probes +
                       o->n_gauges;
    double worst = 0;
    for (size_t k = 0; k < nl; k++) {
        const double *c = scene_load_ref(&w->scene, k).load->about;
        double f[3] = {0, 0, 0}, t[3] = {0, 0, 0}, scale = 0;
        for (size_t q = first[k]; q < first[k] + count[k]; q++) {
            const float *x = at + 4 * q, *fe = force + 4 * q;
            double r[3] = {x[0] - c[0], x[1] - c[1], w->scene.sim.dimensions == 3 ? x[2] - c[2]
                                                                                   : 0};
            for (int a = 0; a < 3; a++)
                f[a] += fe[a];
            t[0] += r[1] * fe[2] - r[2] * fe[1];
            t[1] += r[2] * fe[0] - r[0] * fe[2];
            t[2] += r[0] * fe[1] - r[1] * fe[0];
            scale += fabs(fe[0]) + fabs(fe[1]) + fabs(fe[2]);
        }
        if (scale == 0) { /* no fluid near it (the lid): nothing, exactly */
            for (int a = 0; a < 6; a++)
                assert_true(row[6 * k + a] == 0.0f);
            continue;
        }
        for (int a = 0; a < 3; a++) {
            worst = fmax(worst, fabs(row[6 * k + a] - f[a]) / scale);
            worst = fmax(worst, fabs(row[6 * k + 3 + a] - t[a]) / scale);
        }
    }
    print_message("loads: %zu solids, %zu elements; sums within %.2g of the host's (relative to "
                  "the elements' total)\n", nl, n, worst);
    assert_true(worst < 1e-5);
    free(at);
    free(force);
    free(first);
    free(count);
}

/* A 2D dam break with forces on every wall and on a sphere in the flow's path, 0.15 s in;
 * then one step: the solids' forces against the fluid's change of momentum. */
static void momentum_balance(const char *friction, const char *solver)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 20, "
             "\"dimensions\": 2, \"adaptive\": true}, \"domain\": {\"min\": [0, 0, 0], \"max\": "
             "[0.6, 0.3, 0], \"boundary\": {\"type\": \"particles\", \"friction\": \"%s\", "
             "\"forces\": {\"about\": [0, 0, 0]}}}, \"fluids\": [{\"solver\": \"%s\", \"box\": "
             "{\"min\": [0, 0, 0], \"max\": [0.1, 0.1, 0]}, \"spacing\": 0.004, "
             "\"viscosity\": 0.001, \"artificial_viscosity\": 0.05}], \"colliders\": [{\"name\": "
             "\"rock\", \"sphere\": {\"center\": [0.16, 0.0, 0], \"radius\": 0.03}, \"forces\": "
             "{}}]}",
             friction, solver);
    world w;
    world_open(&w, json, NULL, 0);
    double frame = scene_frame_dt(&w.scene);
    for (int f = 0; f < 15; f++)
        assert_int_equal(sim_advance_frame(&w.sim, frame), 0);
    double m = sph_params_for(&w.scene).mass, p0[3], p1[3], dt = 5e-5;
    world_momentum(&w, m, p0);
    assert_int_equal(observe_collect(w.sim.obs, &w.sim), 0);
    size_t before = w.sim.obs->taken.count;
    /* One step of dt: a fixed step, or DFSPH's own in a frame that short (after one step of dt
     * before it: its divergence solve's impulse belongs to the step before, which must be as
     * long for the balance to close). */
    if (w.sim.solver->substep) {
        assert_int_equal(sim_substep(&w.sim, dt), 0);
    } else {
        assert_int_equal(observe_collect(w.sim.obs, &w.sim), 0);
        before = w.sim.obs->taken.count + 1;
        assert_int_equal(sim_advance_frame(&w.sim, dt), 0);
        world_momentum(&w, m, p0);
        assert_int_equal(sim_advance_frame(&w.sim, dt), 0);
    }
    world_momentum(&w, m, p1);
    check_sums(&w);
    mz_observers *o = w.sim.obs;
    assert_int_equal(o->taken.count, before + 1);
    const float *row = o->taken.rows + before * o->row;
    double total[2], weight = m * (double)w.parts.n * 9.81, rock = fabs(row[0]) + fabs(row[1]);
    double worst = world_loads_balance(row, o->n_loads, p0, p1, dt, m, w.parts.n, total);
    print_message("%s, %s walls: the solids' forces (%.2f, %.2f) N/m, the rock's %.2f N/m; "
                  "momentum balance within %.2g of the weight %.1f N/m\n", solver, friction,
                  total[0], total[1], rock, worst, weight);
    assert_true(rock > 0.01 * weight); /* the flow reached it */
    assert_true(worst < 1e-4);
    world_close(&w);
}

static void test_momentum_no_slip(void **state)
{
    (void)state;
    momentum_balance("no_slip", "wcsph");
}

static void test_momentum_free_slip(void **state)
{
    (void)state;
    momentum_balance("free_slip", "wcsph");
}

static void test_momentum_wall_function(void **state)
{
    (void)state;
    momentum_balance("wall_function", "collapsed_sph");
}

/* The position-based solver (PBF water, a sphere collider, clamp walls), one substep of a dam
 * break: the forces on the solids, −Σ m Δ/dt² of the corrections they made, balance the fluid's
 * change of momentum (its own density constraint is symmetric: it moves no momentum). */
static void momentum_pbd(const char *walls)
{
    char json[1024];
    snprintf(json, sizeof json,
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 20, \"substeps\": 16, "
        "\"dimensions\": 2}, \"domain\": {\"min\": [0, 0, 0], \"max\": [0.6, 0.3, 0], "
        "\"boundary\": {\"type\": \"%s\", \"forces\": {}}}, \"fluids\": [{\"solver\": "
        "\"pbf\", \"box\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.1, 0]}, \"spacing\": 0.004}], "
        "\"colliders\": [{\"name\": \"rock\", \"sphere\": {\"center\": [0.2, 0.0, 0], "
        "\"radius\": 0.03}, \"forces\": {}}]}", walls);
    world w;
    world_open(&w, json, NULL, 0);
    double frame = scene_frame_dt(&w.scene), dt = frame / 16;
    for (int f = 0; f < 15; f++)
        assert_int_equal(sim_advance_frame(&w.sim, frame), 0);
    double p0[3], p1[3], m = build_particle_mass(&w.scene, &w.scene.fluids[0]);
    world_momentum(&w, m, p0);
    mz_observers *o = w.sim.obs;
    assert_int_equal(observe_collect(o, &w.sim), 0);
    size_t before = o->taken.count;
    assert_int_equal(sim_substep(&w.sim, dt), 0);
    world_momentum(&w, m, p1);
    assert_int_equal(observe_collect(o, &w.sim), 0);
    assert_int_equal(o->taken.count, before + 1);
    const float *row = o->taken.rows + before * o->row;
    double total[2], weight = m * (double)w.parts.n * 9.81;
    double worst = world_loads_balance(row, o->n_loads, p0, p1, dt, m, w.parts.n, total);
    print_message("pbf, %s walls: the solids' forces (%.2f, %.2f) N/m, the rock's (%.2f, %.2f); "
                  "momentum balance within %.2g of the weight %.1f N/m\n", walls, total[0],
                  total[1], row[0], row[1], worst, weight);
    assert_true(fabs(row[0]) + fabs(row[1]) > 0.01 * weight); /* the flow reached the rock */
    assert_true(worst < 1e-3);
    world_close(&w);
}

static void test_momentum_pbd(void **state)
{
    (void)state;
    momentum_pbd("clamp");
}

/* The same with particle walls: the boundary particles' pushes, by owner (the rock's into its
 * touch slots, the walls' by axis), balance the fluid's change of momentum too. */
static void test_momentum_pbd_particles(void **state)
{
    (void)state;
    momentum_pbd("particles");
}

static void test_momentum_dfsph(void **state)
{
    (void)state;
    momentum_balance("free_slip", "dfsph");
}

/* scenes/hydrostatic.json (2D, 0.4 m of water in a 0.4 m wide tank, continuity density) with
 * forces on its walls, averaged over its last 0.7 s of 2: the floor carries ρ0 g H W (within
 * 1%; measured 0.01%), each side wall ½ ρ0 g H² (within 3%; measured 1.8% under). */
static void test_tank_walls(void **state)
{
    (void)state;
    skip_if_quick();
    const char *sets[] = {"domain.boundary.forces={\"rate\": 200}", "simulation.frames=100"};
    world w;
    world_open_file(&w, "scenes/hydrostatic.json", sets, 2);
    for (int f = 0; f < 100; f++)
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    mz_observers *o = w.sim.obs;
    assert_int_equal(observe_collect(o, &w.sim), 0);
    double g = 9.81, H = 0.4, W = 0.4, floor_ref = 1000 * g * H * W, side = 0.5 * 1000 * g * H * H;
    double f[4][3], t[4][3];
    for (size_t k = 0; k < 4; k++) /* x_min, x_max, y_min, y_max */
        mean_load(o, k, 1.3, f[k], t[k]);
    print_message("still tank: floor %.2f N/m (rho0 g H W %.2f), walls %.2f and %.2f N/m "
                  "(rho0 g H^2/2 %.2f), lid %.3g N/m; x_min's torque about the centre %.2f N "
                  "(at H/3: %.2f)\n", f[2][1], floor_ref, f[0][0], f[1][0], side, f[3][1],
                  t[0][2], -side * (0.3 - H / 3));
    assert_true(fabs(-f[2][1] / floor_ref - 1) < 0.01);
    assert_true(fabs(-f[0][0] / side - 1) < 0.03 && fabs(f[1][0] / side - 1) < 0.03);
    assert_true(f[3][1] == 0);
    /* The side wall's pressure acts at a third of the depth: its torque about (0.2, 0.3) is
     * −|F| (0.3 − H/3), within 3%. */
    assert_true(fabs(t[0][2] / (-side * (0.3 - H / 3)) - 1) < 0.03);
    world_close(&w);
}

/* PBF water 0.2 m deep at rest in a clamp-walled tank (4 substeps, 4 iterations, spacing
 * 0.01 m): averaged over t > 1 s the floor carries the water's weight within 1% (measured
 * 0.03%); its side walls ½ ρ0 g H² within 5% (measured 3% under: PBF's density deficit along a
 * wall). */
static void tank_pbf(const char *walls)
{
    char json[1024];
    snprintf(json, sizeof json,
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 100, \"substeps\": 4, "
        "\"iterations\": 4, \"dimensions\": 2}, \"domain\": {\"min\": [0, 0, 0], \"max\": "
        "[0.4, 0.6, 0], \"boundary\": {\"type\": \"%s\", \"forces\": {\"rate\": 100}}}, "
        "\"fluids\": [{\"solver\": \"pbf\", \"box\": {\"min\": [0, 0, 0], \"max\": [0.4, 0.2, "
        "0]}, \"spacing\": 0.01}]}", walls);
    world w;
    mz_observers *o = run_observed(&w, json, 100);
    double f[4][3], t[4][3];
    for (size_t k = 0; k < 4; k++)
        mean_load(o, k, 1.0, f[k], t[k]);
    double weight = build_particle_mass(&w.scene, &w.scene.fluids[0]) * (double)w.parts.n * 9.81;
    double side = 0.5 * 1000 * 9.81 * 0.2 * 0.2;
    print_message("pbf tank, %s walls: floor %.2f N/m (the water's weight %.2f: %+.2f%%), walls "
                  "%.2f and %.2f N/m (rho0 g H^2/2 %.2f)\n", walls, f[2][1], weight,
                  100 * (-f[2][1] / weight - 1), f[0][0], f[1][0], side);
    assert_true(fabs(-f[2][1] / weight - 1) < 0.01);
    assert_true(fabs(-f[0][0] / side - 1) < 0.05 && fabs(f[1][0] / side - 1) < 0.05);
    world_close(&w);
}

static void test_tank_pbf(void **state)
{
    (void)state;
    tank_pbf("clamp");
}

/* The same tank with particle walls: the floor carries the weight within 1% (the boundary
 * particles' pushes, as the table's, by axis), the side walls ½ ρ0 g H² within 5%. */
static void test_tank_pbf_particles(void **state)
{
    (void)state;
    tank_pbf("particles");
}

/* FLIP (scenes/flip_hydrostatic.json, cells of 2 cm, water 0.4 m deep) with forces on its
 * walls, then with an 8 × 8 cm box held in the water (water around it in four boxes): the floor
 * carries ρ0 g H W and the side walls ½ ρ0 g H² within 0.5% (measured to 1e-5), the box its
 * buoyancy within 2% (measured 0.03%): a solid face takes its fluid cell's pressure plus half
 * the ghost pressure's step. */
static void test_flip_forces(void **state)
{
    (void)state;
    const char *sets[] = {"domain.boundary={\"type\": \"clamp\", \"forces\": {\"rate\": 100}}"};
    world w;
    world_open_file(&w, "scenes/flip_hydrostatic.json", sets, 1);
    for (int f = 0; f < 50; f++)
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    assert_int_equal(observe_collect(w.sim.obs, &w.sim), 0);
    double f[4][3], t[4][3], floor_ref = 1000 * 9.81 * 0.4 * 0.4, side = 0.5 * 1000 * 9.81 * 0.16;
    for (size_t k = 0; k < 4; k++)
        mean_load(w.sim.obs, k, 0.5, f[k], t[k]);
    print_message("flip tank: floor %.3f N/m (rho0 g H W %.3f), walls %.3f and %.3f N/m "
                  "(%.3f)\n", f[2][1], floor_ref, f[0][0], f[1][0], side);
    assert_true(fabs(-f[2][1] / floor_ref - 1) < 0.005);
    assert_true(fabs(-f[0][0] / side - 1) < 0.005 && fabs(f[1][0] / side - 1) < 0.005);
    world_close(&w);

    char fluids[2048] = "", *p = fluids;
    static const double box[4][4] = {{0, 0, 0.4, 0.155}, {0, 0.155, 0.155, 0.245},
                                     {0.245, 0.155, 0.4, 0.245}, {0, 0.245, 0.4, 0.4}};
    for (int k = 0; k < 4; k++)
        p += sprintf(p, "%s{\"solver\": \"flip\", \"box\": {\"min\": [%g, %g, 0], \"max\": "
                        "[%g, %g, 0]}, \"spacing\": 0.01, \"rest_density\": 1000}",
                     k ? ", " : "", box[k][0], box[k][1], box[k][2], box[k][3]);
    char json[4096];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 50, \"substeps\": 4, "
             "\"dimensions\": 2}, \"domain\": {\"min\": [0, 0, 0], \"max\": [0.4, 0.6, 0]}, "
             "\"fluids\": [%s], \"colliders\": [{\"name\": \"block\", \"box\": {\"min\": [0.16, "
             "0.16, 0], \"max\": [0.24, 0.24, 0]}, \"forces\": {\"rate\": 100}}]}",
             fluids);
    run_observed(&w, json, 50);
    double fb[3], tb[3], ref = 1000 * 9.81 * 0.08 * 0.08;
    mean_load(w.sim.obs, 0, 0.5, fb, tb);
    print_message("flip: the submerged box feels (%.4f, %.3f) N/m, buoyancy %.3f N/m: %+.2f%%\n",
                  fb[0], fb[1], ref, 100 * (fb[1] / ref - 1));
    assert_true(fabs(fb[1] / ref - 1) < 0.02 && fabs(fb[0]) < 0.01 * ref);
    world_close(&w);
}

/* The water around the submerged box: four fluid boxes of 0.01 m spacing filling a 0.4 m deep
 * 2D tank but for [0.15, 0.25]², each with the keys `keys` (the solver and its own). */
static void around_box(char *fluids, const char *keys)
{
    static const double box[4][4] = {{0, 0, 0.4, 0.15}, {0, 0.15, 0.15, 0.25},
                                     {0.25, 0.15, 0.4, 0.25}, {0, 0.25, 0.4, 0.4}};
    for (int k = 0; k < 4; k++)
        fluids += sprintf(fluids, "%s{\"box\": {\"min\": [%g, %g, 0], \"max\": [%g, %g, 0]}, "
                                  "\"spacing\": 0.01, %s}",
                          k ? ", " : "", box[k][0], box[k][1], box[k][2], box[k][3], keys);
}

/* The box's faces a hair inside the lattice lines the fluid's boxes end on, so that the water
 * starts at half a spacing from it, not a rounding below. */
#define SUBMERGED_BOX                                                                              \
    "\"colliders\": [{\"name\": \"block\", \"box\": {\"min\": [0.1500001, 0.1500001, 0], "      \
    "\"max\": [0.2499999, 0.2499999, 0]}, \"forces\": {\"rate\": 200}}]"

/* A 0.1 × 0.1 m box held 0.15 m above the floor of a 0.4 m deep 2D tank, water around it
 * (four fluid boxes), 2 s: its force is the buoyancy ρ0 g V upwards within 2%. */
static void buoyancy(const char *solver, const char *density)
{
    char keys[256], fluids[2048];
    snprintf(keys, sizeof keys, "\"solver\": \"%s\", \"viscosity\": 1, "
                                "\"artificial_viscosity\": 0.1 %s", solver, density);
    around_box(fluids, keys);
    char json[4096];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 100, "
             "\"dimensions\": 2, \"adaptive\": true}, \"domain\": {\"min\": [0, 0, 0], \"max\": "
             "[0.4, 0.6, 0], \"boundary\": {\"type\": \"particles\"}}, \"fluids\": [%s], "
             SUBMERGED_BOX "}",
             fluids);
    world w;
    run_observed(&w, json, 100);
    double f[3], t[3], ref = 1000 * 9.81 * 0.1 * 0.1;
    mean_load(w.sim.obs, 0, 1.3, f, t);
    print_message("%s: the submerged box feels (%.3f, %.3f) N/m, buoyancy %.3f N/m: %+.2f%%\n",
                  solver, f[0], f[1], ref, 100 * (f[1] / ref - 1));
    assert_true(fabs(f[1] / ref - 1) < 0.02);
    assert_true(fabs(f[0]) < 0.03 * ref);
    world_close(&w);
}

static void test_buoyancy_wcsph(void **state)
{
    (void)state;
    skip_if_quick();
    buoyancy("wcsph", ", \"density_method\": \"summation\"");
}

static void test_buoyancy_collapsed(void **state)
{
    (void)state;
    skip_if_quick();
    buoyancy("collapsed_sph", "");
}

/* DFSPH's tank and box as buoyancy()'s, every step sampled (rate above the step rate) and
 * the samples weighted by their steps, walls measured too, 5 s, over t > 1 s: the floor, less
 * the box's push, carries the water's weight within 1%, and the box feels its buoyancy within
 * 4.5%. DFSPH's box reads about 2.5% over, and by how much depends on the last bits: its mean
 * over half a second wanders between −1.7% and +5.2% as the water moves, and runs whose gravity
 * differs by 1e-6 (round-off only) read +1.1% to +4.0% over t in 1.3 .. 2 s (12 runs, two
 * builds: this test's old window, whose 2% bound the exact bits of one build met at +1.10%),
 * +1.6% to +3.5% over 1 .. 5 s (6 runs), the floor +0.3% to +0.7% (docs/scene.md); 6 more
 * (gravity × (1 ± 1, 2, 3e-6), session 24) +1.2% to +2.8% and the floor −0.08% to +1.38% (one
 * past this test's 1%), and with one least density iteration, as now, +1.5% to +3.2% and the
 * floor +0.17% to +0.73% (docs/benchmarks.md, session 24). DFSPH's
 * force changes from step to step with how far the step's density solve got, so a sample every
 * 5 ms (the steps ending at frames among them) is no mean: sampled so, the box read −0.85% on
 * PoCL and −12.3% on an H200. */
static void test_buoyancy_dfsph(void **state)
{
    (void)state;
    skip_if_quick();
    char fluids[2048];
    around_box(fluids, "\"solver\": \"dfsph\", \"viscosity\": 1, \"artificial_viscosity\": 0.1");
    char json[4096];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 250, "
             "\"dimensions\": 2, \"adaptive\": true}, \"domain\": {\"min\": [0, 0, 0], \"max\": "
             "[0.4, 0.6, 0], \"boundary\": {\"type\": \"particles\", \"forces\": {\"rate\": "
             "5000}}}, \"fluids\": [%s], \"colliders\": [{\"name\": \"block\", \"box\": "
             "{\"min\": [0.1500001, 0.1500001, 0], \"max\": [0.2499999, 0.2499999, 0]}, "
             "\"forces\": {\"rate\": 5000}}]}",
             fluids);
    world w;
    mz_observers *o = run_observed(&w, json, 250);
    assert_int_equal((long)o->taken.count, w.sim.step); /* every step */
    double box[3], floor[3] = {0, 0, 0}, ref = 1000 * 9.81 * 0.1 * 0.1;
    for (size_t k = 0; k < o->n_loads; k++) {
        const char *name = scene_load_ref(&w.scene, k).name;
        if (strcmp(name, "block") == 0)
            timed_load(o, k, 1.0, box);
        else if (strcmp(name, "y_min") == 0)
            timed_load(o, k, 1.0, floor);
    }
    double weight = build_particle_mass(&w.scene, &w.scene.fluids[0]) * (double)w.parts.n * 9.81;
    double rest = (-floor[1] - box[1]) / weight - 1;
    print_message("dfsph: the submerged box feels (%.3f, %.3f) N/m, buoyancy %.3f N/m: %+.2f%%; "
                  "the floor %.2f N/m, less the box's, against the water's weight %.2f: %+.2f%%\n",
                  box[0], box[1], ref, 100 * (box[1] / ref - 1), -floor[1], weight, 100 * rest);
    assert_true(fabs(box[1] / ref - 1) < 0.045);
    assert_true(fabs(box[0]) < 0.03 * ref);
    assert_true(fabs(rest) < 0.01);
    world_close(&w);
}

/* The mean force on the load named `name` from `since` on (0 if there is none such). */
static void mean_named(const world *w, const char *name, double since, double f[3])
{
    double t[3];
    for (size_t k = 0; k < w->sim.obs->n_loads; k++)
        if (strcmp(scene_load_ref(&w->scene, k).name, name) == 0) {
            mean_load(w->sim.obs, k, since, f, t);
            return;
        }
    fail_msg("no load %s", name);
}

/* PBF water around the same box (clamp walls, 8 substeps of 4 iterations, tensile_k 0), 3 s,
 * averaged over t > 1 s: the box feels its buoyancy within 2% (measured +0.86%; −10.8% before
 * colliders counted in PBF's density, the water at the box short of the solid's share of its
 * neighbours; +2.4% with the box as the plane through the nearest point) and sideways within
 * 3% (measured 0.27%), and the floor carries the water's weight and the box's buoyancy within
 * 1% of the weight (measured −0.18%). tensile_k 0: with s_corr (default 0.1) water at rest is
 * a soft solid, the pair repulsion holding shear, and in 4 s runs the box read −1.3%, −4.0% and
 * −9.6% at 8 × 4, 8 × 8 and 4 × 16 substeps × iterations, pushed sideways by 5 to 10% of its
 * buoyancy (before: +5.1%, +2.7%, +6.2%, sideways up to 6.5%). */
static void buoyancy_pbf(const char *walls, double *box_err, double *side, double *rest_err)
{
    char fluids[2048];
    around_box(fluids, "\"solver\": \"pbf\", \"tensile_k\": 0");
    char json[4096];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 150, "
             "\"substeps\": 8, \"iterations\": 4, \"dimensions\": 2}, \"domain\": {\"min\": "
             "[0, 0, 0], \"max\": [0.4, 0.6, 0], \"boundary\": {\"type\": \"%s\", \"forces\": "
             "{\"rate\": 100}}}, \"fluids\": [%s], " SUBMERGED_BOX "}",
             walls, fluids);
    world w;
    run_observed(&w, json, 150);
    double box[3], floor[3], ref = 1000 * 9.81 * 0.1 * 0.1;
    mean_named(&w, "block", 1.0, box);
    mean_named(&w, "y_min", 1.0, floor);
    double weight = build_particle_mass(&w.scene, &w.scene.fluids[0]) * (double)w.parts.n * 9.81;
    double rest = (-floor[1] - box[1]) / weight - 1;
    print_message("pbf, %s walls: the submerged box feels (%.3f, %.3f) N/m, buoyancy %.3f N/m: "
                  "%+.2f%%; the floor %.2f N/m, less the box's, against the water's weight %.2f: "
                  "%+.2f%%\n", walls, box[0], box[1], ref, 100 * (box[1] / ref - 1), -floor[1],
                  weight, 100 * rest);
    *box_err = box[1] / ref - 1;
    *side = box[0] / ref;
    *rest_err = rest;
    world_close(&w);
}

static void test_buoyancy_pbf(void **state)
{
    (void)state;
    double box, side, rest;
    buoyancy_pbf("clamp", &box, &side, &rest);
    assert_true(fabs(box) < 0.02);
    assert_true(fabs(side) < 0.03);
    assert_true(fabs(rest) < 0.01);
}

/* The same box with particle walls: the box as its boundary particles in the density, their
 * pushes its force. */
static void test_buoyancy_pbf_particles(void **state)
{
    (void)state;
    double box, side, rest;
    buoyancy_pbf("particles", &box, &side, &rest);
    assert_true(fabs(box) < 0.02);
    assert_true(fabs(side) < 0.03);
    assert_true(fabs(rest) < 0.01);
}

int main(void)
{
    test_filter_from_env("LOADS_TEST"); /* e.g. LOADS_TEST='*pbf*' */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_momentum_no_slip),
        cmocka_unit_test(test_momentum_free_slip),
        cmocka_unit_test(test_momentum_wall_function),
        cmocka_unit_test(test_momentum_dfsph),
        cmocka_unit_test(test_momentum_pbd),
        cmocka_unit_test(test_momentum_pbd_particles),
        cmocka_unit_test(test_tank_walls),
        cmocka_unit_test(test_tank_pbf),
        cmocka_unit_test(test_tank_pbf_particles),
        cmocka_unit_test(test_flip_forces),
        cmocka_unit_test(test_buoyancy_wcsph),
        cmocka_unit_test(test_buoyancy_collapsed),
        cmocka_unit_test(test_buoyancy_dfsph),
        cmocka_unit_test(test_buoyancy_pbf),
        cmocka_unit_test(test_buoyancy_pbf_particles),
    };
    return cmocka_run_group_tests(tests, open_device, close_device);
}
