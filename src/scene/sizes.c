#include "scene/sizes.h"

#include "scene/bodies.h"

#include <math.h>

size_t scene_lattice_dims(const mz_fluid *f, int dimensions, size_t dims[3])
{
    size_t total = 1;
    for (int a = 0; a < 3; a++) {
        if (a >= dimensions) {
            dims[a] = 1;
            continue;
        }
        /* The tiny allowance keeps 0.4 / 0.01 from landing on 39.999... */
        double cells = floor((f->box.max[a] - f->box.min[a]) / f->spacing + 1e-9);
        dims[a] = cells > 0 && cells < 1e12 ? (size_t)cells : 0;
        total = (dims[a] && total <= SIZE_MAX / dims[a]) ? total * dims[a] : (dims[a] ? SIZE_MAX : 0);
    }
    return total;
}

size_t scene_fluid_count(const mz_fluid *f, int dimensions)
{
    size_t dims[3];
    return f->has_box ? scene_lattice_dims(f, dimensions, dims) : f->positions.n;
}

size_t scene_particle_count(const mz_scene *s)
{
    size_t n = bodies_particle_count(s);
    for (size_t i = 0; i < s->n_fluids; i++) {
        size_t c = scene_fluid_count(&s->fluids[i], s->sim.dimensions);
        n = (n > SIZE_MAX - c) ? SIZE_MAX : n + c;
    }
    return n;
}

int scene_wall_layers(const mz_scene *s)
{
    return (int)ceil(scene_support_radius(s) / s->fluids[0].spacing - 0.5 - 1e-9);
}

double scene_wall_count(const mz_scene *s)
{
    int dim = s->sim.dimensions, layers = scene_wall_layers(s);
    double spacing = s->fluids[0].spacing, inner = 1, outer = 1;
    for (int a = 0; a < dim; a++) {
        double cells = ceil((s->domain.max[a] - s->domain.min[a]) / spacing - 1e-9);
        /* A row of more cells than that has more wall particles than that; and beyond 2^53
         * cells, cells + 2 * layers == cells and the difference below would vanish. */
        if (!(cells <= (double)MZ_MAX_PARTICLES))
            return INFINITY;
        inner *= cells;
        outer *= cells + 2 * layers;
    }
    return outer - inner;
}

/* The lattice index range [lo, hi] covering the collider's bounding box, clipped to the
 * domain's cells; false when it misses the domain. */
static bool collider_range(const mz_scene *s, const mz_collider *c, double spacing,
                           const long cells[3], long lo[3], long hi[3])
{
    int dim = s->sim.dimensions;
    for (int a = 0; a < 3; a++) {
        double bmin = s->domain.min[a], bmax = s->domain.max[a];
        if (c->has_sphere) {
            bmin = c->sphere.center[a] - c->sphere.radius;
            bmax = c->sphere.center[a] + c->sphere.radius;
        } else if (c->has_box) {
            bmin = c->box.min[a];
            bmax = c->box.max[a];
        } else if (c->has_capsule) {
            bmin = fmin(c->capsule.a[a], c->capsule.b[a]) - c->capsule.radius;
            bmax = fmax(c->capsule.a[a], c->capsule.b[a]) + c->capsule.radius;
        }
        double l = a < dim ? floor((bmin - s->domain.min[a]) / spacing - 0.5) : 0;
        double h = a < dim ? ceil((bmax - s->domain.min[a]) / spacing - 0.5) : 0;
        /* clipped before the conversion: a collider far beyond the domain, or larger than it,
         * has indices no long holds */
        if (!(l <= h) || h < 0 || l > (double)(cells[a] - 1))
            return false;
        lo[a] = l < 0 ? 0 : (long)l;
        hi[a] = h > (double)(cells[a] - 1) ? cells[a] - 1 : (long)h;
    }
    return true;
}

size_t scene_collider_samples(const mz_scene *s, size_t which, double spacing, int layers,
                              void (*take)(void *ctx, const double x[3]), void *ctx)
{
    int dim = s->sim.dimensions;
    long cells[3] = {1, 1, 1}, lo[3], hi[3];
    for (int a = 0; a < dim; a++)
        cells[a] = (long)ceil((s->domain.max[a] - s->domain.min[a]) / spacing - 1e-9);
    if (!collider_range(s, &s->colliders[which], spacing, cells, lo, hi))
        return 0;
    size_t count = 0;
    for (long k = lo[2]; k <= hi[2]; k++)
        for (long j = lo[1]; j <= hi[1]; j++)
            for (long i = lo[0]; i <= hi[0]; i++) {
                double x[3] = {s->domain.min[0] + (i + 0.5) * spacing,
                               s->domain.min[1] + (j + 0.5) * spacing,
                               dim == 3 ? s->domain.min[2] + (k + 0.5) * spacing : 0};
                bool taken = false;
                for (size_t c = 0; c <= which && !taken; c++) {
                    double d = collider_distance(&s->colliders[c], x, dim);
                    bool in = d < 0 && d >= -layers * spacing;
                    if (c == which && !in)
                        break;
                    taken = c < which && in;
                    if (c == which) {
                        count++;
                        if (take)
                            take(ctx, x);
                    }
                }
            }
    return count;
}

size_t scene_boundary_count(const mz_scene *s)
{
    double walls = scene_wall_count(s);
    if (!(walls <= (double)MZ_MAX_PARTICLES)) /* a scene refuses that many */
        return SIZE_MAX;
    size_t n = (size_t)walls;
    int layers = scene_wall_layers(s);
    for (size_t c = 0; c < s->n_colliders; c++)
        n += scene_collider_samples(s, c, s->fluids[0].spacing, layers, NULL, NULL);
    return n;
}

size_t scene_moving_boundary_count(const mz_scene *s)
{
    size_t n = 0;
    int layers = scene_wall_layers(s);
    for (size_t c = 0; c < s->n_colliders; c++)
        if (s->colliders[c].has_motion)
            n += scene_collider_samples(s, c, s->fluids[0].spacing, layers, NULL, NULL);
    return n;
}
