/* The position-based stage list on PoCL against analytic answers. */
#include "test_util.h"
#include "test_world.h"
#include "solvers/health.h"

#include <math.h>

/* Symplectic Euler from rest-free start: y_n = y0 + v0·n·dt − g·dt²·n(n+1)/2, exactly. */
static void test_free_fall(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 4},"
                   "\"domain\": {\"min\": [-50,-50,-50], \"max\": [50,50,50]},"
                   "\"fluids\": [{\"positions\": [[1,10,-2]], \"velocities\": [[0.5,3,0]],"
                   " \"spacing\": 0.02}]}", NULL, 0);
    double dt = scene_substep_dt(&w.scene), g = 9.81, worst_x = 0, worst_v = 0;
    for (int n = 1; n <= 240; n++) {
        assert_int_equal(sim_substep(&w.sim, dt), 0);
        if (n % 8)
            continue;
        world_read(&w);
        double y = 10.0 + 3.0 * n * dt - g * dt * dt * n * (n + 1) / 2.0;
        double x = 1.0 + 0.5 * n * dt;
        /* Relative to the exact position; the velocity relative to its exact value. */
        double ey = fabs(w.pos[1] - y) / fabs(y), ex = fabs(w.pos[0] - x) / fabs(x);
        double vy = 3.0 - g * dt * n;
        double ev = fabs(w.vel[1] - vy) / fmax(fabs(vy), 1.0);
        worst_x = fmax(worst_x, fmax(ey, ex));
        worst_v = fmax(worst_v, ev);
        if (ey >= 1e-5 || ex >= 1e-5 || ev >= 1e-5)
            fail_msg("step %d: y %.9g want %.9g (rel %.2g), x %.9g want %.9g (rel %.2g), "
                     "vy %.9g want %.9g (rel %.2g)", n, w.pos[1], y, ey, w.pos[0], x, ex,
                     w.vel[1], vy, ev);
        assert_true(w.pos[2] == -2.0f && w.vel[2] == 0.0f);
    }
    print_message("free fall, 240 steps: worst relative error %.2g in position, %.2g in "
                  "velocity\n", worst_x, worst_v);
    world_close(&w);
}

/* Penalty floor: a particle set down touching the floor sinks to the spring's balance
 * d = g/k and stays there for 10 s, never leaving [r − 2g/k, r]. */
static void test_resting_on_penalty_floor(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 4},"
                   "\"domain\": {\"min\": [0,0,0], \"max\": [1,1,1], \"boundary\":"
                   " {\"type\": \"penalty\", \"stiffness\": 10000, \"damping\": 256}},"
                   "\"fluids\": [{\"positions\": [[0.5,0.01,0.5]], \"spacing\": 0.02}]}", NULL, 0);
    double r = 0.01, sag = 9.81 / 10000.0, dt = scene_substep_dt(&w.scene);
    for (int frame = 1; frame <= 600; frame++) {
        for (int k = 0; k < 4; k++)
            assert_int_equal(sim_substep(&w.sim, dt), 0);
        world_read(&w);
        double y = w.pos[1];
        if (y < r - 2 * sag || y > r + 1e-6)
            fail_msg("frame %d: y = %.7f outside [%.7f, %.7f]", frame, y, r - 2 * sag, r);
        if (frame > 60 && (fabs(y - (r - sag)) > 0.01 * sag || fabs(w.vel[1]) > 1e-4))
            fail_msg("frame %d: y = %.7f, v = %.3g; balance at %.7f", frame, y, w.vel[1],
                     r - sag);
    }
    world_close(&w);
}

/* Thrown at 36 m/s: the walls' acceleration cap cannot stop it in time, and the domain clamp
 * behind the walls still keeps it inside, every substep. */
static void test_fast_particle_stays_inside(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 2},"
                   "\"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                   "\"fluids\": [{\"positions\": [[0.5,0.9,0.5]], \"velocities\": [[20,-30,0]],"
                   " \"spacing\": 0.02}]}", NULL, 0);
    double dt = scene_substep_dt(&w.scene);
    for (int step = 0; step < 1200; step++) {
        assert_int_equal(sim_substep(&w.sim, dt), 0);
        world_read(&w);
        for (int a = 0; a < 3; a++)
            if (w.pos[a] < 0.0f || w.pos[a] > 1.0f)
                fail_msg("step %d: axis %d at %g left the domain", step, a, w.pos[a]);
    }
    world_close(&w);
}

/* A wall stops a particle within its radius r only if v^2 < 2·acceleration_limit·r; here
 * r = 0.05 m, so up to 4.5 m/s. Dropped at 2.6 m/s, it never reaches the domain clamp and comes
 * to rest on the floor at the spring's balance. */
