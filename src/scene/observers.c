/* The checks of probes[], gauges[] and the forces measured on solids (colliders[].forces,
 * domain.boundary.forces): names that make HDF5 groups, points inside the domain, fields the
 * solver has, solvers that measure forces. An empty probes[].fields becomes every field the
 * solver has; a load's missing `about`, the solid's centre. */
#include "scene/fields.h"
#include "scene/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most points a gauge samples (one every half spacing). */
#define MAX_GAUGE_POINTS 100000

static bool in_domain(const mz_domain *dom, const double *p, int dim)
{
    for (int a = 0; a < dim; a++)
        if (!(p[a] >= dom->min[a] && p[a] <= dom->max[a]))
            return false;
    return true;
}

/* A name that is one HDF5 link: letters, digits, '_', '-', '.', not "." or "..". */
static bool good_name(const char *name)
{
    if (!name || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '.'))
            return false;
    return true;
}

/* The name of list[i] (stride bytes apart, name first): good and not one before it. */
static void check_name(const void *list, size_t stride, size_t i, const char *what, mz_diag *d)
{
    const char *name = *(char *const *)((const char *)list + i * stride);
    if (!good_name(name)) {
        diag_add(d, "%s[%zu].name \"%s\": use letters, digits, '_', '-' and '.' (it names an "
                    "HDF5 group)", what, i, name ? name : "");
        return;
    }
    for (size_t k = 0; k < i; k++)
        if (strcmp(*(char *const *)((const char *)list + k * stride), name) == 0) {
            diag_add(d, "%s[%zu].name \"%s\" is taken by %s[%zu]: names must differ", what, i,
                     name, what, k);
            return;
        }
}

double scene_gauge_length(const mz_scene *s, const mz_gauge *g)
{
    double len2 = 0;
    for (int a = 0; a < s->sim.dimensions; a++)
        len2 += (g->end[a] - g->start[a]) * (g->end[a] - g->start[a]);
    return sqrt(len2);
}

size_t scene_gauge_points(const mz_scene *s, const mz_gauge *g)
{
    double points = ceil(scene_gauge_length(s, g) / (0.5 * s->fluids[0].spacing)) + 1;
    /* Checked before the particle counts: a spacing small enough to overflow is refused here
     * (past MAX_GAUGE_POINTS), never converted out of range. */
    return points <= 1e15 ? (size_t)points : (size_t)1e15;
}

const char *const mz_wall_names[6] = {"x_min", "x_max", "y_min", "y_max", "z_min", "z_max"};

size_t scene_load_count(const mz_scene *s)
{
    size_t n = 0;
    for (size_t c = 0; c < s->n_colliders; c++)
        n += s->colliders[c].has_forces;
    return n + (s->domain.boundary.has_forces ? 2 * (size_t)s->sim.dimensions : 0);
}

mz_load_ref scene_load_ref(const mz_scene *s, size_t k)
{
    for (size_t c = 0; c < s->n_colliders; c++)
        if (s->colliders[c].has_forces && k-- == 0)
            return (mz_load_ref){s->colliders[c].name, false, MZ_OWNER_COLLIDER + (int)c,
                                 &s->colliders[c].forces};
    return (mz_load_ref){mz_wall_names[k], true, (int)k, &s->domain.boundary.forces};
}

/* A collider's centre: where its torque is taken about unless the scene says. */
static void collider_centre(const mz_collider *c, double out[3])
{
    for (int a = 0; a < 3; a++)
        out[a] = c->has_sphere ? c->sphere.center[a]
                 : c->has_box  ? 0.5 * (c->box.min[a] + c->box.max[a])
                 : c->has_plane ? c->plane.point[a]
                                : 0.5 * (c->capsule.a[a] + c->capsule.b[a]);
}

/* Forces are measured on SPH's boundary particles (walls and colliders as particles). A collider
 * whose forces are measured or that moves needs a name: it names its output group. */
