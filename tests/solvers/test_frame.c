/* The domain's frame (domain.motion; src/solvers/frame.c, kernels/common/frame.clh) on PoCL:
 *   - a ballistic particle (the position-based solver's, and a lone WCSPH, collapsed SPH and
 *     DFSPH particle) in a turning domain (a table law, axis off the grid's, the domain
 *     already turning at t = 0) and in a sliding one (a sine law): its path in the domain's
 *     frame against the world's parabola carried into that frame by the law, converging at
 *     first order in the step;
 *   - FLIP in a 2D tank spinning at a steady rate without gravity: the water leaves the tank's
 *     floor for a ring along its walls (the centrifugal term on the particles, g2p), its mean
 *     r² that of the ring whose free surface is a circle.
 * WCSPH's frame is also checked against a tank of turning colliders and linear theory in
 * tests/solvers/test_motion.c (test_sloshing). */
#include "test_util.h"
#include "test_world.h"

#include <math.h>
#include <string.h>

static const double x0[3] = {1, 2, 0.5}, v0[3] = {0.3, 1.0, -0.2}, g[3] = {0, -9.81, 0};

/* v turned by angle about the unit axis k. */
static void turn(const double k[3], double angle, const double v[3], double out[3])
{
    double c = cos(angle), sn = sin(angle), kv = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    double kxv[3] = {k[1] * v[2] - k[2] * v[1], k[2] * v[0] - k[0] * v[2],
                     k[0] * v[1] - k[1] * v[0]};
    for (int a = 0; a < 3; a++)
        out[a] = v[a] * c + kxv[a] * sn + k[a] * kv * (1 - c);
}

/* The particle's path over 1 s (10 frames) with `solver`, at `steps` (simulation keys) in a
 * domain moving by `motion`: the largest distance from where the law puts the world's
 * parabola, and (in *off) its distance at the end from the path it would take in a still
 * domain. A lone SPH particle has no neighbours to push it: ballistic too. */
static double flight(const char *solver, const char *steps, const char *motion, double *off)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 10, \"frames\": 10, %s, "
             "\"gravity\": [0, -9.81, 0]}, \"domain\": {\"min\": [-10, -10, -10], \"max\": [10, "
             "10, 10], \"boundary\": {\"type\": \"clamp\"}, \"motion\": %s}, \"fluids\": "
             "[{\"solver\": \"%s\", \"positions\": [[1, 2, 0.5]], \"velocities\": "
             "[[0.3, 1.0, -0.2]], \"spacing\": 0.01%s}]}",
             steps, motion, solver,
             strcmp(solver, "ballistic") ? ", \"speed_of_sound\": 1" : ""); /* no CFL warning */
    world w;
    world_open(&w, json, NULL, 0);
    const mz_motion *m = &w.scene.domain.motion;
    bool rot = m->type == MZ_MOTION_ROTATION;
    double s0[3], vw[3];
    motion_eval(m, 0, s0);
    /* The world's velocity at t = 0: the domain's plus what the domain's own motion adds. */
    double r0[3], w0[3] = {s0[1] * m->unit[0], s0[1] * m->unit[1], s0[1] * m->unit[2]};
    for (int a = 0; a < 3; a++)
        r0[a] = x0[a] - m->center[a];
    double wxr[3] = {w0[1] * r0[2] - w0[2] * r0[1], w0[2] * r0[0] - w0[0] * r0[2],
                     w0[0] * r0[1] - w0[1] * r0[0]};
    for (int a = 0; a < 3; a++)
        vw[a] = v0[a] + (rot ? wxr[a] : s0[1] * m->unit[a]);
    double worst = 0;
    for (int f = 0; f < 10; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        world_read(&w);
        double t = w.sim.time, s[3], xw[3], want[3];
        motion_eval(m, t, s);
        for (int a = 0; a < 3; a++)
            xw[a] = x0[a] + vw[a] * t + 0.5 * g[a] * t * t;
        if (rot) { /* x' = c + R(θ)ᵀ (x − c) */
            double r[3] = {xw[0] - m->center[0], xw[1] - m->center[1], xw[2] - m->center[2]};
            turn(m->unit, -s[0], r, want);
            for (int a = 0; a < 3; a++)
                want[a] += m->center[a];
        } else {
            for (int a = 0; a < 3; a++)
                want[a] = xw[a] - s[0] * m->unit[a];
        }
        double e = 0, still = 0;
        for (int a = 0; a < 3; a++) {
            e += (w.pos[a] - want[a]) * (w.pos[a] - want[a]);
            double xs = x0[a] + v0[a] * t + 0.5 * g[a] * t * t;
            still += (w.pos[a] - xs) * (w.pos[a] - xs);
        }
        worst = fmax(worst, sqrt(e));
        *off = sqrt(still);
    }
    world_close(&w);
    return worst;
}