static void test_drop_settles(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 4},"
                   "\"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                   "\"fluids\": [{\"positions\": [[0.5,0.35,0.5]], \"velocities\": [[0.5,-1,0]],"
                   " \"spacing\": 0.1}]}", NULL, 0);
    double dt = scene_substep_dt(&w.scene), lowest = 1;
    for (int step = 0; step < 2400; step++) {
        assert_int_equal(sim_substep(&w.sim, dt), 0);
        world_read(&w);
        lowest = fmin(lowest, w.pos[1]);
    }
    print_message("drop: deepest %.4f m into the wall's reach of 0.05 m\n", 0.05 - lowest);
    assert_true(lowest > 0.0);
    if (fabs(w.pos[1] - (0.05 - 9.81e-4)) > 1e-5 || fabs(w.vel[1]) > 1e-4) /* walls have no friction */
        fail_msg("rests at %g %g %g, v %g %g %g", w.pos[0], w.pos[1], w.pos[2], w.vel[0],
                 w.vel[1], w.vel[2]);
    world_close(&w);
}

/* Clamp walls: positions projected to the radius, velocity into the wall removed. */
static void test_clamp_floor(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1],"
                   " \"boundary\": {\"type\": \"clamp\"}},"
                   "\"fluids\": [{\"positions\": [[0.5,0.5,0.5]], \"spacing\": 0.1}]}", NULL, 0);
    double dt = scene_substep_dt(&w.scene);
    for (int step = 0; step < 240; step++)
        assert_int_equal(sim_substep(&w.sim, dt), 0);
    world_read(&w);
    assert_true(w.pos[1] == 0.05f);
    assert_true(fabs(w.vel[1]) < 1e-6);
    world_close(&w);
}

/* 2D: z and vz stay exactly 0 even with gravity along z. */
static void test_planar(void **state)
{
    (void)state;
    world w;
    world_open(&w, "{\"mizu_scene\": 1, \"simulation\": {\"dimensions\": 2,"
                   " \"gravity\": [0, -9.81, -5]},"
                   "\"domain\": {\"min\": [0,0,0], \"max\": [1,1,0]},"
                   "\"fluids\": [{\"box\": {\"min\": [0.2,0.2,0], \"max\": [0.4,0.4,0]},"
                   " \"spacing\": 0.05, \"velocity\": [1, 0, 3]}]}", NULL, 0);
    assert_int_equal(w.parts.n, 16);
    double dt = scene_substep_dt(&w.scene);
    for (int step = 0; step < 100; step++)
        assert_int_equal(sim_substep(&w.sim, dt), 0);
    world_read(&w);
    for (size_t i = 0; i < w.parts.n; i++)
        assert_true(w.pos[4 * i + 2] == 0.0f && w.vel[4 * i + 2] == 0.0f);
    world_close(&w);
}

/* The blow-up check compares speeds, not their squares: 1e31 m/s squared is no float, and a
 * speed just under its bound must pass while one just over fails. */
static void test_speed_bound_without_overflow(void **state)
{
    (void)state;
    static const struct {
        const char *velocity;
        int expected;
    } cases[] = {{"[6e30, 8e30, 0]", 0}, {"[8e30, 8e30, 0]", -1}, {"[0, 0, 1e30]", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"mizu_scene\": 1, \"simulation\": {\"max_speed\": 1.1e31},"
                 "\"domain\": {\"min\": [-1,-1,-1], \"max\": [1,1,1]},"
                 "\"fluids\": [{\"positions\": [[0,0,0]], \"velocities\": [%s],"
                 " \"spacing\": 0.02}]}", cases[i].velocity);
        world w;
        world_open(&w, json, NULL, 0);
        mz_health h;
        assert_int_equal(health_init(&h, &w.sim, health_speed_bound(&w.scene, &w.parts)), 0);
        assert_true(health_enqueue(&h, &w.sim, 0));
        if (health_result(&h, &w.sim) != cases[i].expected)
            fail_msg("velocity %s against the bound 1.1e31 m/s: expected %s", cases[i].velocity,
                     cases[i].expected ? "a blow-up" : "no blow-up");
        health_release(&h);
        world_close(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_fall),        cmocka_unit_test(test_resting_on_penalty_floor),
        cmocka_unit_test(test_fast_particle_stays_inside), cmocka_unit_test(test_drop_settles),
        cmocka_unit_test(test_clamp_floor),
        cmocka_unit_test(test_planar),
        cmocka_unit_test(test_speed_bound_without_overflow),
    };
    return cmocka_run_group_tests_name("physics", tests, open_device, close_device);
}
