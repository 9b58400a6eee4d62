/* `mizu run`: scene → particles → device → frames → HDF5, with progress and a summary.
 *
 * Output overlaps compute: a frame's readback is enqueued behind its substeps without blocking,
 * and while the device computes the next frame the host converts and writes this one. */
#include "run.h"

#include "bodies.h"
#include "build.h"
#include "cl_prog.h"
#include "err.h"
#include "h5_out.h"
#include "progress.h"
#include "sim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Scene with --frames folded into the overrides, so the effective scene records it. Prints the
 * errors; returns 0 or MZ_EXIT_USAGE. */
static int load_scene(const mz_run_opts *o, mz_scene *s)
{
    size_t n = o->n_overrides;
    const char **ov = xcalloc(n + 1, sizeof *ov);
    for (size_t i = 0; i < n; i++)
        ov[i] = o->overrides[i];
    char frames[64];
    if (o->frames > 0) {
        snprintf(frames, sizeof frames, "simulation.frames=%ld", o->frames);
        ov[n++] = frames;
    }
    mz_diag d = {0};
    int rc = scene_load(o->scene_path, ov, n, s, &d);
    free(ov);
    if (rc != 0) {
        diag_print(&d, o->scene_path);
        diag_free(&d);
        return MZ_EXIT_USAGE;
    }
    diag_free(&d);
    return 0;
}

/* -o, else output.path, else "<scene name without .json>.h5" in the working directory. */
static char *output_path(const mz_run_opts *o, const mz_scene *s)
{
    if (o->out_path)
        return xstrdup(o->out_path);
    if (s->output.path)
        return xstrdup(s->output.path);
    const char *base = strrchr(o->scene_path, '/');
    base = base ? base + 1 : o->scene_path;
    size_t len = strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".json"))
        len -= 5;
    mz_str p = {0};
    str_addf(&p, "%.*s.h5", (int)len, base);
    return p.s;
}

/* One frame in flight from the device: raw arrays in device order, the rigid bodies' poses
 * (8 floats each, as sim->rigid_pose holds them; NULL without rigid bodies), and the event that
 * says the copies are done. */
typedef struct readback {
    float *raw[MZ_FIELD_COUNT];
    uint32_t *id;
    float *rigid_pose;
    cl_event done;
    long step;
    double time;
    bool pending;
} readback;

static int device_components(mz_field f) { return mz_field_infos[f].components == 3 ? 4 : 1; }

static bool enqueue_readback(mz_sim *sim, unsigned fields, readback *rb)
{
    size_t n = sim->n;
    cl_command_queue q = sim->cl->queue;
    bool ok = cl_ok(clEnqueueReadBuffer(q, sim->id, CL_FALSE, 0, 4 * n, rb->id, 0, NULL, NULL),
                    "clEnqueueReadBuffer(id)");
    for (int f = 0; ok && f < MZ_FIELD_COUNT; f++) {
        if (!(fields & MZ_FIELD_BIT(f)))
            continue;
        size_t bytes = 4 * (size_t)device_components(f) * n;
        char what[64];
        snprintf(what, sizeof what, "clEnqueueReadBuffer(%s)", mz_field_infos[f].name);
        ok = cl_ok(clEnqueueReadBuffer(q, *sim->field[f], CL_FALSE, 0, bytes, rb->raw[f], 0,
                                       NULL, NULL),
                   what);
    }
    /* The poses of the same instant as the particles: queued with them, never read later. */
    if (ok && sim->n_rigids > 0)
        ok = cl_ok(clEnqueueReadBuffer(q, sim->rigid_pose, CL_FALSE, 0,
                                       8 * sizeof(cl_float) * sim->n_rigids, rb->rigid_pose, 0,
                                       NULL, NULL),
                   "clEnqueueReadBuffer(rigid_pose)");
    /* In-order queue: a marker completes after every copy above. */
    ok = ok && cl_ok(clEnqueueMarkerWithWaitList(q, 0, NULL, &rb->done), "clEnqueueMarkerWithWaitList") &&
         cl_ok(clFlush(q), "clFlush");
    rb->step = sim->step;
    rb->time = sim->time;
    rb->pending = ok;
    return ok;
}

