/* What the benchmarks share: a scene from JSON up to its simulation (bench_open); and the frame
 * loop of the position-based ones (bench_frames): load a scene from JSON, run `warm`
 * frames, then time `frames` frames with the queue drained each frame, and print the row's
 * numbers after `label`: particles (and constraints, when asked), frames, ms/frame, frames/s, particle-substeps/s and device
 * ns per particle-substep for each stage. */
#ifndef MZ_BENCH_FRAMES_H
#define MZ_BENCH_FRAMES_H
#include "build/build.h"
#include "util/clock.h"
#include "device/cl_ctx.h"
#include "scene/scene.h"
#include "solvers/sim.h"

#include <stdio.h>
#include <string.h>

/* A benchmark's scene from JSON, its particles and its simulation on cl. 0, or -1 after
 * reporting. */
static inline int bench_open(mz_cl *cl, const char *json, mz_scene *s, mz_particles *p,
                             mz_sim *sim)
{
    mz_diag d = {0};
    if (scene_load_text(json, strlen(json), "bench.json", NULL, 0, s, &d) != 0) {
        diag_print(&d, "bench scene");
        return -1;
    }
    build_particles(s, p);
    return sim_create(sim, cl, s, p);
}

static inline int bench_frames(mz_cl *cl, const char *json, const char *label,
                               bool constraints, int warm, int frames)
{
    mz_scene s;
    mz_particles p;
    mz_sim sim;
    if (bench_open(cl, json, &s, &p, &sim) != 0)
        return -1;
    double frame_dt = scene_frame_dt(&s);
    for (int k = 0; k < warm; k++)
        if (sim_advance_frame(&sim, frame_dt) != 0)
            return -1;
    clFinish(cl->queue);
    sim_collect_profile(&sim);
    memset(sim.stages, 0, sizeof sim.stages);
    double t0 = now_seconds();
    for (int k = 0; k < frames; k++) {
        if (sim_advance_frame(&sim, frame_dt) != 0)
            return -1;
        clFinish(cl->queue);
        sim_collect_profile(&sim);
    }
    double wall = now_seconds() - t0;
    double substeps = (double)frames * s.sim.substeps;
    printf("%s %9zu", label, p.n);
    if (constraints)
        printf(" %10zu", p.n_constraints);
    printf(" %6d %10.2f %9.2f %11.3g", frames, 1e3 * wall / frames, frames / wall,
           (double)p.n * substeps / wall);
    for (int i = 0; sim.solver->stages[i]; i++)
        printf(" %9.2f", 1e9 * sim.stages[i].seconds / ((double)p.n * substeps));
    printf("\n");
    sim_release(&sim);
    particles_free(&p);
    scene_free(&s);
    return 0;
}

#endif
