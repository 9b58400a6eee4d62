/* One fuzz input for the scene loader, shared by the libFuzzer harness (tests/fuzz/fuzz_scene.c)
 * and the regression test that replays tests/data/fuzz/ (tests/scene/test_scene.c), so that a kept
 * crash is replayed exactly as the fuzzer ran it.
 *
 * Framing: the scene's JSON text, then a NUL byte, then --set overrides, each ended by a NUL
 * (the last may run to the end of the input). No NUL: the whole input is the scene. So a plain
 * scene file is a valid input, and `printf '%s\0%s' "$(cat s.json)" fps=1` adds an override.
 *
 * The input goes through scene_load_text (JSON, overrides, key tables, validation, bodies and
 * their OBJ files), then through what `mizu check` computes without a device, and, for scenes
 * of at most FUZZ_MAX_BUILD particles, the particle builder. The name is `dir`/fuzz.json, so an
 * "obj" named relative to a scene in scenes/ finds its mesh. */
#ifndef MZ_FUZZ_SCENE_INPUT_H
#define MZ_FUZZ_SCENE_INPUT_H
#include "build/build.h"
#include "scene/bodies.h"
#include "scene/scene.h"
#include "solvers/sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_OVERRIDES 16
#define FUZZ_MAX_BUILD 100000

/* Report a broken invariant; the caller turns it into a crash (fuzzer) or a failure (test). */
#define FUZZ_CHECK(cond)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_scene: invariant broken: %s (%s:%d)\n", #cond, __FILE__,    \
                    __LINE__);                                                                 \
            return false;                                                                      \
        }                                                                                      \
    } while (0)

/* What `mizu check` prints, computed and sanity-checked (src/cli/run.c, cmd_check). */
static bool fuzz_check_summary(const mz_scene *s)
{
    int dim = s->sim.dimensions;
    size_t n = scene_particle_count(s);
    FUZZ_CHECK(n > 0 && n <= MZ_MAX_PARTICLES);
    FUZZ_CHECK(isfinite(scene_frame_dt(s)) && scene_substep_dt(s) > 0);
    if (scene_is_sph(s)) {
        FUZZ_CHECK(scene_support_radius(s) > 0);
        FUZZ_CHECK(scene_speed_of_sound(s) > 0);
        FUZZ_CHECK(scene_cfl(s) > 0);
    }
    size_t sum = 0;
    for (size_t i = 0; i < s->n_fluids; i++) {
        const mz_fluid *f = &s->fluids[i];
        size_t d[3];
        size_t c = scene_fluid_count(f, dim);
        if (f->has_box)
            FUZZ_CHECK(scene_lattice_dims(f, dim, d) == c);
        sum += c;
        (void)build_particle_mass(s, f);
    }
    for (size_t i = 0; i < bodies_count(s); i++) {
        const mz_body *b = bodies_get(s, i);
        char where[48];
        bodies_path(s, i, where);
        FUZZ_CHECK(b->geom != NULL && b->geom->n > 0);
        FUZZ_CHECK(b->geom->thickness > 0);
        double m = bodies_particle_mass(s, b);
        FUZZ_CHECK(m > 0);
        sum += b->geom->n;
    }
    FUZZ_CHECK(sum == n);
    (void)sim_device_bytes(s, n);
    if (scene_boundary_particles(s))
        (void)scene_boundary_count(s);
    return true;
}

/* The particle builder's output: ids, bodies and constraint ends in range. */
static bool fuzz_check_particles(const mz_scene *s)
{
    mz_particles p;
    build_particles(s, &p);
    bool ok = p.n == scene_particle_count(s);
    size_t bodies = s->n_fluids + bodies_count(s);
    for (size_t i = 0; ok && i < p.n; i++)
        ok = p.id[i] == i && p.body[i] < bodies && p.inv_mass[i] >= 0;
    for (size_t c = 0; ok && c < 2 * p.n_constraints; c++)
        ok = p.con_ends[c] < p.n;
    for (size_t t = 0; ok && t < 3 * p.n_triangles; t++)
        ok = p.triangles[t] < p.n;
    particles_free(&p);
    FUZZ_CHECK(ok);
    return true;
}

/* The diagnostics agree with the return code: an error has a message, success none. */
static bool fuzz_check_diag(int rc, const mz_diag *d)
{
    FUZZ_CHECK(rc == 0 || rc == -1);
    FUZZ_CHECK(rc == 0 ? d->count == 0 : d->count > 0);
    for (size_t i = 0; i < d->count; i++)
        FUZZ_CHECK(d->msgs[i] && d->msgs[i][0]);
    return true;
}

/* Load one input. Returns 0 (loaded), 1 (rejected with messages), or -1: an invariant broke
 * (the reason is on stderr). Frees everything. dir: where "obj" paths resolve. */
static int fuzz_scene_input(const uint8_t *data, size_t size, const char *dir)
{
    const char *text = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t len = nul ? (size_t)(nul - data) : size;
    /* overrides: NUL-terminated copies (the last one may lack its NUL in the input) */
    char *sets[FUZZ_MAX_OVERRIDES];
    size_t n_sets = 0;
    for (size_t at = len + 1; nul && at < size && n_sets < FUZZ_MAX_OVERRIDES;) {
        const uint8_t *end = memchr(data + at, 0, size - at);
        size_t n = end ? (size_t)(end - (data + at)) : size - at;
        sets[n_sets] = malloc(n + 1);
        memcpy(sets[n_sets], data + at, n);
        sets[n_sets++][n] = '\0';
        at += n + 1;
    }
    char name[512];
    snprintf(name, sizeof name, "%s/fuzz.json", dir);

    mz_scene s;
    mz_diag d = {0};
    int rc = scene_load_text(text, len, name, (const char *const *)sets, n_sets, &s, &d);
    bool ok = fuzz_check_diag(rc, &d);
    diag_free(&d);
    if (ok && rc == 0) {
        ok = fuzz_check_summary(&s);
        if (ok && scene_particle_count(&s) <= FUZZ_MAX_BUILD)
            ok = fuzz_check_particles(&s);
        /* The effective scene (every key, after overrides and defaults) loads again, to
         * itself: it is what the output file records as the scene that ran. */
        if (ok) {
            mz_scene again;
            int rc2 = scene_load_text(s.effective_json, strlen(s.effective_json), name, NULL, 0,
                                      &again, &d);
            if (rc2 != 0 || strcmp(again.effective_json, s.effective_json)) {
                fprintf(stderr, "fuzz_scene: the effective scene does not reload to itself%s%s\n",
                        d.count ? ": " : "", d.count ? d.msgs[0] : "");
                ok = false;
            }
            diag_free(&d);
            scene_free(&again);
        }
    }
    scene_free(&s);
    scene_free(&s); /* documented as harmless after a free */
    for (size_t i = 0; i < n_sets; i++)
        free(sets[i]);
    return !ok ? -1 : rc == 0 ? 0 : 1;
}

#undef FUZZ_CHECK
#endif
