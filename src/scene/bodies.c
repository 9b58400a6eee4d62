#include "scene/bodies.h"

#include "scene/mesh.h"
#include "util/hostmem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most particles one body may have, and lattice points one voxelised mesh may span. A
 * fuzzing build (`make fuzz` defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, libFuzzer's and
 * OSS-Fuzz's convention) lowers them, so that its inputs cannot spend the fuzzer's memory limit
 * on a scene that is merely large. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define BODY_MAX_POINTS 1e6
#define LATTICE_MAX_POINTS 2e6
#else
#define BODY_MAX_POINTS 2e8
#define LATTICE_MAX_POINTS 2e9
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

static const int plane_axes[3][2] = {[MZ_PLANE_XZ] = {0, 2},
                                     [MZ_PLANE_XY] = {0, 1},
                                     [MZ_PLANE_YZ] = {1, 2}};

/* The grid as a triangle mesh: particle (u, v) is vertex v·nu + u; each quad is split along
 * alternating diagonals so that the cloth has no preferred shear direction. */
static void cloth_grid_mesh(const mz_body *b, mz_mesh *m)
{
    int nu = b->grid.resolution[0], nv = b->grid.resolution[1];
    const int *ax = plane_axes[b->grid.plane];
    m->n_verts = (size_t)nu * (size_t)nv;
    m->v = xcalloc(m->n_verts, sizeof *m->v);
    for (int v = 0; v < nv; v++)
        for (int u = 0; u < nu; u++) {
            double *x = m->v[(size_t)v * nu + u];
            memcpy(x, b->grid.origin, sizeof(double[3]));
            x[ax[0]] += b->grid.size[0] * u / (nu - 1);
            x[ax[1]] += b->grid.size[1] * v / (nv - 1);
        }
    m->n_tris = 2 * (size_t)(nu - 1) * (size_t)(nv - 1);
    m->tri = xcalloc(m->n_tris, sizeof *m->tri);
    size_t t = 0;
    for (int v = 0; v + 1 < nv; v++)
        for (int u = 0; u + 1 < nu; u++) {
            uint32_t a = (uint32_t)(v * nu + u), bb = a + 1, c = a + (uint32_t)nu, dd = c + 1;
            if ((u + v) % 2 == 0) {
                memcpy(m->tri[t++], (uint32_t[3]){a, bb, dd}, sizeof(uint32_t[3]));
                memcpy(m->tri[t++], (uint32_t[3]){a, dd, c}, sizeof(uint32_t[3]));
            } else {
                memcpy(m->tri[t++], (uint32_t[3]){a, bb, c}, sizeof(uint32_t[3]));
                memcpy(m->tri[t++], (uint32_t[3]){bb, dd, c}, sizeof(uint32_t[3]));
            }
        }
}

static bool grid_pinned(const mz_body *b, int u, int v)
{
    int nu = b->grid.resolution[0], nv = b->grid.resolution[1];
    bool u0 = u == 0, u1 = u == nu - 1, v0 = v == 0, v1 = v == nv - 1;
    unsigned p = b->pins;
#define PIN(bit) (p & (1u << (bit)))
    return (PIN(MZ_PIN_CORNER_00) && u0 && v0) || (PIN(MZ_PIN_CORNER_10) && u1 && v0) ||
           (PIN(MZ_PIN_CORNER_01) && u0 && v1) || (PIN(MZ_PIN_CORNER_11) && u1 && v1) ||
           (PIN(MZ_PIN_EDGE_U0) && u0) || (PIN(MZ_PIN_EDGE_U1) && u1) ||
           (PIN(MZ_PIN_EDGE_V0) && v0) || (PIN(MZ_PIN_EDGE_V1) && v1);
#undef PIN
}

/* A cloth from a triangle mesh: vertices → particles, edges → stretch constraints, the pairs
 * across each shared edge → bending constraints. Takes the mesh's arrays. */
static void cloth_from_mesh(mz_mesh *m, mz_body_geom *g)
{
    g->n = m->n_verts;
    g->x = m->v;
    g->n_tris = m->n_tris;
    g->tris = m->tri;
    g->n_stretch = mesh_edges(m, &g->stretch);
    g->n_bend = mesh_bending_pairs(m, &g->bend, NULL);
    g->phase = MZ_PHASE_CLOTH;
    free(m->line); /* its segments are in the edges already */
    *m = (mz_mesh){0};
}

static double mean_edge(const mz_body_geom *g)
{
    double sum = 0;
    for (size_t e = 0; e < g->n_stretch; e++) {
        const double *a = g->x[g->stretch[e][0]], *b = g->x[g->stretch[e][1]];
        sum += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                    (a[2] - b[2]) * (a[2] - b[2]));
    }
    return g->n_stretch ? sum / (double)g->n_stretch : 0;
}

