/* What `mizu run` and `mizu check` settle before a run starts: the scene as the options change
 * it, the output's size and path, and whether the host has the memory. */
#include "cli/run.h"

#include "build/build.h"
#include "scene/bodies.h"
#include "scene/sizes.h"
#include "solvers/sim.h"
#include "util/err.h"
#include "util/hostmem.h"

#include <stdlib.h>
#include <string.h>

int run_load_scene(const mz_run_opts *o, mz_scene *s)
{
    size_t n = o->n_overrides;
    const char **ov = xcalloc(n + 5, sizeof *ov);
    for (size_t i = 0; i < n; i++)
        ov[i] = o->overrides[i];
    /* The command line's shorthands are overrides after the --set ones, so they win; the
     * scene's effective JSON records what they resolved to. --frames clears a duration. */
    char frames[64], until[64], every[64];
    mz_str fields = {0};
    if (o->frames > 0) {
        snprintf(frames, sizeof frames, "simulation.frames=%ld", o->frames);
        ov[n++] = frames;
        ov[n++] = "simulation.duration=0";
    }
    if (o->until > 0) {
        snprintf(until, sizeof until, "simulation.duration=%.17g", o->until);
        ov[n++] = until;
    }
    if (o->every > 0) {
        snprintf(every, sizeof every, "output.every=%ld", o->every);
        ov[n++] = every;
    }
    if (o->fields) { /* a,b,c as a JSON list: the scene's validation names a bad one */
        str_addf(&fields, "output.fields=[");
        for (const char *p = o->fields; *p;) {
            size_t len = strcspn(p, ",");
            str_addf(&fields, "%s\"%.*s\"", fields.s[fields.len - 1] == '[' ? "" : ",", (int)len,
                     p);
            p += len + (p[len] == ',');
        }
        str_addf(&fields, "]");
        ov[n++] = fields.s;
    }
    mz_diag d = {0};
    int rc = o->scene_text ? scene_load_text(o->scene_text, strlen(o->scene_text), o->scene_path,
                                             ov, n, s, &d)
                           : scene_load(o->scene_path, ov, n, s, &d);
    free(ov);
    str_free(&fields);
    if (rc != 0) {
        diag_print(&d, o->scene_path);
        diag_free(&d);
        return MZ_EXIT_USAGE;
    }
    diag_free(&d);
    scene_motion_warnings(s);
    return 0;
}

double run_output_bytes(const mz_scene *s, size_t n, size_t n_rigids, long first_frame)
{
    long frames = 0;
    for (long f = first_frame; f <= s->sim.frames; f++)
        frames += f % s->output.every == 0;
    double per_frame = 28.0 * (double)n_rigids + 16; /* poses; step and time */
    if (scene_boundary_particles(s) &&
        scene_moving_count(s) > 0) /* the moving colliders' boundary particles */
        per_frame += 12.0 * (double)scene_moving_boundary_count(s);
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (s->output.fields & MZ_FIELD_BIT(f))
            per_frame += 4.0 * mz_field_infos[f].components * (double)n;
    return per_frame * (double)frames;
}

double run_host_bytes(const mz_scene *s, size_t n)
{
    /* per frame in flight (two) the ids and raw device-layout fields, and one id-ordered copy
     * of the fields */
    double per_particle = 2 * 4;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (s->output.fields & MZ_FIELD_BIT(f)) {
            int c = mz_field_infos[f].components;
            per_particle += 2 * 4.0 * (c == 3 ? 4 : 1) + 4.0 * c;
        }
    /* The most at once: while building, or after the upload (run.c frees the 40 bytes a
     * particle only the device needs before the frames' buffers are made). */
    double build = build_host_bytes(s, n);
    double after = build - 40.0 * (double)n + per_particle * (double)n;
    return build > after ? build : after;
}

int run_check_host_memory(const mz_cl *cl, const mz_scene *s, size_t n)
{
    /* A CPU device's buffers are host memory too. */
    double host = run_host_bytes(s, n) +
                  (cl->type & CL_DEVICE_TYPE_CPU ? (double)sim_device_bytes(s, n) : 0);
    char what[96];
    snprintf(what, sizeof what, "building, simulating and writing the scene's %zu particles", n);
    const char *refused = host_memory_refusal(host, what);
    if (!refused)
        return 0;
    mz_error("%s. Use a coarser spacing or fewer particles, or a machine with more memory",
             refused);
    return -1;
}

char *run_output_path(const mz_run_opts *o, const mz_scene *s)
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