/* Each solver family's integrator, at a step and a quarter of it: within 3 mm of the path at
 * the shorter (5 mm for DFSPH's CFL steps, up to 1.1 ms), converging at first order (the error
 * shrinks by more than 2.5; 4 in theory). */
static void fly(const char *what, const char *motion)
{
    static const char *const solvers[] = {"ballistic", "wcsph", "collapsed_sph", "dfsph"};
    static const char *const steps[][2] = {
        {"\"substeps\": 100", "\"substeps\": 400"},
        {"\"substeps\": 100", "\"substeps\": 400"},
        {"\"substeps\": 100", "\"substeps\": 400"},
        {"\"adaptive\": true, \"cfl\": 0.1", "\"adaptive\": true, \"cfl\": 0.025"}};
    for (int k = 0; k < 4; k++) {
        double off, coarse = flight(solvers[k], steps[k][0], motion, &off);
        double fine = flight(solvers[k], steps[k][1], motion, &off);
        print_message("%s, %s: the path within %.2g m (%s) and %.2g m (%s) of the world's "
                      "parabola in the domain's frame; %.2f m from a still domain's path\n",
                      what, solvers[k], coarse, steps[k][0], fine, steps[k][1], off);
        assert_true(fine < (k == 3 ? 5e-3 : 3e-3));
        assert_true(coarse / fine > 2.5);
        assert_true(off > 0.5);
    }
}

/* Turning at 60 + 60 cos 3t deg/s about (0.3, 1, 0.2) through (0.5, 0, 0): θ = 60 t + 20 sin 3t
 * degrees, a table of 0.01 s rows. Measured: 5.9e-3 m and 2.0e-3 m (1.8e-3 with SPH's steps of
 * the same length), DFSPH 1.2e-2 m and 3.2e-3 m; 1.7 m off. */
static void test_ballistic_turning(void **state)
{
    (void)state;
    FILE *f = fopen(test_path("spin.csv"), "w");
    assert_non_null(f);
    fprintf(f, "time,angle\n");
    for (int k = 0; k <= 120; k++)
        fprintf(f, "%g,%.9f\n", 0.01 * k, 60 * 0.01 * k + 20 * sin(0.03 * k));
    fclose(f);
    char motion[256];
    snprintf(motion, sizeof motion,
             "{\"type\": \"rotation\", \"axis\": [0.3, 1, 0.2], \"center\": [0.5, 0, 0], "
             "\"table\": \"%s\"}", test_path("spin.csv"));
    fly("ballistic in a turning domain", motion);
}

/* Sliding ±0.3 m along (1, 0.5, -0.2) with period 0.7 s, moving at t = 0. Measured: 4.9e-3 m
 * and 1.2e-3 m, DFSPH 1.7e-2 m and 4.2e-3 m; 2.6 m off. */
static void test_ballistic_sliding(void **state)
{
    (void)state;
    fly("ballistic in a sliding domain", "{\"type\": \"translation\", \"direction\": [1, 0.5, "
                                         "-0.2], \"amplitude\": 0.3, \"period\": 0.7}");
}

/* FLIP, a 1 m square tank with water 0.6 m deep, without gravity, spinning at half a turn a
 * second about its centre from the start (a two-row table: the water starts at rest in the
 * tank, turning with it). In the tank's frame the centrifugal acceleration ω² r throws it
 * outwards, into a ring along the walls whose free surface is the circle r0 = sqrt(0.4/π) round
 * the centre (the frame's potential −ω² r²/2 constant along it) that leaves it its 0.6 m². The
 * water's mean r² (about the centre) goes from the floor's 0.1533 m² to the ring's
 * (1/6 − π r0⁴/2)/0.6 = 0.2353 m², the most any arrangement of it reaches: within 4% of that,
 * averaged over t = 6–10 s while it still sloshes a little under Coriolis (measured −2.0% at
 * cells of 2 cm, −2.4% at 1 cm). Without the turning frame's terms it stays 0.1533 (the water
 * keeps to the floor); the ring is there with the gauges too, which read less (FLIP's particles
 * leave holes after the spin-up, where the fraction drops below 0.5). */