/* The pairs of inside lattice cells that are 26-neighbours, each once (the 13 "forward"
 * offsets): how many, and into out[] as particle indices (index: cell -> particle) when out is
 * not NULL. */
static size_t lattice_pairs(const uint8_t *inside, const size_t dims[3], const uint32_t *index,
                            uint32_t (*out)[2])
{
    size_t cells = dims[0] * dims[1] * dims[2], k = 0;
    for (size_t c = 0; c < cells; c++) {
        if (!inside[c])
            continue;
        long i = (long)(c % dims[0]), j = (long)(c / dims[0] % dims[1]),
             l = (long)(c / (dims[0] * dims[1]));
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int order = dz * 9 + dy * 3 + dx;
                    if (order <= 0)
                        continue;
                    long x = i + dx, y = j + dy, z = l + dz;
                    if (x < 0 || y < 0 || z < 0 || x >= (long)dims[0] || y >= (long)dims[1] ||
                        z >= (long)dims[2])
                        continue;
                    size_t o = ((size_t)z * dims[1] + (size_t)y) * dims[0] + (size_t)x;
                    if (!inside[o])
                        continue;
                    if (out) {
                        out[k][0] = index[c];
                        out[k][1] = index[o];
                    }
                    k++;
                }
    }
    return k;
}

/* Host bytes a soft body of n particles and `pairs` constraints takes from here to the run:
 * its geometry (positions in double, pairs), the cell index while it is made, and the
 * builder's arrays (particle: position, velocity, inverse mass, id, body, phase; constraint:
 * ends and parameters). */
static double softbody_host_bytes(size_t cells, size_t n, size_t pairs)
{
    return 4.0 * (double)cells + (24.0 + 48.0) * (double)n + (8.0 + 24.0) * (double)pairs;
}

static void lattice_point(const mz_body_geom *g, size_t c, double x[3])
{
    size_t i = c % g->dims[0], j = c / g->dims[0] % g->dims[1], l = c / (g->dims[0] * g->dims[1]);
    x[0] = g->origin[0] + (i + 0.5) * g->spacing;
    x[1] = g->origin[1] + (j + 0.5) * g->spacing;
    x[2] = g->origin[2] + (l + 0.5) * g->spacing;
}

/* A soft body: the lattice points inside a closed mesh, each joined to its 26 lattice
 * neighbours (edges, face and body diagonals) so that it resists stretch and shear. Counted
 * here, made by bodies_make; one that would not fit the host's memory is refused (NULL, or the
 * reason). */
static const char *softbody_from_mesh(const mz_mesh *m, double spacing, mz_body_geom *g)
{
    g->n = mesh_voxelize(m, spacing, g->origin, g->dims, &g->inside);
    g->spacing = spacing;
    g->n_stretch = lattice_pairs(g->inside, g->dims, NULL, NULL);
    g->phase = MZ_PHASE_SOFTBODY;
    char what[160];
    snprintf(what, sizeof what, "its %zu particles and %zu constraints", g->n, g->n_stretch);
    return host_memory_refusal(
        softbody_host_bytes(g->dims[0] * g->dims[1] * g->dims[2], g->n, g->n_stretch), what);
}

void bodies_make(mz_body_geom *g)
{
    if (!g->inside)
        return;
    size_t cells = g->dims[0] * g->dims[1] * g->dims[2], k = 0;
    uint32_t *index = xmalloc(cells * sizeof *index);
    g->x = xcalloc(g->n ? g->n : 1, sizeof *g->x);
    for (size_t c = 0; c < cells; c++) {
        index[c] = g->inside[c] ? (uint32_t)k : UINT32_MAX;
        if (g->inside[c])
            lattice_point(g, c, g->x[k++]);
    }
    if (g->n_stretch > 0) { /* rigids keep their shape by matching, not by constraints */
        g->stretch = xmalloc(g->n_stretch * sizeof *g->stretch);
        lattice_pairs(g->inside, g->dims, index, g->stretch);
    }
    free(index);
    free(g->inside);
    g->inside = NULL;
}

/* The body's particles in order, from x[] or from the lattice not yet made. */
typedef struct point_walk {
    size_t i, cell;
} point_walk;