/* Whether the readback of the frame before frame f is still waiting to be written. */
static bool prev_pending(const readback rb[2], long f) { return rb[(f + 1) & 1].pending; }

/* Wait for a readback, put it in id order, append it to the file. */
static int finish_readback(readback *rb, size_t n, unsigned fields, float *ordered[],
                           mz_h5_out *out, double *write_seconds)
{
    rb->pending = false;
    bool ok = cl_ok(clWaitForEvents(1, &rb->done), "clWaitForEvents(readback)");
    clReleaseEvent(rb->done);
    if (!ok)
        return -1;
    double t0 = now_seconds();
    const float *data[MZ_FIELD_COUNT] = {0};
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(fields & MZ_FIELD_BIT(f)))
            continue;
        int cd = device_components(f), co = mz_field_infos[f].components;
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < co; k++)
                ordered[f][(size_t)rb->id[i] * co + k] = rb->raw[f][i * cd + k];
        data[f] = ordered[f];
    }
    int rc = h5_out_write_frame(out, rb->step, rb->time, data, rb->rigid_pose);
    *write_seconds += now_seconds() - t0;
    return rc;
}

static void print_summary(const mz_run_opts *o, const mz_scene *s, const mz_sim *sim,
                          const char *path, long frames_written, double setup_s, double run_s,
                          double write_s)
{
    double psteps = (double)sim->n * (double)sim->step;
    fprintf(stderr, "mizu: done: %zu particles, %d frames, %ld steps of %.4g", sim->n,
            s->sim.frames, sim->step, 1e3 * sim->dt_min);
    if (sim->dt_max > sim->dt_min * (1 + 1e-9))
        fprintf(stderr, " to %.4g", 1e3 * sim->dt_max);
    fprintf(stderr, " ms, %.4g s simulated\n", sim->time);
    fprintf(stderr, "  wall %.3f s (setup %.3f s, frames %.3f s), %.4g particle-steps/s\n",
            setup_s + run_s, setup_s, run_s, run_s > 0 ? psteps / run_s : 0.0);
    struct stat st;
    double mb = stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;
    char *xdmf = h5_out_xdmf_path(path);
    fprintf(stderr, "  output %s (%ld frames, %.1f MB) and %s; writing took %.3f s (%.1f%% of "
                    "the frame loop)\n",
            path, frames_written, mb, xdmf, write_s, run_s > 0 ? 100.0 * write_s / run_s : 0.0);
    free(xdmf);
    if (o->profile) {
        double total = 0;
        for (int i = 0; sim->solver->stages[i]; i++)
            total += sim->stages[i].seconds;
        fprintf(stderr, "  device time per stage (OpenCL events), %.3f s in all:\n", total);
        for (int i = 0; sim->solver->stages[i]; i++)
            fprintf(stderr, "    %-12s %9.3f ms %5.1f%%  %8lu launches  %8.2f ns/particle-step\n",
                    sim->solver->stages[i], 1e3 * sim->stages[i].seconds,
                    total > 0 ? 100.0 * sim->stages[i].seconds / total : 0.0,
                    sim->stages[i].launches,
                    psteps > 0 ? 1e9 * sim->stages[i].seconds / psteps : 0.0);
    }
}

