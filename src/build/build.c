#include "build/build.h"

#include "scene/bodies.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double build_lattice_kernel_sum(double spacing, double h, int dimensions)
{
    double pi = acos(-1.0), sum = 0;
    double c = dimensions == 3 ? 315.0 / (64.0 * pi * pow(h, 9)) : 4.0 / (pi * pow(h, 8));
    int reach = (int)ceil(h / spacing), zr = dimensions == 3 ? reach : 0;
    for (int k = -zr; k <= zr; k++)
        for (int j = -reach; j <= reach; j++)
            for (int i = -reach; i <= reach; i++) {
                double q = h * h - (double)(i * i + j * j + k * k) * spacing * spacing;
                if (q > 0)
                    sum += c * q * q * q;
            }
    return sum * pow(spacing, dimensions);
}

double build_lattice_gradient_sum(double spacing, double h, int dimensions)
{
    double pi = acos(-1.0), sum = 0;
    double c = dimensions == 3 ? -45.0 / (pi * pow(h, 6)) : -30.0 / (pi * pow(h, 5));
    int reach = (int)ceil(h / spacing), zr = dimensions == 3 ? reach : 0;
    for (int k = -zr; k <= zr; k++)
        for (int j = -reach; j <= reach; j++)
            for (int i = -reach; i <= reach; i++) {
                double x = i * spacing, r = spacing * sqrt((double)(i * i + j * j + k * k));
                if (r == 0 || r >= h)
                    continue;
                /* x_i = 0, x_j = (x, ..): ∇_i W_ij = c (h − r)² (x_i − x_j)/r */
                sum += x * (c * (h - r) * (h - r) * (-x) / r);
            }
    return sum * pow(spacing, dimensions);
}

double build_wall_laplacian_sum(double spacing, double h, int dimensions, double volume,
                                double lap)
{
    int reach = (int)ceil(h / spacing), zr = dimensions == 3 ? reach : 0;
    double sum = 0;
    for (int layer = 0; layer <= reach; layer++)      /* fluid at (layer + ½) spacing */
        for (int below = 0; below <= reach; below++)  /* wall at −(below + ½) spacing */
            for (int k = -zr; k <= zr; k++)
                for (int i = -reach; i <= reach; i++) {
                    double dy = layer + below + 1.0;
                    double r = spacing * sqrt(i * i + k * k + dy * dy);
                    if (r < h)
                        sum += volume * lap * (h - r);
                }
    return sum;
}

double build_particle_mass(const mz_scene *s, const mz_fluid *f)
{
    int dim = s->sim.dimensions;
    if (f->mass > 0)
        return f->mass;
    double m = f->rest_density * pow(f->spacing, dim);
    /* continuity density (SPH) starts at ρ0 on the lattice: a particle weighs its cell */
    if ((scene_is_sph(s) && f->density_method != MZ_DENSITY_CONTINUITY) ||
        scene_solver(s) == MZ_SOLVER_PBF)
        m /= build_lattice_kernel_sum(f->spacing, scene_support_radius(s), dim);
    return m;
}

/* A uniform number in [0, 1) for (seed, particle id, axis): splitmix64's finaliser over the
 * three, so a particle's jitter is the same whoever builds it (every rank, any order). */
static double jitter_uniform(uint64_t seed, uint64_t id, int axis)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + (3 * id + (uint64_t)axis + 1) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void put(mz_particles *p, size_t i, size_t id, const double x[3], const double v[3],
                float radius, float inv_mass, uint32_t body, int dimensions)
{
    p->phase[i] = MZ_PHASE_FLUID;
    bool flat = dimensions == 2;
    p->pos[4 * i + 0] = (float)x[0];
    p->pos[4 * i + 1] = (float)x[1];
    p->pos[4 * i + 2] = flat ? 0.0f : (float)x[2];
    p->pos[4 * i + 3] = radius;
    p->vel[4 * i + 0] = (float)v[0];
    p->vel[4 * i + 1] = (float)v[1];
    p->vel[4 * i + 2] = flat ? 0.0f : (float)v[2];
    p->vel[4 * i + 3] = 0.0f;
    p->inv_mass[i] = inv_mass;
    p->id[i] = (uint32_t)id;
    p->body[i] = body;
}

static void build_bodies(const mz_scene *s, mz_particles *p, size_t first, size_t id);

static void alloc_particles(mz_particles *p, size_t n)
{
    p->pos = xrealloc(p->pos, 4 * n * sizeof *p->pos);
    p->vel = xrealloc(p->vel, 4 * n * sizeof *p->vel);
    p->inv_mass = xrealloc(p->inv_mass, n * sizeof *p->inv_mass);
    p->id = xrealloc(p->id, n * sizeof *p->id);
    p->body = xrealloc(p->body, n * sizeof *p->body);
    p->phase = xrealloc(p->phase, n * sizeof *p->phase);
}

