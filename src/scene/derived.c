/* What a validated scene implies beyond its keys: the solver, support radius, speed of sound,
 * FLIP grid, CFL number in force, step sizes, and the colliders' signed distance. */
#include "scene/scene.h"

#include <math.h>

mz_solver_kind scene_solver(const mz_scene *s)
{
    return s->n_fluids ? (mz_solver_kind)s->fluids[0].solver : MZ_SOLVER_BALLISTIC;
}

bool scene_is_sph(const mz_scene *s)
{
    mz_solver_kind k = scene_solver(s);
    return k == MZ_SOLVER_WCSPH || k == MZ_SOLVER_COLLAPSED_SPH || k == MZ_SOLVER_DFSPH;
}

bool scene_boundary_particles(const mz_scene *s)
{
    return s->domain.boundary.type == MZ_BOUNDARY_PARTICLES &&
           (scene_is_sph(s) || scene_solver(s) == MZ_SOLVER_PBF);
}

bool scene_fluid_jittered(const mz_scene *s, const mz_fluid *f)
{
    if (f->seeding == MZ_SEEDING_AUTO)
        return f->has_box && scene_solver(s) == MZ_SOLVER_FLIP;
    return f->has_box && f->seeding == MZ_SEEDING_JITTERED;
}

double scene_cfl(const mz_scene *s)
{
    /* 0.2 for every SPH solver. WCSPH had 0.4 (0.8 spacings over c0 with h two spacings, twice
     * what DualSPHysics's default takes): the peer's dam break blew up at 0.4 and 0.3, a post
     * in its surge at 0.4, a fast piston's flume at 0.4; all run at 0.2. */
    return s->sim.cfl > 0 ? s->sim.cfl : 0.2;
}

double scene_support_radius(const mz_scene *s)
{
    const mz_fluid *f = &s->fluids[0];
    return f->support_radius > 0 ? f->support_radius : 2.0 * f->spacing;
}

void scene_flip_grid(const mz_scene *s, int cells[3], double cell[3])
{
    const mz_fluid *f = &s->fluids[0];
    double want = f->cell_size > 0 ? f->cell_size : 2.0 * f->spacing;
    for (int a = 0; a < 3; a++) {
        double len = s->domain.max[a] - s->domain.min[a], n = 1;
        if (a < s->sim.dimensions)
            n = fmax(1.0, fmin(round(len / want), 1073741824.0));
        cells[a] = (int)n;
        cell[a] = a < s->sim.dimensions ? len / n : want;
    }
}

/* c0 = 10 × the largest speed the flow should reach: free fall from the highest fluid particle
 * to the lowest corner of the domain, heights measured against gravity, the fastest initial
 * velocity, or what a moving domain's motion gives it. */
double scene_speed_of_sound(const mz_scene *s)
{
    const mz_fluid *f0 = &s->fluids[0];
    if (f0->speed_of_sound > 0)
        return f0->speed_of_sound;
    const double *g = s->sim.gravity;
    double g_len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]), v2 = 0;
    /* height of p along −ĝ */