static void test_flip_spinning_tank(void **state)
{
    (void)state;
    write_text(test_path("spin2.csv"), "time,angle\n0,0\n100,18000\n");
    char json[1024];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 10, \"frames\": 100, \"dimensions\": "
             "2, \"substeps\": 10, \"gravity\": [0, 0, 0]}, \"domain\": {\"min\": [0, 0, 0], "
             "\"max\": [1, 1, 0], \"boundary\": {\"type\": \"clamp\"}, \"motion\": {\"type\": "
             "\"rotation\", \"center\": [0.5, 0.5, 0], \"table\": \"%s\"}}, \"fluids\": "
             "[{\"solver\": \"flip\", \"box\": {\"min\": [0, 0, 0], \"max\": [1, 0.6, 0]}, "
             "\"spacing\": 0.02}]}",
             test_path("spin2.csv"));
    world w;
    world_open(&w, json, NULL, 0);
    size_t n = w.parts.n;
    double r2 = 0, start = 0, want = (1.0 / 6 - 0.16 / (2 * acos(-1.0))) / 0.6;
    for (int f = 0; f <= 100; f++) {
        if (f > 0)
            assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        if (f < 60 && f > 0)
            continue;
        world_read(&w);
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            double dx = w.pos[4 * i] - 0.5, dy = w.pos[4 * i + 1] - 0.5;
            sum += dx * dx + dy * dy;
        }
        if (f == 0)
            start = sum / (double)n;
        else
            r2 += sum / (double)n / 41;
    }
    print_message("flip, spinning tank: the water's mean r^2 %.4f m^2 at the start, %.4f m^2 "
                  "over 6-10 s against the ring's %.4f m^2 (%+.1f%%)\n", start, r2, want,
                  100 * (r2 / want - 1));
    assert_true(fabs(start - 0.1533) < 1e-3);
    assert_true(fabs(r2 / want - 1) < 0.04);
    world_close(&w);
}

/* Without a fluid: a rigid box in a sliding domain falls as gravity less the frame's
 * acceleration moves it (its centre within 5 mm of the parabola over 0.5 s at 1 ms steps:
 * measured 2.9 mm, the first-order step's error, as the ballistic particle's). (A moving scene
 * without a fluid crashed once, where probes need a fluid's spacing.) */
static void test_rigid_without_fluid(void **state)
{
    (void)state;
    static const char base[] =
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 10, \"frames\": 5, \"substeps\": 100, "
        "\"dimensions\": 2}, \"domain\": {\"min\": [-20, -20, 0], \"max\": [20, 20, 0], "
        "\"boundary\": {\"type\": \"clamp\"}, \"motion\": {\"type\": \"%s\", \"amplitude\": "
        "%s, \"period\": 1}}, \"rigids\": [{\"box\": {\"min\": [-0.3, -0.1, 0], \"max\": "
        "[0.3, 0.1, 0]}, \"spacing\": 0.05}]}";
    char json[1024];
    snprintf(json, sizeof json, base, "translation", "0.2");
    world w;
    world_open(&w, json, NULL, 0);
    const mz_motion *m = &w.scene.domain.motion;
    double s0[3];
    motion_eval(m, 0, s0);
    size_t n = w.parts.n;
    double worst = 0;
    for (int f = 0; f < 5; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        world_read(&w);
        double t = w.sim.time, s[3], cx = 0, cy = 0;
        motion_eval(m, t, s);
        for (size_t i = 0; i < n; i++)
            cx += w.pos[4 * i] / (double)n, cy += w.pos[4 * i + 1] / (double)n;
        /* the world's: x0 + ṡ(0) t along x, free fall along y; the domain's: less s(t) */
        double wx = s0[1] * t - s[0], wy = -0.5 * 9.81 * t * t;
        worst = fmax(worst, hypot(cx - wx, cy - wy));
    }
    print_message("rigid box in a sliding domain: its centre within %.2g m of the parabola\n",
                  worst);
    assert_true(worst < 5e-3);
    world_close(&w);
}

static const double rv0[3] = {0.3, 4.0, -0.2};

/* A rigid box (0.4 × 0.2 × 0.1 m, 64 particles) thrown from rest in the world, at `substeps` a
 * 0.1 s frame over 1 s, in a domain turning by `motion` (at rest at t = 0, so the body has no
 * spin in the world either). In the world every particle follows the body's parabola; carried
 * into the domain's frame, x' = c + R(θ)ᵀ (x − c). Returns the centre's largest distance from
 * that; *spin: the particles' offsets from the centre against R(θ)ᵀ r0 (the body counter-
 * rotating in the frame), *still: the same against r0 (a body that turned with the tank). */