static void validate_loads(mz_scene *s, mz_diag *d)
{
    bool walls = s->domain.boundary.has_forces;
    size_t n_loads = scene_load_count(s);
    if (n_loads > 0 && s->n_fluids == 0) {
        diag_add(d, "forces on solids come from a fluid: the scene has no fluids");
        return;
    }
    if (n_loads > 0) {
        if (scene_is_sph(s) && s->domain.boundary.type != MZ_BOUNDARY_PARTICLES)
            diag_add(d, "domain.boundary.forces: SPH measures the forces on its boundary "
                        "particles: set domain.boundary.type to \"particles\"");
    }
    if (walls && !s->domain.boundary.forces.has_about) {
        for (int a = 0; a < 3; a++)
            s->domain.boundary.forces.about[a] = 0.5 * (s->domain.min[a] + s->domain.max[a]);
        s->domain.boundary.forces.has_about = true;
    }
    double (*centre)[3] = xcalloc(s->n_colliders + 1, sizeof *centre);
    for (size_t c = 0; c < s->n_colliders; c++) {
        mz_collider *co = &s->colliders[c];
        collider_centre(co, centre[c]);
        if (!co->has_forces && !co->has_motion)
            continue;
        const char *why = co->has_forces ? "forces" : "motion";
        if (!co->name) {
            diag_add(d, "colliders[%zu].%s: give the collider a name (it names the output "
                        "group /observables/colliders/<name>)", c, why);
            continue;
        }
        if (!good_name(co->name))
            diag_add(d, "colliders[%zu].name \"%s\": use letters, digits, '_', '-' and '.' (it "
                        "names an HDF5 group)", c, co->name);
        for (size_t k = 0; k < c; k++)
            if ((s->colliders[k].has_forces || s->colliders[k].has_motion) &&
                s->colliders[k].name && strcmp(s->colliders[k].name, co->name) == 0)
                diag_add(d, "colliders[%zu].name \"%s\" is taken by colliders[%zu]: colliders "
                            "whose forces are measured or that move need names of their own",
                         c, co->name, k);
        if (co->has_forces && !co->forces.has_about) {
            memcpy(co->forces.about, centre[c], sizeof co->forces.about);
            co->forces.has_about = true;
        }
    }
    validate_motion(s, (const double(*)[3])centre, d);
    free(centre);
}

void validate_observers(mz_scene *s, unsigned produced, mz_diag *d)
{
    validate_loads(s, d);
    if (s->n_probes + s->n_gauges == 0)
        return;
    if (s->n_fluids == 0) {
        diag_add(d, "probes and gauges sample a fluid: the scene has no fluids");
        return;
    }
    if (s->n_probes > MZ_MAX_OBSERVERS || s->n_gauges > MZ_MAX_OBSERVERS) {
        diag_add(d, "%s: at most %d are supported", s->n_probes > MZ_MAX_OBSERVERS ? "probes"
                                                                                  : "gauges",
                 MZ_MAX_OBSERVERS);
        return;
    }
    int dim = s->sim.dimensions;
    unsigned has = MZ_PROBE_FIELD_BIT(MZ_PROBE_VELOCITY) | MZ_PROBE_FIELD_BIT(MZ_PROBE_FRACTION);
    if (produced & MZ_FIELD_BIT(MZ_FIELD_PRESSURE))
        has |= MZ_PROBE_FIELD_BIT(MZ_PROBE_PRESSURE);
    if (produced & MZ_FIELD_BIT(MZ_FIELD_DENSITY))
        has |= MZ_PROBE_FIELD_BIT(MZ_PROBE_DENSITY);
    for (size_t i = 0; i < s->n_probes; i++) {
        mz_probe *p = &s->probes[i];
        check_name(s->probes, sizeof *p, i, "probes", d);
        if (!in_domain(&s->domain, p->position, dim))
            diag_add(d, "probes[%zu].position (%g, %g, %g) lies outside the domain", i,
                     p->position[0], p->position[1], p->position[2]);
        if (p->fields == 0)
            p->fields = has;
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++)
            if (p->fields & ~has & MZ_PROBE_FIELD_BIT(f))
                diag_add(d, "probes[%zu].fields: the %s solver has no %s", i,
                         mz_solver_names[scene_solver(s)], mz_probe_field_names[f]);
    }
    for (size_t i = 0; i < s->n_gauges; i++) {
        const mz_gauge *g = &s->gauges[i];
        check_name(s->gauges, sizeof *g, i, "gauges", d);
        if (!in_domain(&s->domain, g->start, dim) || !in_domain(&s->domain, g->end, dim))
            diag_add(d, "gauges[%zu]: start and end must lie inside the domain", i);
        else if (scene_gauge_points(s, g) < 2)
            diag_add(d, "gauges[%zu]: start and end are the same point", i);
        else if (scene_gauge_points(s, g) > MAX_GAUGE_POINTS)
            diag_add(d, "gauges[%zu] is %zu half spacings long; at most %d are supported", i,
                     scene_gauge_points(s, g) - 1, MAX_GAUGE_POINTS - 1);
    }
}