#define UP(p) (g_len > 0 ? -((p)[0] * g[0] + (p)[1] * g[1] + (p)[2] * g[2]) / g_len : 0.0)
    double floor_h = INFINITY;
    for (int corner = 0; corner < 8; corner++) {
        double c[3];
        for (int a = 0; a < 3; a++)
            c[a] = (corner >> a & 1) ? s->domain.max[a] : s->domain.min[a];
        floor_h = fmin(floor_h, UP(c));
    }
    for (size_t i = 0; i < s->n_fluids; i++) {
        const mz_fluid *f = &s->fluids[i];
        double top = -INFINITY;
        for (int corner = 0; f->has_box && corner < 8; corner++) {
            double c[3];
            for (int a = 0; a < 3; a++)
                c[a] = (corner >> a & 1) ? f->box.max[a] : f->box.min[a];
            top = fmax(top, UP(c));
        }
        for (size_t k = 0; k < f->positions.n; k++)
            top = fmax(top, UP(f->positions.p[k]));
        if (top > floor_h)
            v2 = fmax(v2, 2.0 * g_len * (top - floor_h));
        const double *v = f->velocity;
        v2 = fmax(v2, v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for (size_t k = 0; k < f->velocities.n; k++) {
            const double *u = f->velocities.p[k];
            v2 = fmax(v2, u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        }
    }
#undef UP
    /* A moving domain: the speed its motion gives the water, and a fall across the domain at
     * its acceleration (a shaken tank's water moves faster than gravity alone makes it). */
    double fs, fa, diag2 = 0;
    scene_frame_extremes(s, &fs, &fa);
    for (int a = 0; a < s->sim.dimensions; a++)
        diag2 += (s->domain.max[a] - s->domain.min[a]) * (s->domain.max[a] - s->domain.min[a]);
    v2 = fmax(v2, fmax(fs * fs, 2.0 * fa * sqrt(diag2)));
    return 10.0 * sqrt(v2);
}

double collider_distance(const mz_collider *c, const double p[3], int dim)
{
    double d = 0;
    if (c->has_sphere) {
        for (int a = 0; a < dim; a++)
            d += (p[a] - c->sphere.center[a]) * (p[a] - c->sphere.center[a]);
        return sqrt(d) - c->sphere.radius;
    }
    if (c->has_box) {
        /* distance outside, or minus the distance to the nearest face inside */
        double outside = 0, inside = -INFINITY;
        for (int a = 0; a < dim; a++) {
            double q = fabs(p[a] - 0.5 * (c->box.min[a] + c->box.max[a])) -
                       0.5 * (c->box.max[a] - c->box.min[a]);
            outside += q > 0 ? q * q : 0;
            inside = fmax(inside, q);
        }
        return outside > 0 ? sqrt(outside) : inside;
    }
    if (c->has_capsule) {
        /* distance to the nearest point of the segment, less the radius */
        const double *a = c->capsule.a, *b = c->capsule.b;
        double ab2 = 0, t = 0;
        for (int k = 0; k < dim; k++) {
            ab2 += (b[k] - a[k]) * (b[k] - a[k]);
            t += (p[k] - a[k]) * (b[k] - a[k]);
        }
        t = ab2 > 0 ? fmin(fmax(t / ab2, 0.0), 1.0) : 0.0;
        for (int k = 0; k < dim; k++) {
            double q = p[k] - (a[k] + t * (b[k] - a[k]));
            d += q * q;
        }
        return sqrt(d) - c->capsule.radius;
    }
    double len = 0;
    for (int a = 0; a < dim; a++) {
        d += (p[a] - c->plane.point[a]) * c->plane.normal[a];
        len += c->plane.normal[a] * c->plane.normal[a];
    }
    return d / sqrt(len);
}

double scene_frame_dt(const mz_scene *s) { return 1.0 / s->sim.fps; }
double scene_substep_dt(const mz_scene *s) { return 1.0 / (s->sim.fps * scene_steps_per_frame(s)); }

/* PBF's multiplier at the foot of a resting column H deep is λ = −dt² p/ρ0 = −dt² |g| H per
 * substep. Past about (0.37 h)² the rows nearest the floor swap within one step and the floor
 * row is squeezed sideways, whatever holds the fluid (table, clamp or particle walls, box
 * colliders): a 2D tank 1 m wide at 2 iterations (h 2 cm, 2 s) kept still at dt sqrt(|g| H)/h
 * = 0.41 (H 0.1 m), 0.36 (0.3 m) and 0.35 (0.5 m) and blew up at 0.50, 0.39 and 0.39; at 8
 * iterations (0.3 m) still at 0.48, blown at 0.54. */
double scene_fluid_depth(const mz_scene *s)
{
    const double *g = s->sim.gravity;
    double g_len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    if (!(g_len > 0))
        return 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < s->n_fluids; i++) {
        const mz_fluid *f = &s->fluids[i];
        for (int corner = 0; f->has_box && corner < 8; corner++) {
            double c[3], up = 0;
            for (int a = 0; a < 3; a++)
                c[a] = (corner >> a & 1) ? f->box.max[a] : f->box.min[a];
            for (int a = 0; a < 3; a++)
                up -= c[a] * g[a] / g_len;
            lo = fmin(lo, up);
            hi = fmax(hi, up);
        }
        for (size_t k = 0; k < f->positions.n; k++) {
            double up = 0;
            for (int a = 0; a < 3; a++)
                up -= f->positions.p[k][a] * g[a] / g_len;
            lo = fmin(lo, up - 0.5 * f->spacing);
            hi = fmax(hi, up + 0.5 * f->spacing);
        }
    }
    return hi > lo ? hi - lo : 0;
}

double scene_pbf_step_limit(const mz_scene *s, double *depth)
{
    if (depth)
        *depth = 0;
    const double *g = s->sim.gravity;
    double g_len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    if (scene_solver(s) != MZ_SOLVER_PBF || !(g_len > 0))
        return INFINITY;
    double H = scene_fluid_depth(s);
    if (!(H > 0))
        return INFINITY;
    if (depth)
        *depth = H;
    return MZ_PBF_DEPTH_LIMIT * scene_support_radius(s) / sqrt(g_len * H);
}

int scene_steps_per_frame(const mz_scene *s)
{
    int k = s->sim.substeps;
    if (!s->sim.adaptive || scene_solver(s) != MZ_SOLVER_PBF)
        return k;
    double need = ceil(scene_frame_dt(s) / scene_pbf_step_limit(s, NULL) - 1e-9);
    return need > k ? (need < 100000 ? (int)need : 100000) : k;
}