static double rigid_flight(int substeps, const char *motion, double *spin, double *still)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 10, \"frames\": 10, \"substeps\": "
             "%d, \"gravity\": [0, -9.81, 0]}, \"domain\": {\"min\": [-10, -10, -10], \"max\": "
             "[10, 10, 10], \"boundary\": {\"type\": \"clamp\"}, \"motion\": %s}, \"rigids\": "
             "[{\"box\": {\"min\": [0.4, 0.4, 0.25], \"max\": [0.8, 0.6, 0.35]}, \"spacing\": "
             "0.05, \"velocity\": [0.3, 4.0, -0.2]}]}",
             substeps, motion);
    world w;
    world_open(&w, json, NULL, 0);
    const mz_motion *m = &w.scene.domain.motion;
    size_t n = w.parts.n;
    double *r0 = xcalloc(3 * n, sizeof *r0), c0[3] = {0, 0, 0};
    world_read(&w);
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            r0[3 * w.id[i] + a] = w.pos[4 * i + a], c0[a] += w.pos[4 * i + a] / (double)n;
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            r0[3 * i + a] -= c0[a];
    double worst = 0;
    *spin = *still = 0;
    for (int f = 0; f < 10; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        world_read(&w);
        double t = w.sim.time, s[3], r[3], want[3], c[3] = {0, 0, 0};
        motion_eval(m, t, s);
        for (int a = 0; a < 3; a++)
            r[a] = c0[a] + rv0[a] * t + 0.5 * g[a] * t * t - m->center[a];
        turn(m->unit, -s[0], r, want);
        for (size_t i = 0; i < n; i++)
            for (int a = 0; a < 3; a++)
                c[a] += w.pos[4 * i + a] / (double)n;
        worst = fmax(worst, sqrt(pow(c[0] - want[0] - m->center[0], 2) +
                                 pow(c[1] - want[1] - m->center[1], 2) +
                                 pow(c[2] - want[2] - m->center[2], 2)));
        double e = 0, e_still = 0;
        for (size_t i = 0; i < n; i++) {
            const double *ri = &r0[3 * w.id[i]];
            double ro[3];
            turn(m->unit, -s[0], ri, ro);
            for (int a = 0; a < 3; a++) {
                double d = w.pos[4 * i + a] - c[a];
                e = fmax(e, fabs(d - ro[a]));
                e_still = fmax(e_still, fabs(d - ri[a]));
            }
        }
        *spin = fmax(*spin, e);
        *still = fmax(*still, e_still);
    }
    free(r0);
    world_close(&w);
    return worst;
}

/* A free rigid body in a domain turning about (0.3, 1, 0.2) through (0.5, 0, 0) by a ramped
 * sine (30°, period 1 s, ramp 0.5 s: up to 3.4 rad/s and 21 rad/s²): its centre and its
 * orientation follow the world's motion carried into the frame, converging at first order in
 * the step (4 ms to 1 ms). Measured: the centre 2.1e-2 and 7.5e-3 m, the offsets 1.8e-4 and
 * 6.2e-5 m; 0.092 m from a body keeping its orientation in the frame, as it did when only its
 * centre felt the frame. Shorter steps do worse: a rigid body's centre drifts by float
 * rounding in the step's velocity, (c* − c)/dt (nearly still domain, 1 s: 2e-3, 5e-2 and 0.48 m
 * at 1, 0.5 and 0.125 ms), whether the domain turns or not. */
static void test_rigid_turning(void **state)
{
    (void)state;
    static const char motion[] = "{\"type\": \"rotation\", \"axis\": [0.3, 1, 0.2], \"center\": "
                                 "[0.5, 0, 0], \"amplitude\": 30, \"period\": 1, \"ramp\": 0.5}";
    double turn_c, turn_f, still;
    double coarse = rigid_flight(25, motion, &turn_c, &still);
    double fine = rigid_flight(100, motion, &turn_f, &still);
    print_message("rigid box in a turning domain: its centre within %.2g m (4 ms steps) and "
                  "%.2g m (1 ms) of the world's parabola in the domain's frame; its particles' "
                  "offsets within %.2g m and %.2g m of the counter-rotated rest shape, %.2g m "
                  "from the unturned one\n",
                  coarse, fine, turn_c, turn_f, still);
    assert_true(fine < 1e-2);
    assert_true(coarse / fine > 2.5);
    assert_true(turn_f < 2e-4);
    assert_true(turn_c / turn_f > 2);
    assert_true(still > 0.02);
}

/* x'' of a frictionless body on the floor of a tank rolling by θ(t) about z through ctr, the
 * body's centre at height y (in the tank's frame): gravity turned by −θ, the Euler and
 * centrifugal terms along the floor (Coriolis is across it). */
