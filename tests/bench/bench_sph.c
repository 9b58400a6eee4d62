/* make bench: SPH throughput. A 3D dam break (water cube in the corner of a tank, boundary
 * particles, fixed CFL step) at 10^4 and 10^5 particles, and 10^6 on a GPU (BENCH_SPH_MAX
 * overrides), for WCSPH and collapsed SPH: particle-steps per second over timed steps after a
 * warm-up frame, with device time per stage. Not a test: prints a table, exits 0. */
#include "bench/bench_frames.h"
#include "build/build.h"
#include "util/clock.h"
#include "device/cl_ctx.h"
#include "scene/scene.h"
#include "solvers/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bench(mz_cl *cl, const char *solver, double spacing, int steps)
{
    char json[1024];
    /* A 0.4 m water cube in a 1.6 x 0.8 x 0.6 m tank; the spacing sets the particle count. */
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"adaptive\": true},"
             " \"domain\": {\"min\": [0,0,0], \"max\": [1.6,0.8,0.6],"
             "   \"boundary\": {\"type\": \"particles\"}},"
             " \"fluids\": [{\"solver\": \"%s\", \"box\": {\"min\": [0,0,0],"
             "   \"max\": [0.4,0.4,0.4]}, \"spacing\": %g, \"artificial_viscosity\": 0.05}]}",
             solver, spacing);
    mz_scene s;
    mz_particles p;
    mz_sim sim;
    if (bench_open(cl, json, &s, &p, &sim) != 0)
        return -1;
    double dt = scene_cfl(&s) * scene_support_radius(&s) / scene_speed_of_sound(&s);
    for (int k = 0; k < 10; k++) /* warm-up */
        sim_substep(&sim, dt);
    clFinish(cl->queue);
    sim_collect_profile(&sim);
    memset(sim.stages, 0, sizeof sim.stages);
    double t0 = now_seconds();
    for (int k = 0; k < steps; k++) {
        if (sim_substep(&sim, dt) != 0)
            return -1;
        if (cl->profiling) {
            clFinish(cl->queue);
            sim_collect_profile(&sim);
        }
    }
    clFinish(cl->queue);
    double wall = now_seconds() - t0;
    printf("%-14s %9zu %7d %9.2f %11.3g", solver, p.n, steps, 1e3 * wall / steps,
           (double)p.n * steps / wall);
    for (int i = 0; sim.solver->stages[i]; i++)
        printf(" %10.2f", 1e9 * sim.stages[i].seconds / ((double)p.n * steps));
    printf("\n");
    sim_release(&sim);
    particles_free(&p);
    scene_free(&s);
    return 0;
}

int main(void)
{
    mz_cl cl;
    if (mz_cl_open(&cl, NULL, true) != 0)
        return 1;
    bool gpu = (cl.type & CL_DEVICE_TYPE_GPU) != 0;
    const char *env = getenv("BENCH_SPH_MAX");
    double max_n = env ? atof(env) : gpu ? 1e6 : 1e5;
    printf("SPH: 3D dam break with wall particles, fixed CFL step; device %s\n", cl.device_name);
    printf("(ms/step and particle-steps/s by wall clock with per-stage event timing; stage "
           "columns in ns per particle-step)\n");
    printf("%-14s %9s %7s %9s %11s %10s %10s %10s %10s\n", "solver", "particles", "steps",
           "ms/step", "p-steps/s", "grid", "density", "forces", "step size");
    /* 0.4 m cube: 10^4 at spacing 0.0186, 10^5 at 0.0086, 10^6 at 0.004 */
    const double spacing[] = {0.0186, 0.0086, 0.004};
    const double count[] = {1e4, 1e5, 1e6};
    for (int k = 0; k < 3; k++) {
        if (count[k] > max_n * 1.01)
            break;
        int steps = count[k] >= 1e6 ? (gpu ? 50 : 5) : count[k] >= 1e5 ? (gpu ? 100 : 20) : 100;
        if (bench(&cl, "wcsph", spacing[k], steps) || bench(&cl, "collapsed_sph", spacing[k], steps))
            return 1;
    }
    mz_cl_close(&cl);
    return 0;
}
