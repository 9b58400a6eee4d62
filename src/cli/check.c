/* `mizu check`: validate a scene and print what it makes, the device memory it needs and the
 * output it will write; a scene too big for the chosen device fails the check. */
#include "cli/run.h"

#include "build/build.h"
#include "scene/bodies.h"
#include "scene/fields.h"
#include "scene/scene.h"
#include "solvers/sim.h"
#include "solvers/sph/neighbour_list.h"
#include "util/err.h"
#include "util/hostmem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A moving collider's or the domain's law over the run: its range, its fastest speed and
 * acceleration (sampled every thousandth of the run, and at the table's rows). */
static void print_motion(const mz_scene *s, size_t c)
{
    const mz_motion *m = c < s->n_colliders ? &s->colliders[c].motion : &s->domain.motion;
    bool turn = m->type == MZ_MOTION_ROTATION;
    double end = s->sim.frames / s->sim.fps, lo = 0, hi = 0, v = 0, a = 0, x[3];
    for (int k = 0; k <= 1000; k++) {
        motion_eval(m, end * k / 1000, x);
        lo = fmin(lo, x[0]), hi = fmax(hi, x[0]), v = fmax(v, fabs(x[1])), a = fmax(a, fabs(x[2]));
    }
    for (size_t k = 0; k < m->table_n; k++)
        if (m->table_t[k] <= end) {
            motion_eval(m, m->table_t[k], x);
            lo = fmin(lo, x[0]), hi = fmax(hi, x[0]);
        }
    double to = turn ? 180 / acos(-1.0) : 1;
    if (c < s->n_colliders)
        printf("  colliders[%zu] \"%s\" %s", c, s->colliders[c].name, turn ? "turns" : "moves");
    else
        printf("  the domain %s (the run is done in its frame)", turn ? "turns" : "moves");
    if (turn)
        printf(" about (%g, %g, %g) through (%g, %g, %g)", m->unit[0], m->unit[1], m->unit[2],
               m->center[0], m->center[1], m->center[2]);
    else
        printf(" along (%g, %g, %g)", m->unit[0], m->unit[1], m->unit[2]);
    if (m->table)
        printf(" by the table %s (%zu rows, %g to %g s)", m->table, m->table_n, m->table_t[0],
               m->table_t[m->table_n - 1]);
    else
        printf(" by a sine of %g %s, period %g s, phase %g deg, ramp %g s", m->amplitude,
               turn ? "deg" : "m", m->period, m->phase, m->ramp);
    printf(": over the run %.4g to %.4g %s, speed up to %.4g %s, acceleration up to %.4g %s\n",
           lo * to, hi * to, turn ? "deg" : "m", v * to, turn ? "deg/s" : "m/s", a * to,
           turn ? "deg/s^2" : "m/s^2");
}

/* What the probes and gauges sample (the first few of each), the moving colliders, the forces
 * measured, and how often. */
static void print_observers(const mz_scene *s)
{
    enum { SHOWN = 8 };
    for (size_t i = 0; i < s->n_probes && i < SHOWN; i++) {
        const mz_probe *p = &s->probes[i];
        printf("  probes[%zu] \"%s\" at (%g, %g, %g):", i, p->name, p->position[0],
               p->position[1], p->position[2]);
        for (int f = 0, k = 0; f < MZ_PROBE_FIELD_COUNT; f++)
            if (p->fields & MZ_PROBE_FIELD_BIT(f))
                printf("%s %s", k++ ? "," : "", mz_probe_field_names[f]);
        printf(p->rate > 0 ? ", %g samples a second\n" : ", every step\n", p->rate);
    }
    if (s->n_probes > SHOWN)
        printf("  and %zu probes more\n", s->n_probes - SHOWN);
    for (size_t i = 0; i < s->n_gauges && i < SHOWN; i++) {
        const mz_gauge *g = &s->gauges[i];
        printf("  gauges[%zu] \"%s\" from (%g, %g, %g) to (%g, %g, %g), %zu points", i, g->name,
               g->start[0], g->start[1], g->start[2], g->end[0], g->end[1], g->end[2],
               scene_gauge_points(s, g));
        printf(g->rate > 0 ? ", %g samples a second\n" : ", every step\n", g->rate);
    }
    if (s->n_gauges > SHOWN)
        printf("  and %zu gauges more\n", s->n_gauges - SHOWN);
    for (size_t k = 0; k < scene_pose_count(s); k++) {
        size_t c;
        scene_pose_law(s, k, &c);
        print_motion(s, c);
    }
    for (size_t k = 0; k < scene_load_count(s); k++) {
        mz_load_ref l = scene_load_ref(s, k);
        printf("  forces on %s \"%s\", torque about (%g, %g, %g)", l.wall ? "wall" : "collider",
               l.name, l.load->about[0], l.load->about[1], l.load->about[2]);
        printf(l.load->rate > 0 ? ", %g samples a second\n" : ", every step\n", l.load->rate);
    }
}

int cmd_check(const mz_run_opts *o)
{
    mz_scene s;
    int rc = run_load_scene(o, &s);
    if (rc != 0)
        return rc;
    int dim = s.sim.dimensions;
    size_t n = scene_particle_count(&s);
    printf("%s: ok (scene format %d)\n", o->scene_path, s.version);
    printf("  %d dimensions, %d frames at %g fps", dim, s.sim.frames, s.sim.fps);
    if (s.sim.duration > 0)
        printf(" (until %g s)", s.sim.duration);
    printf(", ");
    if (s.sim.adaptive && scene_solver(&s) == MZ_SOLVER_PBF)
        printf("%d steps of %.4g ms (adaptive: within %.4g ms for the water's depth)",
               scene_steps_per_frame(&s), 1e3 * scene_substep_dt(&s),
               1e3 * scene_pbf_step_limit(&s, NULL));
    else if (s.sim.adaptive)
        printf("adaptive steps (cfl %g)", scene_cfl(&s));
    else
        printf("%d substeps of %.4g ms", s.sim.substeps, 1e3 * scene_substep_dt(&s));
    if (scene_solver(&s) == MZ_SOLVER_DFSPH)
        printf(", support radius %g m, density within %g%% and divergence within %g%% on "
               "average\n", scene_support_radius(&s), 100 * s.fluids[0].density_tolerance,
               100 * s.fluids[0].divergence_tolerance);
    else if (scene_is_sph(&s))
        printf(", support radius %g m, speed of sound %.3g m/s\n", scene_support_radius(&s),
               scene_speed_of_sound(&s));
    else if (scene_solver(&s) == MZ_SOLVER_FLIP) {
        int c[3];
        double h[3];
        scene_flip_grid(&s, c, h);
        printf(", grid %d x %d x %d cells of %.4g m, %s pressure solver%s\n", c[0], c[1], c[2],
               h[0], mz_pressure_solver_names[s.sim.pressure_solver],
               s.fluids[0].transfer == MZ_TRANSFER_APIC
                   ? ", APIC transfer (flip_ratio not used)"
                   : "");
    } else
        printf(", %d iterations\n", s.sim.iterations);
    for (size_t i = 0; i < s.n_fluids; i++) {
        const mz_fluid *f = &s.fluids[i];
        printf("  fluids[%zu]%s%s%s: %s, %zu particles", i, f->name ? " \"" : "",
               f->name ? f->name : "", f->name ? "\"" : "", mz_solver_names[f->solver],
               scene_fluid_count(f, dim));
        if (f->has_box) {
            size_t d[3];
            scene_lattice_dims(f, dim, d);
            printf(" (box %s %zu x %zu x %zu)",
                   scene_fluid_jittered(&s, f) ? "cells, jittered," : "lattice", d[0], d[1],
                   d[2]);
        }
        printf(", spacing %g m, particle mass %.4g kg\n", f->spacing,
               build_particle_mass(&s, f));
    }
    for (size_t i = 0; i < bodies_count(&s); i++) {
        const mz_body *b = bodies_get(&s, i);
        const mz_body_geom *g = b->geom;
        char where[48];
        printf("  %s%s%s%s: ", bodies_path(&s, i, where), b->name ? " \"" : "",
               b->name ? b->name : "", b->name ? "\"" : "");
        if (g->phase == MZ_PHASE_RIGID) {
            double m = bodies_particle_mass(&s, b);
            printf("rigid, %zu particles, spacing %.4g m, mass %.4g kg (%.4g kg each)\n", g->n,
                   g->thickness, m * (double)g->n, m);
            continue;
        }
        size_t pinned = 0;
        for (size_t k = 0; k < g->n; k++)
            pinned += g->pinned[k];
        printf("%s, %zu particles (%zu pinned), %zu stretch and %zu bending constraints, "
               "thickness %.4g m\n", g->phase == MZ_PHASE_SOFTBODY ? "softbody" : "cloth", g->n,
               pinned, g->n_stretch, g->n_bend, g->thickness);
    }
    size_t bytes = sim_device_bytes(&s, n);
    printf("  %zu particles in all", n);
    if (scene_boundary_particles(&s)) {
        printf(", and %zu boundary particles on the walls and colliders", scene_boundary_count(&s));
        if (scene_moving_count(&s) > 0)
            printf(" (%zu moving)", scene_moving_boundary_count(&s));
    }
    printf("; device memory about %.1f MB (%zu bytes per particle)\n", (double)bytes / 1e6,
           n ? bytes / n : 0);
    /* WCSPH's neighbour lists are kept only where the device has room beyond that. */
    if (scene_solver(&s) == MZ_SOLVER_WCSPH)
        printf("  and, where the device has room for them, neighbour lists: %.1f MB more on a "
               "CPU, %.1f MB on a GPU (MIZU_SPH_LISTS=0: none)\n",
               (double)(n * sph_lists_bytes(&s, false)) / 1e6,
               (double)(n * sph_lists_bytes(&s, sph_lists_masked(&s, n, true))) / 1e6);
    /* DFSPH's gradients likewise. */
    if (scene_solver(&s) == MZ_SOLVER_DFSPH)
        printf("  and, where the device has room for them, the neighbours' kernel gradients: "
               "%.1f MB more (MIZU_DFSPH_GRADS=0: none)\n",
               (double)(n * sph_lists_grad_bytes(&s)) / 1e6);
    mz_host_limit limit = host_memory_limit();
    printf("  host memory about %.1f MB beside the device's (%s: %.1f MB)\n",
           run_host_bytes(&s, n) / 1e6, limit.what, limit.bytes / 1e6);
    long written = s.sim.frames / s.output.every + 1;
    printf("  output: %ld frames (", written);
    printf(s.output.every == 1 ? "every frame" : "one frame in %d", s.output.every);
    printf("), fields");
    for (int f = 0, k = 0; f < MZ_FIELD_COUNT; f++)
        if (s.output.fields & MZ_FIELD_BIT(f))
            printf("%s %s", k++ ? "," : "", mz_field_names[f]);
    printf(", about %.1f MB uncompressed\n", run_output_bytes(&s, n, s.n_rigids, 0) / 1e6);
    print_observers(&s);
    /* Against the device the run would get, when there is one. */
    mz_cl cl;
    int opened = mz_cl_open(&cl, o->device, false);
    if (opened == 0) {
        rc = sim_check_fits(&cl, &s, n) == 0 && run_check_host_memory(&cl, &s, n) == 0
                 ? MZ_EXIT_OK
                 : MZ_EXIT_RUNTIME;
        if (rc == MZ_EXIT_OK)
            printf("  fits %s (%.1f MB of device memory, largest buffer %.1f MB)\n",
                   cl.device_name, (double)cl.global_mem / 1e6, (double)cl.max_alloc / 1e6);
        mz_cl_close(&cl);
    } else {
        rc = opened == -2 ? MZ_EXIT_USAGE : MZ_EXIT_OK;
        if (opened != -2)
            printf("  device memory not checked: no OpenCL device opened\n");
    }
    if (o->preview && rc != MZ_EXIT_USAGE) {
        char *out = run_output_path(o, &s);
        int prc = run_preview(o, &s, out, stdout);
        rc = rc == MZ_EXIT_OK ? prc : rc;
        free(out);
    }
    scene_free(&s);
    return rc;
}