static double slide_accel(const mz_motion *m, double t, double x, double y, const double ctr[3])
{
    double s[3];
    motion_eval(m, t, s);
    return -9.81 * sin(s[0]) + s[2] * (y - ctr[1]) + s[1] * s[1] * (x - ctr[0]);
}

/* A 2D rigid box (0.2 × 0.06 m) lying on the floor of a tank (1 × 0.5 m, clamp walls) that
 * rolls ±5° about its centre with a period of 2 s: it stays on the floor, flat (a free body
 * would counter-rotate by the 5°: the floor's clamp turns it back), and slides along it as the
 * frictionless floor tilts: its centre's x against the host's integration of slide_accel (RK4
 * at 0.1 ms). Measured: it slides 0.171 m, within 4.4e-5 m; flat within 0.0038°. */
static void test_rigid_rolling_tank(void **state)
{
    (void)state;
    static const char json[] =
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 20, \"frames\": 60, \"substeps\": 10, "
        "\"iterations\": 4, \"dimensions\": 2}, \"domain\": {\"min\": [-0.5, 0, 0], \"max\": "
        "[0.5, 0.5, 0], \"boundary\": {\"type\": \"clamp\"}, \"motion\": {\"type\": "
        "\"rotation\", \"amplitude\": 5, \"period\": 2, \"ramp\": 1}}, \"rigids\": [{\"box\": "
        "{\"min\": [-0.1, 0, 0], \"max\": [0.1, 0.06, 0]}, \"spacing\": 0.02}]}";
    world w;
    world_open(&w, json, NULL, 0);
    const mz_motion *m = &w.scene.domain.motion;
    size_t n = w.parts.n;
    double x = 0, u = 0, t = 0, h = 1e-4, worst = 0, low = 1, high = 0, tilt = 0, far = 0;
    for (int f = 0; f < 60; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
        world_read(&w);
        double cx = 0, cy = 0;
        for (size_t i = 0; i < n; i++)
            cx += w.pos[4 * i] / (double)n, cy += w.pos[4 * i + 1] / (double)n;
        double cross = 0, dot = 0; /* the body's angle: Σ r0 × d against Σ r0 · d */
        for (size_t i = 0; i < n; i++) {
            double rx = w.parts.pos[4 * w.id[i]], ry = w.parts.pos[4 * w.id[i] + 1] - 0.03;
            double dx = w.pos[4 * i] - cx, dy = w.pos[4 * i + 1] - cy;
            cross += rx * dy - ry * dx;
            dot += rx * dx + ry * dy;
        }
        for (; t < w.sim.time - 0.5 * h; t += h) { /* RK4 */
            double k1x = u, k1u = slide_accel(m, t, x, 0.03, m->center);
            double k2x = u + 0.5 * h * k1u, k2u = slide_accel(m, t + 0.5 * h, x + 0.5 * h * k1x,
                                                              0.03, m->center);
            double k3x = u + 0.5 * h * k2u, k3u = slide_accel(m, t + 0.5 * h, x + 0.5 * h * k2x,
                                                              0.03, m->center);
            double k4x = u + h * k3u, k4u = slide_accel(m, t + h, x + h * k3x, 0.03, m->center);
            x += h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x);
            u += h / 6 * (k1u + 2 * k2u + 2 * k3u + k4u);
        }
        worst = fmax(worst, fabs(cx - x));
        far = fmax(far, fabs(x));
        low = fmin(low, cy);
        high = fmax(high, cy);
        tilt = fmax(tilt, fabs(atan2(cross, dot)));
    }
    print_message("rigid box on a rolling tank's floor: slides up to %.3f m, its centre within "
                  "%.2g m of the frictionless slide; its height %.4f to %.4f m (0.03 at rest), "
                  "tilted at most %.2g degrees\n",
                  far, worst, low, high, tilt * 180 / acos(-1.0));
    assert_true(far > 0.05);
    assert_true(worst < 0.05 * far);
    assert_true(low > 0.029 && high < 0.031);
    assert_true(tilt < 0.5 * acos(-1.0) / 180);
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ballistic_turning),
        cmocka_unit_test(test_ballistic_sliding),
        cmocka_unit_test(test_flip_spinning_tank),
        cmocka_unit_test(test_rigid_without_fluid),
        cmocka_unit_test(test_rigid_turning),
        cmocka_unit_test(test_rigid_rolling_tank),
    };
    return cmocka_run_group_tests(tests, open_device, close_device);
}
