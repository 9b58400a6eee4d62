/* make bench: FLIP throughput. A 3D dam break: a cube of n^3 water particles (spacing 1 cm)
 * against the wall of a tank 4n x 2n x n spacings, cells of 2 spacings (as many grid cells as
 * particles), steps short enough that the fastest particle crosses half a cell. For each size,
 * red-black SOR (the default), multigrid-preconditioned CG and the Jacobi baseline
 * (BENCH_FLIP_SOLVERS=rbgs,mgpcg picks and orders them), each to the default tolerance: time
 * per step, split into grid (sort), P2G, projection and G2P (device time), and the
 * projection's sweeps (CG iterations for mgpcg): the first step's (from zero pressure) and the
 * mean over the timed steps (warm-started). n^3 ~ 10^5 on the CPU, 10^6 and 10^7 on a GPU;
 * BENCH_FLIP_MAX overrides the largest count, BENCH_FLIP_STEPS the timed steps. Not a test:
 * prints a table, exits 0. */
#include "bench/bench_frames.h"
#include "build/build.h"
#include "util/clock.h"
#include "device/cl_ctx.h"
#include "scene/scene.h"
#include "solvers/flip/flip.h"
#include "solvers/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `steps` more steps as a run takes them: on a queue without profiling, drained once at the
 * end (the profiled steps drain the queue every step and time every launch). Seconds, or -1. */
static double run_seconds(mz_cl *cl, mz_sim *sim, double dt, int steps)
{
    cl_int err;
    cl_command_queue plain = clCreateCommandQueue(cl->ctx, cl->device, 0, &err), profiled;
    if (!cl_ok(err, "clCreateCommandQueue(unprofiled)"))
        return -1;
    profiled = cl->queue;
    cl->queue = plain;
    cl->profiling = false;
    double t0 = now_seconds();
    int rc = 0;
    for (int k = 0; k < steps && rc == 0; k++)
        rc = sim_substep(sim, dt);
    clFinish(plain);
    double t = now_seconds() - t0;
    cl->queue = profiled;
    cl->profiling = true;
    clReleaseCommandQueue(plain);
    return rc == 0 ? t : -1;
}

static int bench(mz_cl *cl, int res, const char *solver, int warm, int steps, int max_sweeps)
{
    double a = 0.01 * res, v = sqrt(2 * 9.81 * a), cell = 0.02;
    int substeps = (int)ceil(2 * v / 60 / cell); /* half a cell per step at the free-fall speed */
    char json[1536];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": %d,"
             "   \"pressure_solver\": \"%s\", \"pressure_iterations\": %d},"
             " \"domain\": {\"min\": [0,0,0], \"max\": [%.17g,%.17g,%.17g]},"
             " \"fluids\": [{\"solver\": \"flip\", \"box\": {\"min\": [0,0,0],"
             "   \"max\": [%.17g,%.17g,%.17g]}, \"spacing\": 0.01}]}",
             substeps, solver, max_sweeps, 4 * a, 2 * a, a, a, a, a);
    mz_scene s;
    mz_particles p;
    mz_sim sim;
    if (bench_open(cl, json, &s, &p, &sim) != 0)
        return -1;
    double dt = scene_substep_dt(&s);
    for (int k = 0; k < warm; k++)
        if (sim_substep(&sim, dt) != 0)
            return -1;
    clFinish(cl->queue);
    sim_collect_profile(&sim);
    memset(sim.stages, 0, sizeof sim.stages);
    flip_stats before = *flip_get_stats(&sim);
    double t0 = now_seconds();
    for (int k = 0; k < steps; k++) {
        if (sim_substep(&sim, dt) != 0)
            return -1;
        clFinish(cl->queue);
        sim_collect_profile(&sim);
    }
    double wall = now_seconds() - t0;
    const flip_stats *st = flip_get_stats(&sim);
    flip_stats profiled = *st;
    double run = run_seconds(cl, &sim, dt, steps);
    if (run < 0)
        return -1;
    const flip_grid *g = &((flip_view[]){flip_get_view(&sim)})[0].grid;
    long cells = (long)g->cells.s[0] * g->cells.s[1] * g->cells.s[2];
    printf("%-7s %9zu %9ld %5d %5d %9.1f %9.1f", solver, p.n, cells, substeps, steps,
           1e3 * wall / steps, 1e3 * run / steps);
    for (int i = 0; sim.solver->stages[i]; i++)
        printf(" %9.2f", 1e3 * sim.stages[i].seconds / steps);
    long capped = profiled.capped - before.capped;
    printf(" %7d %9.1f %7ld %10.2g %8.1f\n", profiled.first_iterations,
           (double)(profiled.iterations - before.iterations) /
               (profiled.projections - before.projections),
           capped, profiled.last_residual, (double)sim.stages[2].launches / steps);
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
    const char *env = getenv("BENCH_FLIP_MAX"), *env_steps = getenv("BENCH_FLIP_STEPS");
    const char *solvers = getenv("BENCH_FLIP_SOLVERS");
    if (!solvers || !*solvers)
        solvers = "rbgs,mgpcg,jacobi";
    double max_n = env ? atof(env) : gpu ? 1.1e7 : 1.1e5;
    printf("FLIP dam break: n^3 particles, 2 spacings a cell, pressure tolerance 1e-4; device %s\n",
           cl.device_name);
    printf("(ms/step by wall clock with the queue drained every step; run: the same number of "
           "steps more by wall clock on a queue without profiling, drained once, as a run takes "
           "them; stage columns: device ms per "
           "step; sweeps: the first step's (cold) and the timed steps' mean (warm start); capped: "
           "timed steps that stopped at the sweep limit; residual: the last step's; launches: the "
           "projection's kernel launches a step)\n");
    printf("%-7s %9s %9s %5s %5s %9s %9s", "solver", "particles", "cells", "subst", "steps",
           "ms/step", "run");
    for (int i = 0; mz_solver_flip.stages[i]; i++)
        printf(" %9s", mz_solver_flip.stages[i]);
    printf(" %7s %9s %7s %10s %8s\n", "first", "sweeps", "capped", "residual", "launches");
    const int res[] = {46, 100, 215}; /* 9.7e4, 1e6, 9.9e6 particles */
    for (int k = 0; k < 3; k++) {
        if ((double)res[k] * res[k] * res[k] > max_n)
            break;
        int steps = env_steps ? atoi(env_steps) : gpu ? 20 : k == 0 ? 10 : 2;
        /* Jacobi needs sweeps in proportion to the square of the size: capped, or a 10^6 CPU
         * row would take an hour. The others' cap: the scene's default 10,000. */
        for (const char *at = solvers; *at;) {
            size_t len = strcspn(at, ",");
            char name[16];
            snprintf(name, sizeof name, "%.*s", (int)len, at);
            at += len + (at[len] == ',');
            int cap = strcmp(name, "jacobi") ? 10000 : gpu ? 20000 : 5000;
            if (bench(&cl, res[k], name, 4, steps, cap))
                return 1;
        }
    }
    mz_cl_close(&cl);
    return 0;
}