int cmd_run(const mz_run_opts *o)
{
    double t_start = now_seconds();
    mz_scene scene;
    int rc = load_scene(o, &scene);
    if (rc != 0)
        return rc;
    char *path = output_path(o, &scene);
    mz_cl cl;
    mz_sim sim = {0};
    mz_particles parts = {0};
    mz_h5_out *out = NULL;
    readback rb[2] = {0};
    float *ordered[MZ_FIELD_COUNT] = {0};
    rc = MZ_EXIT_RUNTIME;
    int opened = mz_cl_open(&cl, o->device, o->profile);
    if (opened != 0) {
        rc = opened == -2 ? MZ_EXIT_USAGE : MZ_EXIT_RUNTIME;
        goto done_scene;
    }
    build_particles(&scene, &parts);
    if (sim_create(&sim, &cl, &scene, &parts) != 0)
        goto done;

    unsigned fields = scene.output.fields;
    mz_h5_meta meta = {.scene_path = scene.path, .scene_given = scene.given_json,
                       .scene_effective = scene.effective_json,
                       .overrides = (const char *const *)scene.overrides,
                       .n_overrides = scene.n_overrides, .device = cl.device_name,
                       .platform = cl.platform_name, .driver = cl.driver_version,
                       .kernel_build_options = MZ_CL_BUILD_OPTIONS};
    memcpy(meta.domain_min, scene.domain.min, sizeof meta.domain_min);
    memcpy(meta.domain_max, scene.domain.max, sizeof meta.domain_max);
    /* Rigid body k is body n_fluids + n_cloths + n_meshes + k (sim.h). */
    uint32_t *rigid_body = xcalloc(sim.n_rigids ? sim.n_rigids : 1, sizeof *rigid_body);
    for (size_t k = 0; k < sim.n_rigids; k++)
        rigid_body[k] = (uint32_t)(scene.n_fluids + scene.n_cloths + scene.n_meshes + k);
    mz_h5_static st = {.body = parts.body, .phase = parts.phase, .triangles = parts.triangles,
                       .n_triangles = parts.n_triangles, .n_rigids = sim.n_rigids,
                       .rigid_body = rigid_body};
    out = h5_out_create(path, parts.n, fields,
                        scene.output.compression == MZ_COMPRESSION_GZIP ? scene.output.level : 0,
                        &meta, &st);
    free(rigid_body);
    if (!out)
        goto done;
    for (int b = 0; b < 2; b++) {
        rb[b].id = xmalloc(4 * parts.n);
        if (sim.n_rigids > 0)
            rb[b].rigid_pose = xmalloc(8 * sizeof(cl_float) * sim.n_rigids);
        for (int f = 0; f < MZ_FIELD_COUNT; f++)
            if (fields & MZ_FIELD_BIT(f))
                rb[b].raw[f] = xmalloc(4 * (size_t)device_components(f) * parts.n);
    }
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (fields & MZ_FIELD_BIT(f))
            ordered[f] = xmalloc(4 * (size_t)mz_field_infos[f].components * parts.n);

    double t_loop = now_seconds(), write_s = 0;
    long frames = scene.sim.frames;
    double frame_dt = scene_frame_dt(&scene);
    mz_progress prog;
    progress_start(&prog, !o->quiet, frames, (double)parts.n);
    bool failed = false;
    const char *why = NULL;
    for (long f = 0; f <= frames && !failed; f++) {
        if (f > 0 && sim_advance_frame(&sim, frame_dt) != 0) {
            failed = true;
            why = "the simulation failed";
            /* The frame before is whole: its readback was queued before the failing step. */
            if (prev_pending(rb, f))
                finish_readback(&rb[(f + 1) & 1], parts.n, fields, ordered, out, &write_s);
            break;
        }
        readback *cur = &rb[f & 1], *prev = &rb[(f + 1) & 1];
        if (f % scene.output.every == 0)
            failed = !enqueue_readback(&sim, fields, cur);
        if (!failed && prev->pending &&
            finish_readback(prev, parts.n, fields, ordered, out, &write_s) != 0) {
            failed = true;
            why = "writing the output failed";
        }
        if (o->profile && !failed) {
            clFinish(cl.queue);
            sim_collect_profile(&sim);
        }
        progress_update(&prog, f, sim.time, sim.step);
    }
    for (int b = 0; b < 2 && !failed; b++)
        if (rb[b].pending && finish_readback(&rb[b], parts.n, fields, ordered, out, &write_s)) {
            failed = true;
            why = "writing the output failed";
        }
    if (!failed)
        failed = !cl_ok(clFinish(cl.queue), "clFinish");
    progress_finish(&prog);
    double t_end = now_seconds();
    long written = h5_out_frames(out);
    if (failed) {
        char status[160];
        snprintf(status, sizeof status, "stopped at frame %ld: %s", written,
                 why ? why : "a device failure");
        h5_out_close(out, false, status);
        mz_error("run stopped; %s holds the %ld frames written before the failure (marked "
                 "incomplete)",
                 path, written);
        out = NULL;
        goto done;
    }
    int close_rc = h5_out_close(out, true, "finished");
    out = NULL;
    if (close_rc != 0)
        goto done;
    if (!o->quiet)
        print_summary(o, &scene, &sim, path, written, t_loop - t_start, t_end - t_loop,
                      write_s);
    rc = MZ_EXIT_OK;
done:
    /* A failed run can leave readbacks queued into rb[]: let the device finish before freeing. */
    if (cl.queue)
        clFinish(cl.queue);
    for (int b = 0; b < 2; b++) {
        if (rb[b].pending)
            clReleaseEvent(rb[b].done);
        free(rb[b].id);
        free(rb[b].rigid_pose);
        for (int f = 0; f < MZ_FIELD_COUNT; f++)
            free(rb[b].raw[f]);
    }
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        free(ordered[f]);
    if (out)
        h5_out_close(out, false, "aborted");
    sim_release(&sim);
    particles_free(&parts);
    mz_cl_close(&cl);
done_scene:
    free(path);
    scene_free(&scene);
    return rc;
}