static bool walk_point(const mz_body_geom *g, point_walk *w, double x[3])
{
    if (w->i >= g->n)
        return false;
    if (g->x) {
        memcpy(x, g->x[w->i], sizeof(double[3]));
    } else {
        while (!g->inside[w->cell])
            w->cell++;
        lattice_point(g, w->cell++, x);
    }
    w->i++;
    return true;
}

static void geom_free(mz_body_geom *g)
{
    if (!g)
        return;
    free(g->x);
    free(g->inside);
    free(g->pinned);
    free(g->stretch);
    free(g->bend);
    free(g->tris);
    free(g);
}

/* Particles outside the domain, pins, thickness: what every body checks. */
static void finish_body(const mz_scene *s, mz_body *b, mz_body_geom *g, const char *path,
                        bool grid, mz_diag *d)
{
    int dim = s->sim.dimensions;
    g->pinned = xcalloc(g->n ? g->n : 1, 1);
    double x[3];
    point_walk w = {0};
    for (size_t i = 0; walk_point(g, &w, x); i++) {
        if (grid) {
            int nu = b->grid.resolution[0];
            g->pinned[i] = grid_pinned(b, (int)(i % (size_t)nu), (int)(i / (size_t)nu));
        }
        if (b->has_pin_box) {
            bool in = true;
            for (int a = 0; a < dim; a++)
                in &= x[a] >= b->pin_box.min[a] && x[a] <= b->pin_box.max[a];
            g->pinned[i] |= in;
        }
    }
    w = (point_walk){0};
    for (size_t i = 0; walk_point(g, &w, x); i++) {
        bool out = false;
        for (int a = 0; a < dim; a++)
            out |= !(x[a] >= s->domain.min[a] && x[a] <= s->domain.max[a]);
        if (out) {
            diag_add(d, "%s: particle %zu at (%g, %g, %g) lies outside the domain", path, i,
                     x[0], x[1], x[2]);
            break;
        }
    }
    g->thickness = b->thickness > 0 ? b->thickness : g->thickness;
    if (!(g->thickness > 0))
        diag_add(d, "%s.thickness: the geometry gives no spacing to take it from; set it", path);
}

/* Whether a body made when the scene loads fits the host's memory: bytes for n particles,
 * `pairs` constraints and `tris` triangles, from its geometry (double positions, pins) to the
 * builder's arrays. false after reporting. */
static bool body_fits_host(const char *path, double n, double pairs, double tris, mz_diag *d)
{
    char what[96];
    snprintf(what, sizeof what, "its %.0f particles", n);
    const char *refused = host_memory_refusal((24.0 + 1.0 + 48.0) * n + (8.0 + 24.0) * pairs +
                                                  (12.0 + 12.0) * tris,
                                              what);
    if (refused)
        diag_add(d, "%s: %s. Use a coarser resolution or spacing", path, refused);
    return !refused;
}

static mz_body_geom *prepare_cloth(const mz_scene *s, mz_body *b, const char *path, mz_diag *d)
{
    /* a grid of nu x nv: about 3 stretch and 3 bending pairs and 2 triangles per particle */
    double n = (double)b->grid.resolution[0] * b->grid.resolution[1];
    if (!body_fits_host(path, n, 6 * n, 2 * n, d))
        return NULL;
    mz_mesh m = {0};
    cloth_grid_mesh(b, &m);
    mz_body_geom *g = xcalloc(1, sizeof *g);
    cloth_from_mesh(&m, g);
    double du = b->grid.size[0] / (b->grid.resolution[0] - 1),
           dv = b->grid.size[1] / (b->grid.resolution[1] - 1);
    g->thickness = fmin(du, dv);
    finish_body(s, b, g, path, true, d);
    return g;
}

char *bodies_obj_file(const mz_scene *s, const mz_body *b)
{
    if (b->obj[0] == '/')
        return xstrdup(b->obj);
    mz_str p = {0};
    str_addf(&p, "%s/%s", s->dir, b->obj);
    return p.s;
}