/* A fluid's particles (d: its lattice's dimensions when it is a box). */
static size_t fluid_count(const mz_scene *s, const mz_fluid *f, size_t d[3])
{
    if (!f->has_box)
        return f->positions.n;
    scene_lattice_dims(f, s->sim.dimensions, d);
    return d[0] * d[1] * d[2];
}

/* The body index (or, with phase, the MZ_PHASE_*) of ids [first, first + count): the fluids'
 * ids, then each body's, in the builder's order. */
static void of_ids(const mz_scene *s, size_t first, size_t count, uint32_t *out, bool phase)
{
    size_t end = 0, d[3], i = 0, nb = s->n_fluids + bodies_count(s);
    for (size_t b = 0; b < nb && i < count; b++) {
        bool fluid = b < s->n_fluids;
        end += fluid ? fluid_count(s, &s->fluids[b], d) : bodies_get(s, b - s->n_fluids)->geom->n;
        uint32_t v = !phase ? (uint32_t)b
                     : fluid ? MZ_PHASE_FLUID
                             : (uint32_t)bodies_get(s, b - s->n_fluids)->geom->phase;
        for (; i < count && first + i < end; i++)
            out[i] = v;
    }
}

void build_body_of_ids(const mz_scene *s, size_t first, size_t count, uint32_t *body)
{
    of_ids(s, first, count, body, false);
}

void build_phase_of_ids(const mz_scene *s, size_t first, size_t count, uint32_t *phase)
{
    of_ids(s, first, count, phase, true);
}

/* The fluids' particles, ids from 0, those keep takes (all without keep) from slot 0 on, the
 * arrays grown as needed (*room slots). Returns the slots filled. */
static size_t build_fluids(const mz_scene *s, mz_particles *p, size_t *room, build_keep_fn keep,
                           void *ctx)
{
    int dim = s->sim.dimensions;
    size_t i = 0, id = 0;
    for (size_t b = 0; b < s->n_fluids; b++) {
        const mz_fluid *f = &s->fluids[b];
        float radius = (float)(0.5 * f->spacing);
        float w = (float)(1.0 / build_particle_mass(s, f));
        size_t d[3] = {0, 1, 1}, count = fluid_count(s, f, d);
        bool jitter = scene_fluid_jittered(s, f);
        /* Boxes: x fastest, then y, then z, so neighbouring ids are neighbours in space. */
        for (size_t k = 0; k < count; k++, id++) {
            double x[3];
            const double *v = f->velocity;
            if (f->has_box) {
                size_t ix = k % d[0], iy = k / d[0] % d[1], iz = k / (d[0] * d[1]);
                size_t ijk[3] = {ix, iy, iz};
                for (int a = 0; a < 3; a++) {
                    double u = jitter && a < dim ? jitter_uniform((uint64_t)s->sim.seed, id, a)
                                                 : 0.5;
                    x[a] = f->box.min[a] + (ijk[a] + u) * f->spacing;
                }
            } else {
                memcpy(x, f->positions.p[k], sizeof x);
                if (f->velocities.n)
                    v = f->velocities.p[k];
            }
            float xf[3] = {(float)x[0], (float)x[1], dim == 2 ? 0.0f : (float)x[2]};
            if (keep && !keep(ctx, xf))
                continue;
            if (i == *room) {
                *room = *room ? 2 * *room : 1024;
                alloc_particles(p, *room);
            }
            put(p, i++, id, x, v, radius, w, (uint32_t)b, dim);
        }
    }
    return i;
}

/* The fluids' particles: the ids before the first body's. */
static size_t fluid_ids(const mz_scene *s)
{
    size_t n = 0, d[3];
    for (size_t b = 0; b < s->n_fluids; b++)
        n += fluid_count(s, &s->fluids[b], d);
    return n;
}

/* Particle `from` into slot `to` (to <= from). */
static void move_particle(mz_particles *p, size_t to, size_t from)
{
    if (to == from)
        return;
    memcpy(&p->pos[4 * to], &p->pos[4 * from], 4 * sizeof *p->pos);
    memcpy(&p->vel[4 * to], &p->vel[4 * from], 4 * sizeof *p->vel);
    p->inv_mass[to] = p->inv_mass[from];
    p->id[to] = p->id[from];
    p->body[to] = p->body[from];
    p->phase[to] = p->phase[from];
}

void build_particles(const mz_scene *s, mz_particles *p)
{
    size_t n = scene_particle_count(s);
    memset(p, 0, sizeof *p);
    alloc_particles(p, n ? n : 1);
    p->n = p->n_total = n;
    size_t fluid = build_fluids(s, p, &n, NULL, NULL);
    build_bodies(s, p, fluid, fluid);
}

