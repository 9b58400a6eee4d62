/* The SPH boundary particles where the moving colliders' laws put them at a time (build.h):
 * the output's boundary series. The device places them each step with the same formula
 * (kernels/common/boundary.cl, boundary_pose) in float; here it is double until the store, so the
 * two agree to float rounding. A pure function of the time: a resumed run writes the same. */
#include "build/build.h"

#include "util/err.h"
#include "util/rotate.h"

#include <math.h>
#include <stdlib.h>

bool build_boundary_moves(const mz_scene *s, const float *rest)
{
    long c = (long)rest[3] - MZ_OWNER_COLLIDER; /* a wall's owner is below */
    return c >= 0 && (size_t)c < s->n_colliders && s->colliders[c].has_motion;
}

void build_boundary_at(const mz_scene *s, const float *rest, size_t nb, double t, float *out)
{
    /* The law once per collider, not once per particle. */
    size_t nc = s->n_colliders;
    double *law = xmalloc((nc ? nc : 1) * sizeof *law);
    for (size_t c = 0; c < nc; c++) {
        double v[3] = {0, 0, 0};
        if (s->colliders[c].has_motion)
            motion_eval(&s->colliders[c].motion, t, v);
        law[c] = v[0];
    }
    for (size_t k = 0; k < nb; k++) {
        const float *r = rest + 4 * k;
        float *x = out + 3 * k;
        if (!build_boundary_moves(s, r)) {
            x[0] = r[0], x[1] = r[1], x[2] = r[2];
            continue;
        }
        long c = (long)r[3] - MZ_OWNER_COLLIDER;
        const mz_motion *m = &s->colliders[c].motion;
        const double *u = m->unit, sv = law[c];
        if (m->type == MZ_MOTION_TRANSLATION) {
            for (int a = 0; a < 3; a++)
                x[a] = (float)(r[a] + sv * u[a]);
            continue;
        }
        /* r - centre turned by s about the unit axis u */
        const double *o = m->center;
        double p[3] = {r[0] - o[0], r[1] - o[1], r[2] - o[2]}, q[3];
        rotate_about(u, sv, p, q);
        for (int a = 0; a < 3; a++)
            x[a] = (float)(o[a] + q[a]);
    }
    free(law);
}
