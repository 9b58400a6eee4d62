/* The set-up as the user wrote it: every particle where the builder puts it, coloured by the
 * kind of body, with the domain and colliders; the same picture `mizu render` makes. */
#include "cli/preview.h"
#include "build/build.h"
#include "render/render.h"
#include "scene/scene.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *preview_path(const char *out)
{
    size_t len = strlen(out);
    if (len > 3 && !strcmp(out + len - 3, ".h5"))
        len -= 3;
    mz_str p = {0};
    str_addf(&p, "%.*s.preview.png", (int)len, out);
    return p.s;
}

int preview_write(const mz_scene *s, const char *path, FILE *msg)
{
    mz_particles p;
    build_particles(s, &p);
    float *pos = xmalloc((3 * p.n + 1) * sizeof *pos);
    for (size_t i = 0; i < p.n; i++)
        memcpy(pos + 3 * i, p.pos + 4 * i, 3 * sizeof *pos);
    const char *base = strrchr(s->path, '/');
    char caption[512];
    snprintf(caption, sizeof caption, "%s   set-up (t = 0)   %zu particles",
             base ? base + 1 : s->path, p.n);
    mz_picture pic = {.n = p.n, .pos = pos, .phase = p.phase, .body = p.body, .tri = p.triangles,
                      .n_tri = p.n_triangles, .scene_json = s->effective_json,
                      .caption = caption};
    mz_render_opts ro = {.width = 1280, .height = 720};
    mz_image img;
    int rc = render_picture(&pic, &ro, &img);
    if (rc == 0) {
        rc = render_write_png(path, &img, caption);
        image_free(&img);
    }
    if (rc == 0 && msg)
        fprintf(msg, "mizu: the set-up drawn to %s\n", path);
    free(pos);
    particles_free(&p);
    return rc;
}
