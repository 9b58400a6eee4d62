/* `mizu run`'s output before the first frame (run_ctx.h): the new file with its static columns
 * and boundary, or the resumed one checked against its checkpoint and cut back; the run id; the
 * disk-space warning. */
#include "cli/run_ctx.h"

#include "device/cl_prog.h"
#include "dist/dist.h"
#include "scene/bodies.h"
#include "scene/sizes.h"
#include "util/digest.h"
#include "util/err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* A warning when the frames still to write (uncompressed) exceed the free space of the
 * output's filesystem: the run would stop there (keeping the frames before). */
void run_warn_disk_space(const run_ctx *r, long first_frame)
{
    char *dir = xstrdup(r->path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = 0;
    struct statvfs fs;
    double need = run_output_bytes(&r->scene, r->parts.n_total, r->sim.n_rigids, first_frame);
    if (statvfs(slash ? dir : ".", &fs) == 0) {
        double avail = (double)fs.f_bavail * (double)fs.f_frsize;
        if (need > avail)
            mz_warn("the output needs about %.3g GB%s and %s has %.3g GB free: the run will stop "
                    "when the disk is full, keeping the frames written before",
                    need / 1e9, r->scene.output.compression ? " before compression" : "",
                    slash ? dir : ".", avail / 1e9);
    }
    free(dir);
}

/* Output rows a run has written once frame `last` is done (every output.every-th frame from 0). */
static long output_frames(const mz_scene *s, long last)
{
    return last < 0 ? 0 : last / s->output.every + 1;
}

/* The run id of a new output: a digest of what decides its frames (the scene as given and as
 * used, and the device), so that two identical runs still write identical files, and any two
 * runs whose frames could differ have different ids. */
char *run_new_id(const run_ctx *r)
{
    const mz_scene *s = &r->scene;
    uint64_t h = digest_add(DIGEST_START, s->given_json, strlen(s->given_json) + 1);
    h = digest_add(h, s->effective_json, strlen(s->effective_json) + 1);
    h = digest_add(h, r->cl.device_name, strlen(r->cl.device_name) + 1);
    mz_str id = {0};
    str_addf(&id, "%016llx", (unsigned long long)h);
    return id.s;
}

/* A resumed run's checkpoint against the scene it reloads: frames in range, the output rows it
 * claims, and the meshes unchanged since. 0, or an exit code after reporting. */
int run_check_resume(const run_ctx *r)
{
    const mz_scene *s = &r->scene;
    const mz_ckpt *ck = &r->ck;
    const char *path = r->o->resume_path;
    if (ck->frame > s->sim.frames) {
        if (r->o->frames > 0) {
            mz_error("--frames %ld ends before the checkpoint's frame %ld (%s): nothing to do",
                     r->o->frames, ck->frame, path);
            return MZ_EXIT_USAGE;
        }
        mz_error("checkpoint %s damaged: frame %ld is beyond the scene's %d frames", path,
                 ck->frame, s->sim.frames);
        return MZ_EXIT_RUNTIME;
    }
    if (ck->frames_written != output_frames(s, ck->frame)) {
        mz_error("checkpoint %s damaged: it says %ld frames were written by frame %ld; the scene "
                 "writes %ld", path, ck->frames_written, ck->frame, output_frames(s, ck->frame));
        return MZ_EXIT_RUNTIME;
    }
    const char *why = sim_check_progress(s, ck->frame_steps, ck->frame_time);
    if (why) {
        mz_error("checkpoint %s damaged: %s", path, why);
        return MZ_EXIT_RUNTIME;
    }
    if (ck->n_inputs != scene_input_count(s)) {
        mz_error("checkpoint %s damaged: it records %zu input files; the scene reads %zu", path,
                 ck->n_inputs, scene_input_count(s));
        return MZ_EXIT_RUNTIME;
    }
    for (size_t k = 0; k < ck->n_inputs; k++) {
        if (scene_input_digest(s, k) != ck->inputs[k]) {
            char what[96];
            mz_error("%s changed since checkpoint %s was written: resuming would not continue "
                     "the same run. Restore the file, or start a new run",
                     scene_input_name(s, k, what), path);
            return MZ_EXIT_RUNTIME;
        }
    }
    return 0;
}

static void body_of_ids(const void *scene, size_t first, size_t count, uint32_t *out)
{
    build_body_of_ids(scene, first, count, out);
}

static void phase_of_ids(const void *scene, size_t first, size_t count, uint32_t *out)
{
    build_phase_of_ids(scene, first, count, out);
}

/* The moving colliders' particles at time t, for the output (mz_h5_static's moving_at; the
 * writer thread calls it with each frame). */
static void moving_at(const void *ctx, double t, float *out)
{
    const run_ctx *r = ctx;
    build_boundary_at(&r->scene, r->moving_rest, r->n_moving, t, out);
}

/* SPH or PBF with particle walls: the wall and collider particles the solver makes (the same
 * builder calls) for the output, into st: those that stay put at rest, 3 floats each (returned,
 * for the caller to free), written once; the moving colliders' kept in r with their owners,
 * placed at each frame's time. Nothing for other scenes. */
static float *output_boundary(run_ctx *r, mz_h5_static *st)
{
    const mz_scene *s = &r->scene;
    if (!scene_boundary_particles(s))
        return NULL;
    float *pos = NULL;
    double spacing = s->fluids[0].spacing;
    int layers = scene_wall_layers(s);
    size_t nb = build_wall_particles(s, spacing, layers, &pos);
    nb = build_collider_particles(s, spacing, layers, &pos, nb);
    float *moving = xmalloc(4 * (nb ? nb : 1) * sizeof *moving);
    size_t ns = 0, nm = 0;
    for (size_t i = 0; i < nb; i++) { /* the static ones to 3 floats each, in place */
        const float *p = pos + 4 * i;
        if (build_boundary_moves(s, p))
            memcpy(moving + 4 * nm++, p, 4 * sizeof *p);
        else
            memmove(pos + 3 * ns++, p, 3 * sizeof *p);
    }
    st->boundary = pos;
    st->n_boundary = ns;
    if (nm == 0) {
        free(moving);
        return pos;
    }
    free(r->moving_rest);
    r->moving_rest = moving; /* until the output is closed */
    r->n_moving = nm;
    st->n_moving = nm;
    st->moving_at = moving_at;
    st->moving_ctx = r;
    return pos;
}

/* A new output file, or for --resume the one the checkpoint names, cut back to its frames. */
int run_open_output(run_ctx *r)
{
    const mz_scene *s = &r->scene;
    if (dist_rank() != 0) /* rank 0 makes the file (then h5_out_collective) */
        return 0;
    if (r->resumed) {
        mz_h5_static st = {.n_rigids = r->sim.n_rigids};
        free(output_boundary(r, &st));
        r->out = h5_out_reopen(r->path, r->parts.n_total, r->fields, &st,
                               r->ck.frames_written, r->run_id,
                               output_frames(s, s->sim.frames));
        return r->out && h5_out_reopen_observables(r->out, s, r->ck.step) == 0 ? 0 : -1;
    }
    mz_h5_meta meta = {.scene_path = s->path, .scene_given = s->given_json,
                       .scene_effective = s->effective_json,
                       .overrides = (const char *const *)s->overrides,
                       .n_overrides = s->n_overrides, .device = r->cl.device_name,
                       .platform = r->cl.platform_name, .driver = r->cl.driver_version,
                       .kernel_build_options = MZ_CL_BUILD_OPTIONS, .run_id = r->run_id,
                       .ranks = dist_size(), .devices_by_rank = r->devices,
                       .collective = dist_active()};
    memcpy(meta.domain_min, s->domain.min, sizeof meta.domain_min);
    memcpy(meta.domain_max, s->domain.max, sizeof meta.domain_max);
    /* Rigid body k is body n_fluids + n_cloths + n_meshes + k (sim.h). */
    uint32_t *rigid_body = xcalloc(r->sim.n_rigids ? r->sim.n_rigids : 1, sizeof *rigid_body);
    for (size_t k = 0; k < r->sim.n_rigids; k++)
        rigid_body[k] = (uint32_t)(s->n_fluids + s->n_cloths + s->n_meshes + k);
    mz_h5_static st = {.body = r->parts.body, .phase = r->parts.phase,
                       .triangles = r->parts.triangles, .n_triangles = r->parts.n_triangles,
                       .n_rigids = r->sim.n_rigids, .rigid_body = rigid_body};
    /* Under mpirun rank 0 holds only its share: the bodies and phases of ids from the scene,
     * a block at a time. */
    if (dist_active()) {
        st.body = st.phase = NULL;
        st.body_of = body_of_ids;
        st.phase_of = phase_of_ids;
        st.body_ctx = s;
    }
    float *boundary = output_boundary(r, &st);
    r->out = h5_out_create(r->path, r->parts.n_total, r->fields,
                           s->output.compression == MZ_COMPRESSION_GZIP ? s->output.level : 0,
                           &meta, &st);
    free(boundary);
    free(rigid_body);
    return r->out && h5_out_add_observables(r->out, s) == 0 ? 0 : -1;
}