void build_particles_where(const mz_scene *s, mz_particles *p, build_keep_fn keep, void *ctx)
{
    memset(p, 0, sizeof *p);
    size_t room = 0, fluid = build_fluids(s, p, &room, keep, ctx);
    size_t total = scene_particle_count(s), bodies = total - fluid_ids(s);
    if (bodies > 0 && room < fluid + bodies) /* every body particle first, then those kept */
        alloc_particles(p, fluid + bodies);
    p->n = fluid;
    p->n_total = total;
    build_bodies(s, p, fluid, fluid_ids(s)); /* the constraints and triangles whole, by id */
    size_t kept = fluid;
    for (size_t i = fluid; i < fluid + bodies; i++) {
        const float *x = &p->pos[4 * i];
        float xf[3] = {x[0], x[1], x[2]};
        if (keep && !keep(ctx, xf))
            continue;
        move_particle(p, kept++, i);
    }
    p->n = kept;
}

void build_body_particles(const mz_scene *s, mz_particles *p)
{
    memset(p, 0, sizeof *p);
    size_t total = scene_particle_count(s), first = fluid_ids(s), n = total - first;
    alloc_particles(p, n ? n : 1);
    p->n = n;
    p->n_total = total;
    build_bodies(s, p, 0, first);
}

/* The cloths and meshes after the fluids: particles from slot `first` on, ids from `id`, their
 * constraints and triangles (in particle ids). */
static void build_bodies(const mz_scene *s, mz_particles *p, size_t first, size_t id)
{
    int dim = s->sim.dimensions;
    size_t nc = bodies_constraint_count(s), nt = 0, c = 0, t = 0, at = first, i = id;
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body *b = bodies_get(s, k);
        nt += b->geom->n_tris;
    }
    p->n_constraints = nc;
    p->con_ends = xcalloc(2 * nc + 2, sizeof *p->con_ends);
    p->con_params = xcalloc(4 * nc + 4, sizeof *p->con_params);
    p->n_triangles = nt;
    p->triangles = xcalloc(3 * nt + 3, sizeof *p->triangles);
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body *b = bodies_get(s, k);
        mz_body_geom *g = b->geom;
        bodies_make(g);
        uint32_t body = (uint32_t)(s->n_fluids + k);
        float w = (float)(1.0 / bodies_particle_mass(s, b));
        double com[3] = {0, 0, 0}; /* rigids spin about their centre of mass */
        for (size_t j = 0; j < g->n; j++)
            for (int a = 0; a < 3; a++)
                com[a] += g->x[j][a] / (double)g->n;
        for (size_t j = 0; j < g->n; j++) {
            double v[3], r[3];
            const double *om = b->angular_velocity;
            for (int a = 0; a < 3; a++)
                r[a] = g->x[j][a] - com[a];
            v[0] = b->velocity[0] + om[1] * r[2] - om[2] * r[1];
            v[1] = b->velocity[1] + om[2] * r[0] - om[0] * r[2];
            v[2] = b->velocity[2] + om[0] * r[1] - om[1] * r[0];
            put(p, at + j, i + j, g->x[j], g->phase == MZ_PHASE_RIGID ? v : b->velocity,
                (float)(0.5 * g->thickness), g->pinned[j] ? 0.0f : w, body, dim);
            p->phase[at + j] = (uint32_t)g->phase;
        }
        for (size_t e = 0; e < g->n_stretch + g->n_bend; e++) {
            bool bend = e >= g->n_stretch;
            const uint32_t *pair = bend ? g->bend[e - g->n_stretch] : g->stretch[e];
            const double *xa = g->x[pair[0]], *xb = g->x[pair[1]];
            double r2 = 0;
            for (int a = 0; a < dim; a++)
                r2 += (xa[a] - xb[a]) * (xa[a] - xb[a]);
            p->con_ends[2 * c + 0] = (uint32_t)(i + pair[0]);
            p->con_ends[2 * c + 1] = (uint32_t)(i + pair[1]);
            p->con_params[4 * c + 0] = (float)sqrt(r2);
            p->con_params[4 * c + 1] = (float)(bend ? b->bending_compliance : b->compliance);
            /* PBD stiffness applies to the stretch constraints it was given for; compliant
             * (XPBD) bending never takes it */
            p->con_params[4 * c + 2] = bend && b->bending_compliance > 0 ? 1.0f : (float)b->stiffness;
            c++;
        }
        for (size_t j = 0; j < g->n_tris; j++, t++)
            for (int a = 0; a < 3; a++)
                p->triangles[3 * t + a] = (uint32_t)(i + g->tris[j][a]);
        i += g->n;
        at += g->n;
    }
}