static mz_body_geom *prepare_mesh(const mz_scene *s, mz_body *b, const char *path, mz_diag *d)
{
    char *file = bodies_obj_file(s, b);
    mz_mesh m = {0};
    mz_diag md = {0};
    if (mesh_load_obj(file, &m, &b->obj_digest, &md) != 0) {
        for (size_t i = 0; i < md.count; i++)
            diag_add(d, "%s.obj: %s", path, md.msgs[i]);
        diag_free(&md);
        free(file);
        return NULL;
    }
    free(file);
    double scale = b->scale;
    mesh_transform(&m, scale, b->rotate, b->translate);
    mz_body_geom *g = xcalloc(1, sizeof *g);
    if (b->kind == MZ_MESH_CLOTH) {
        cloth_from_mesh(&m, g);
        g->thickness = mean_edge(g);
    } else {
        if (!mesh_is_closed(&m)) {
            diag_add(d, "%s: a softbody needs a closed mesh (every edge shared by exactly two "
                        "triangles); %s is open", path, b->obj);
            mesh_free(&m);
            geom_free(g);
            return NULL;
        }
        if (!(b->spacing > 0)) {
            diag_add(d, "%s.spacing must be > 0 for a softbody (the voxel lattice's spacing)",
                     path);
            mesh_free(&m);
            geom_free(g);
            return NULL;
        }
        double lo[3], hi[3], cells = 1;
        mesh_bounds(&m, lo, hi);
        for (int a = 0; a < 3; a++)
            cells *= ceil((hi[a] - lo[a]) / b->spacing) + 1;
        if (!(cells <= LATTICE_MAX_POINTS)) {
            diag_add(d, "%s.spacing %g makes a lattice of %.3g points over the mesh's bounds "
                        "(at most " STR(LATTICE_MAX_POINTS) ")", path, b->spacing, cells);
            mesh_free(&m);
            geom_free(g);
            return NULL;
        }
        const char *refused = softbody_from_mesh(&m, b->spacing, g);
        mesh_free(&m);
        if (refused) {
            diag_add(d, "%s (a softbody at spacing %g): %s. Use a coarser spacing", path,
                     b->spacing, refused);
            geom_free(g);
            return NULL;
        }
        if (g->n == 0) {
            diag_add(d, "%s: no lattice point of spacing %g lies inside %s (the mesh is "
                        "thinner than the spacing)", path, b->spacing, b->obj);
            geom_free(g);
            return NULL;
        }
        g->thickness = b->spacing;
    }
    finish_body(s, b, g, path, false, d);
    return g;
}

/* Lattice points into g->x (growing it). */
static void add_point(mz_body_geom *g, size_t *cap, const double x[3])
{
    if (g->n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        g->x = xrealloc(g->x, *cap * sizeof *g->x);
    }
    memcpy(g->x[g->n++], x, sizeof(double[3]));
}

/* A rigid box: cell centres of a lattice of `spacing` centred in the box, rotated about the
 * box's centre. A sphere: the lattice through its centre, the points whose particle (diameter
 * `spacing`) lies inside. */
static void rigid_lattice(const mz_scene *s, const mz_body *b, double spacing, mz_body_geom *g)
{
    int dim = s->sim.dimensions;
    size_t cap = 0;
    if (b->has_box) {
        long cells[3] = {1, 1, 1};
        double centre[3] = {0, 0, 0}, start[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++) {
            centre[a] = 0.5 * (b->box.min[a] + b->box.max[a]);
            cells[a] = (long)floor((b->box.max[a] - b->box.min[a]) / spacing + 1e-9);
            start[a] = centre[a] - 0.5 * (double)(cells[a] - 1) * spacing;
        }
        for (long k = 0; k < cells[2]; k++)
            for (long j = 0; j < cells[1]; j++)
                for (long i = 0; i < cells[0]; i++) {
                    double x[3] = {start[0] + i * spacing, start[1] + j * spacing,
                                   start[2] + k * spacing};
                    add_point(g, &cap, x);
                }
        mz_mesh m = {.n_verts = g->n, .v = g->x};
        double minus[3] = {-centre[0], -centre[1], -centre[2]};
        mesh_transform(&m, 1.0, NULL, minus);
        mesh_transform(&m, 1.0, b->rotate, centre);
        return;
    }
    double r = b->sphere.radius - 0.5 * spacing;
    long reach = r >= 0 ? (long)floor(r / spacing + 1e-9) : -1;
    long zr = dim == 3 ? reach : 0;
    for (long k = -zr; k <= zr; k++)
        for (long j = -reach; j <= reach; j++)
            for (long i = -reach; i <= reach; i++) {
                double d2 = (double)(i * i + j * j + k * k) * spacing * spacing;
                if (d2 > r * r * (1 + 1e-12))
                    continue;
                const double *c = b->sphere.center;
                double x[3] = {c[0] + i * spacing, c[1] + j * spacing,
                               dim == 3 ? c[2] + k * spacing : 0};
                add_point(g, &cap, x);
            }
}

