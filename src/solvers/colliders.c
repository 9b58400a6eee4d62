/* The scene's colliders as the kernels take them (colliders.h). */
#include "solvers/colliders.h"
#include "util/err.h"

#include <math.h>
#include <string.h>

enum { COLLIDER_SPHERE, COLLIDER_BOX, COLLIDER_PLANE, COLLIDER_CAPSULE };

collider_dev *colliders_table(const mz_scene *s, int mover_collider[MZ_MAX_MOVING],
                              int *n_movers)
{
    size_t nsol = s->n_colliders;
    collider_dev *cd = xcalloc(nsol + 1, sizeof *cd);
    *n_movers = 0;
    for (size_t k = 0; k < nsol; k++) {
        const mz_collider *c = &s->colliders[k];
        collider_dev *d = &cd[k];
        d->friction = (cl_float)c->friction;
        d->static_friction = (cl_float)c->static_friction;
        d->mover = -1;
        if (c->has_motion) {
            d->mover = *n_movers;
            mover_collider[(*n_movers)++] = (int)k;
            d->rotation = c->motion.type == MZ_MOTION_ROTATION;
            d->unit = sim_float4(c->motion.unit);
            d->center = sim_float4(c->motion.center);
        }
        if (c->has_sphere) {
            d->type = COLLIDER_SPHERE;
            d->a = sim_float4(c->sphere.center);
            d->radius = (cl_float)c->sphere.radius;
        } else if (c->has_box) {
            double centre[3], half[3];
            for (int a = 0; a < 3; a++) {
                centre[a] = 0.5 * (c->box.min[a] + c->box.max[a]);
                half[a] = 0.5 * (c->box.max[a] - c->box.min[a]);
            }
            d->type = COLLIDER_BOX;
            d->a = sim_float4(centre);
            d->b = sim_float4(half);
        } else if (c->has_plane) {
            double nrm[3], len = 0;
            int dim = s->sim.dimensions;
            for (int a = 0; a < 3; a++)
                len += a < dim ? c->plane.normal[a] * c->plane.normal[a] : 0;
            for (int a = 0; a < 3; a++)
                nrm[a] = a < dim ? c->plane.normal[a] / sqrt(len) : 0;
            d->type = COLLIDER_PLANE;
            d->a = sim_float4(c->plane.point);
            d->b = sim_float4(nrm);
        } else {
            d->type = COLLIDER_CAPSULE;
            d->a = sim_float4(c->capsule.a);
            d->b = sim_float4(c->capsule.b);
            d->radius = (cl_float)c->capsule.radius;
        }
        if (s->sim.dimensions == 2)
            d->a.s[2] = d->b.s[2] = 0.0f;
    }
    return cd;
}

motion_now colliders_now(const mz_scene *s, const int *mover_collider, int n_movers, double t)
{
    motion_now now;
    memset(&now, 0, sizeof now);
    for (int k = 0; k < n_movers; k++) {
        double v[3];
        motion_eval(&s->colliders[mover_collider[k]].motion, t, v);
        for (int q = 0; q < 3; q++)
            now.s[k].s[q] = (cl_float)v[q];
    }
    return now;
}