/* The wall a shell particle (lattice index idx) lies furthest beyond; a tie (edges, corners)
 * goes to the wall across `down`, gravity's main axis, then to the later axis. */
static int wall_owner(const long idx[3], const long cells[3], int dim, int down)
{
    long beyond = 0;
    int owner = 0;
    for (int k = 0; k < dim; k++) {
        int a = (down + 1 + k) % dim; /* down last */
        long below = -idx[a], above = idx[a] - cells[a] + 1;
        if (below > 0 && below >= beyond)
            beyond = below, owner = 2 * a;
        if (above > 0 && above >= beyond)
            beyond = above, owner = 2 * a + 1;
    }
    return owner;
}

size_t build_wall_particles(const mz_scene *s, double spacing, int layers, float **pos)
{
    int dim = s->sim.dimensions, down = 1;
    for (int a = 0; a < dim; a++)
        if (fabs(s->sim.gravity[a]) > fabs(s->sim.gravity[down]))
            down = a;
    long cells[3] = {1, 1, 1}; /* lattice cells across the domain; the last may poke out */
    for (int a = 0; a < dim; a++)
        cells[a] = (long)ceil((s->domain.max[a] - s->domain.min[a]) / spacing - 1e-9);
    long lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int a = 0; a < dim; a++) {
        lo[a] = -layers;
        hi[a] = cells[a] + layers - 1;
    }
    size_t n = 0, cap = 1024;
    float *p = xmalloc(4 * cap * sizeof *p);
    for (long k = lo[2]; k <= hi[2]; k++)
        for (long j = lo[1]; j <= hi[1]; j++)
            for (long i = lo[0]; i <= hi[0]; i++) {
                long idx[3] = {i, j, k};
                bool outside = false;
                for (int a = 0; a < dim; a++)
                    outside |= idx[a] < 0 || idx[a] >= cells[a];
                if (!outside) {
                    i = cells[0] - 1; /* jump across the domain's interior in this row */
                    continue;
                }
                if (n == cap) {
                    cap *= 2;
                    p = xrealloc(p, 4 * cap * sizeof *p);
                }
                for (int a = 0; a < 3; a++)
                    p[4 * n + a] = a < dim ? (float)(s->domain.min[a] + ((double)idx[a] + 0.5) *
                                                                            spacing)
                                           : 0.0f;
                p[4 * n + 3] = (float)wall_owner(idx, cells, dim, down);
                n++;
            }
    *pos = p;
    return n;
}

/* Appends one sample to the builder's growing array. */
typedef struct sample_sink {
    float **pos;
    size_t n, cap;
    float owner;
} sample_sink;

static void take_sample(void *ctx, const double x[3])
{
    sample_sink *k = ctx;
    if (k->n == k->cap) {
        k->cap *= 2;
        *k->pos = xrealloc(*k->pos, 4 * k->cap * sizeof **k->pos);
    }
    for (int a = 0; a < 3; a++)
        (*k->pos)[4 * k->n + a] = (float)x[a];
    (*k->pos)[4 * k->n + 3] = k->owner;
    k->n++;
}

size_t build_collider_particles(const mz_scene *s, double spacing, int layers, float **pos,
                                size_t n)
{
    sample_sink sink = {pos, n, n + 1024, 0.0f};
    *pos = xrealloc(*pos, 4 * sink.cap * sizeof **pos);
    for (size_t c = 0; c < s->n_colliders; c++) {
        sink.owner = (float)(MZ_OWNER_COLLIDER + (int)c);
        scene_collider_samples(s, c, spacing, layers, take_sample, &sink);
    }
    return sink.n;
}

double build_host_bytes(const mz_scene *s, size_t n)
{
    double bytes = 48.0 * (double)n + 24.0 * (double)bodies_constraint_count(s);
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body_geom *g = bodies_get(s, k)->geom;
        bytes += 12.0 * (double)g->n_tris;
        if (g->inside) /* made by bodies_make: positions, pairs, the cell index */
            bytes += 24.0 * (double)g->n + 8.0 * (double)g->n_stretch +
                     4.0 * (double)(g->dims[0] * g->dims[1] * g->dims[2]);
    }
    if (s->domain.boundary.type == MZ_BOUNDARY_PARTICLES)
        bytes += 16.0 * (double)scene_boundary_count(s);
    return bytes;
}

void particles_free_uploaded(mz_particles *p)
{
    free(p->pos);
    free(p->vel);
    free(p->inv_mass);
    free(p->id);
    p->pos = p->vel = p->inv_mass = NULL;
    p->id = NULL;
}

void particles_free(mz_particles *p)
{
    particles_free_uploaded(p);
    free(p->body);
    free(p->phase);
    free(p->con_ends);
    free(p->con_params);
    free(p->triangles);
    *p = (mz_particles){0};
}