static mz_body_geom *prepare_mesh(const mz_scene *s, mz_body *b, const char *path, mz_diag *d);

/* A rigid: particles on a lattice inside a box, a sphere or a closed mesh; no constraints (shape
 * matching keeps it rigid), contact diameter = spacing. */
static mz_body_geom *prepare_rigid(const mz_scene *s, mz_body *b, const char *path, mz_diag *d)
{
    int dim = s->sim.dimensions;
    if (b->has_box + b->has_sphere + (b->obj != NULL) != 1) {
        diag_add(d, "%s: give exactly one of box, sphere or obj", path);
        return NULL;
    }
    double spacing = b->spacing > 0 ? b->spacing : s->n_fluids ? s->fluids[0].spacing : 0;
    if (!(spacing > 0)) {
        diag_add(d, "%s.spacing is required when the scene has no fluid to take it from", path);
        return NULL;
    }
    if (dim == 2 && (b->rotate[0] != 0 || b->rotate[1] != 0 || b->angular_velocity[0] != 0 ||
                     b->angular_velocity[1] != 0)) {
        diag_add(d, "%s: in 2D a rigid turns about z only (rotate and angular_velocity must "
                    "have x = y = 0)", path);
        return NULL;
    }
    double points = 1;
    for (int a = 0; a < dim; a++) {
        double ext = b->has_box ? b->box.max[a] - b->box.min[a]
                                : b->has_sphere ? 2 * b->sphere.radius : 0;
        if (b->has_box && !(ext > 0)) {
            diag_add(d, "%s.box: max must exceed min on every axis", path);
            return NULL;
        }
        points *= ext / spacing + 1;
    }
    if (!(points <= BODY_MAX_POINTS)) {
        diag_add(d, "%s: spacing %g makes about %.3g particles (at most " STR(BODY_MAX_POINTS) ")",
                 path, spacing, points);
        return NULL;
    }
    if (!b->obj && !body_fits_host(path, points, 0, 0, d))
        return NULL;
    mz_body_geom *g;
    if (b->obj) {
        if (dim == 2) {
            diag_add(d, "%s.obj: mesh rigids are 3D only (use box or sphere in 2D)", path);
            return NULL;
        }
        mz_body soft = *b;
        soft.kind = MZ_MESH_SOFTBODY;
        soft.spacing = spacing;
        soft.has_pin_box = false;
        soft.thickness = spacing;
        g = prepare_mesh(s, &soft, path, d);
        b->obj_digest = soft.obj_digest;
        if (!g)
            return NULL;
        g->n_stretch = 0; /* a rigid keeps its shape by matching, not by constraints */
    } else {
        g = xcalloc(1, sizeof *g);
        rigid_lattice(s, b, spacing, g);
        if (g->n == 0) {
            diag_add(d, "%s makes no particle at spacing %g (the shape is thinner than the "
                        "spacing)", path, spacing);
            geom_free(g);
            return NULL;
        }
        mz_body plain = *b;
        plain.has_pin_box = false;
        plain.thickness = spacing;
        finish_body(s, &plain, g, path, false, d);
    }
    g->phase = MZ_PHASE_RIGID;
    g->thickness = spacing;
    return g;
}

size_t bodies_count(const mz_scene *s) { return s->n_cloths + s->n_meshes + s->n_rigids; }

mz_body *bodies_get(const mz_scene *s, size_t k)
{
    if (k < s->n_cloths)
        return &s->cloths[k];
    k -= s->n_cloths;
    return k < s->n_meshes ? &s->meshes[k] : &s->rigids[k - s->n_meshes];
}

const char *bodies_path(const mz_scene *s, size_t k, char buf[48])
{
    size_t nc = s->n_cloths, nm = s->n_meshes;
    if (k < nc)
        snprintf(buf, 48, "cloths[%zu]", k);
    else if (k < nc + nm)
        snprintf(buf, 48, "meshes[%zu]", k - nc);
    else
        snprintf(buf, 48, "rigids[%zu]", k - nc - nm);
    return buf;
}

double bodies_particle_mass(const mz_scene *s, const mz_body *b)
{
    const mz_body_geom *g = b->geom;
    if (g->phase != MZ_PHASE_RIGID || b->mass > 0)
        return b->mass / (double)g->n;
    return b->density * pow(g->thickness, s->sim.dimensions);
}