int cmd_check(const mz_run_opts *o)
{
    mz_scene s;
    int rc = load_scene(o, &s);
    if (rc != 0)
        return rc;
    int dim = s.sim.dimensions;
    size_t n = build_particle_count(&s);
    printf("%s: ok (scene format %d)\n", o->scene_path, s.version);
    printf("  %d dimensions, %d frames at %g fps, ", dim, s.sim.frames, s.sim.fps);
    if (s.sim.adaptive)
        printf("adaptive steps (cfl %g)", scene_cfl(&s));
    else
        printf("%d substeps of %.4g ms", s.sim.substeps, 1e3 * scene_substep_dt(&s));
    if (scene_is_sph(&s))
        printf(", support radius %g m, speed of sound %.3g m/s\n", scene_support_radius(&s),
               scene_speed_of_sound(&s));
    else
        printf(", %d iterations\n", s.sim.iterations);
    for (size_t i = 0; i < s.n_fluids; i++) {
        const mz_fluid *f = &s.fluids[i];
        printf("  fluids[%zu]%s%s%s: %s, %zu particles", i, f->name ? " \"" : "",
               f->name ? f->name : "", f->name ? "\"" : "", mz_solver_names[f->solver],
               build_fluid_count(f, dim));
        if (f->has_box) {
            size_t d[3];
            build_lattice_dims(f, dim, d);
            printf(" (box lattice %zu x %zu x %zu)", d[0], d[1], d[2]);
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
    if (scene_is_sph(&s) && s.domain.boundary.type == MZ_BOUNDARY_PARTICLES)
        printf(", and %zu boundary particles on the walls and colliders", build_boundary_count(&s));
    printf("; device memory about %.1f MB (%zu bytes per particle)\n", (double)bytes / 1e6,
           n ? bytes / n : 0);
    long written = s.sim.frames / s.output.every + 1;
    size_t per_frame = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (s.output.fields & MZ_FIELD_BIT(f))
            per_frame += 4 * (size_t)mz_field_infos[f].components * n;
    printf("  output: %ld frames, about %.1f MB uncompressed\n", written,
           (double)per_frame * (double)written / 1e6);
    scene_free(&s);
    return MZ_EXIT_OK;
}