void bodies_prepare(mz_scene *s, mz_diag *d)
{
    for (size_t i = 0; i < bodies_count(s); i++) {
        bool cloth = i < s->n_cloths;
        mz_body *b = bodies_get(s, i);
        char path[48];
        bodies_path(s, i, path);
        if (b->static_friction < b->friction)
            diag_add(d, "%s.static_friction (%g) must be at least friction (%g)", path,
                     b->static_friction, b->friction);
        if (i >= s->n_cloths + s->n_meshes) {
            b->geom = prepare_rigid(s, b, path, d);
            double m = b->geom ? bodies_particle_mass(s, b) : 1;
            if (!(m >= 1e-30 && m <= 1e30))
                diag_add(d, "%s: a particle mass of %g kg is beyond single precision", path, m);
            continue;
        }
        if (b->compliance > 0 && b->stiffness < 1)
            diag_add(d, "%s: give compliance (XPBD) or stiffness (PBD), not both", path);
        if (!cloth && b->kind == MZ_MESH_SOFTBODY && s->sim.dimensions == 2) {
            diag_add(d, "%s: soft bodies are 3D only (simulation.dimensions is 2)", path);
            continue;
        }
        if (cloth && s->sim.dimensions == 2 && b->grid.plane != MZ_PLANE_XY) {
            diag_add(d, "%s.grid.plane must be \"xy\" in 2D", path);
            continue;
        }
        if (cloth && (double)b->grid.resolution[0] * b->grid.resolution[1] > BODY_MAX_POINTS) {
            diag_add(d, "%s.grid.resolution: %d x %d particles is more than the "
                        STR(BODY_MAX_POINTS) " a body may have", path, b->grid.resolution[0],
                     b->grid.resolution[1]);
            continue;
        }
        if (b->has_pin_box) {
            bool ok = true;
            for (int a = 0; a < s->sim.dimensions; a++)
                ok &= b->pin_box.max[a] >= b->pin_box.min[a];
            if (!ok) {
                diag_add(d, "%s.pin_box: max must not be below min on any axis", path);
                continue;
            }
        }
        if (!cloth && !b->obj) {
            diag_add(d, "%s.obj is required (the OBJ file, relative to the scene)", path);
            continue;
        }
        b->geom = cloth ? prepare_cloth(s, b, path, d) : prepare_mesh(s, b, path, d);
        if (b->geom && b->geom->n == 0)
            diag_add(d, "%s makes no particles", path);
        if (b->geom && b->geom->n) {
            double w = (double)b->geom->n / b->mass;
            if (!(w >= 1e-30 && w <= 1e30))
                diag_add(d, "%s.mass %g over %zu particles gives an inverse mass single "
                            "precision cannot hold", path, b->mass, b->geom->n);
            for (int a = 0; a < s->sim.dimensions; a++)
                if (b->geom->thickness > s->domain.max[a] - s->domain.min[a]) {
                    diag_add(d, "%s: thickness %g m exceeds the domain on the %c axis", path,
                             b->geom->thickness, "xyz"[a]);
                    break;
                }
        }
    }
}

void bodies_free(mz_scene *s)
{
    for (size_t i = 0; i < bodies_count(s); i++) {
        geom_free(bodies_get(s, i)->geom);
        bodies_get(s, i)->geom = NULL;
    }
}

static size_t sum_over(const mz_scene *s, bool constraints)
{
    size_t n = 0;
    for (size_t i = 0; i < bodies_count(s); i++) {
        const mz_body *b = bodies_get(s, i);
        if (b->geom)
            n += constraints ? b->geom->n_stretch + b->geom->n_bend : b->geom->n;
    }
    return n;
}

double bodies_longest_rest(const mz_scene *s)
{
    double most = 0;
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body_geom *g = bodies_get(s, k)->geom;
        if (!g)
            continue;
        if (g->inside) { /* a lattice not made yet: its 26-neighbours */
            most = g->n_stretch ? fmax(most, sqrt(3.0) * g->spacing) : most;
            continue;
        }
        for (size_t e = 0; e < g->n_stretch + g->n_bend; e++) {
            const uint32_t *pair = e < g->n_stretch ? g->stretch[e] : g->bend[e - g->n_stretch];
            double r2 = 0;
            for (int a = 0; a < 3; a++)
                r2 += (g->x[pair[0]][a] - g->x[pair[1]][a]) * (g->x[pair[0]][a] - g->x[pair[1]][a]);
            most = fmax(most, sqrt(r2));
        }
    }
    return most;
}

size_t bodies_particle_count(const mz_scene *s) { return sum_over(s, false); }
size_t bodies_constraint_count(const mz_scene *s) { return sum_over(s, true); }
