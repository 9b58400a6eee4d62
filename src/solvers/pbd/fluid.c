/* Position Based Fluids inside the position-based solver: the density constraint's two passes
 * each iteration, XSPH viscosity and vorticity confinement after the update (kernels/pbd/pbf.cl
 * explains the formulas and the scaling that makes physical units work). */
#include "build/build.h"
#include "device/cl_prog.h"
#include "scene/bodies.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>

/* S0 = V² Σ_j |∇W_ij|² for a particle inside the rest lattice (the other half of Σ_k |∇_k C_i|²,
 * |Σ_j ∇W_ij|², is 0 there by symmetry). */
static double rest_gradient_sum(double spacing, double h, double volume, int dim)
{
    double pi = acos(-1.0), sum = 0;
    double c = dim == 3 ? 45.0 / (pi * pow(h, 6)) : 30.0 / (pi * pow(h, 5));
    int reach = (int)ceil(h / spacing), zr = dim == 3 ? reach : 0;
    for (int k = -zr; k <= zr; k++)
        for (int j = -reach; j <= reach; j++)
            for (int i = -reach; i <= reach; i++) {
                double r = spacing * sqrt((double)(i * i + j * j + k * k));
                if (r > 0 && r < h)
                    sum += pow(c * (h - r) * (h - r), 2);
            }
    return volume * volume * sum;
}

#define WALL_TABLE 64 /* MZ_WALL_TABLE in kernels/pbd/pbf.cl */

/* The rest lattice's share of ρ/ρ0 beyond a plane at signed distance d (sites at d + s/2,
 * d + 3s/2, ... along its normal, laterally aligned with the particle) and its derivative in d,
 * as floats; *share: the share in double. */
static cl_float2 beyond(const mz_scene *s, const pbf_params *P, double d, double *share)
{
    int dim = s->sim.dimensions;
    double sp = s->fluids[0].spacing, h = P->h, poly6 = P->poly6, spiky = P->spiky;
    int reach = (int)ceil(h / sp), zr = dim == 3 ? reach : 0;
    double w = 0, g = 0;
    for (int m = 0; d + (m + 0.5) * sp < h; m++) {
        double z = d + (m + 0.5) * sp;
        for (int j = -zr; j <= zr; j++)
            for (int i = -reach; i <= reach; i++) {
                double r2 = z * z + (double)(i * i + j * j) * sp * sp, r = sqrt(r2);
                if (r >= h)
                    continue;
                w += poly6 * pow(h * h - r2, 3);
                if (r > 0) /* the particle's own site (d = −s/2): no direction, ∇W = 0 */
                    g += spiky * (h - r) * (h - r) * z / r;
            }
    }
    *share = P->volume * w;
    return (cl_float2){{(cl_float)(P->volume * w), (cl_float)(P->volume * g)}};
}

/* The walls' share of ρ/ρ0 and its derivative along the wall normal, for a particle at distance
 * d = k h/(WALL_TABLE − 1) from a wall: the fluid's rest lattice continued beyond the wall
 * (sites s/2, 3s/2, ... behind it, laterally aligned with the particle, as the lattice starts),
 * so a particle of the initial lattice at a wall sees exactly the rest density. */
static cl_float2 *wall_table(const mz_scene *s, const pbf_params *P)
{
    cl_float2 *t = xcalloc(WALL_TABLE, sizeof *t);
    double h = P->h, w;
    for (int k = 0; k < WALL_TABLE; k++)
        t[k] = beyond(s, P, h * k / (WALL_TABLE - 1), &w);
    return t;
}

/* The colliders' table (mz_solid_share in kernels/pbd/pbf.cl): F(q) for a plane at signed
 * distance q = h (k − (WALL_TABLE − 1))/(WALL_TABLE − 1), k < 2 WALL_TABLE − 1, the particle
 * past it when q < 0. From q = −s/2 down, F is the whole lattice less the share beyond the
 * mirror plane at −q (exact at q = −s/2, where the two planes are the same between two lattice
 * rows, and continuous in slope there), so that F reaches the whole lattice, without ripple,
 * once the plane is h behind: a particle along a box's face sees the face alone. The
 * lattice's share, V Σ W, goes to P->lattice. */
static cl_float2 *solid_table(const mz_scene *s, pbf_params *P)
{
    double sp = s->fluids[0].spacing, h = P->h, whole, w;
    beyond(s, P, -(ceil(h / sp) + 0.5) * sp, &whole); /* every row, the particle's included */
    P->lattice = (cl_float)whole;
    cl_float2 *t = xcalloc(2 * WALL_TABLE - 1, sizeof *t);
    for (int k = 0; k < 2 * WALL_TABLE - 1; k++) {
        double q = h * (k - (WALL_TABLE - 1)) / (WALL_TABLE - 1);
        if (q >= -0.5 * sp) {
            t[k] = beyond(s, P, q, &w);
        } else {
            t[k] = beyond(s, P, -q, &w);
            t[k].s[0] = (cl_float)(whole - w);
        }
    }
    return t;
}

/* The largest s_corr share one iteration applies, in units of 1/S0 (what the paper's form added
 * in every iteration, k = 0.1): see pbf_substep. */
#define MAX_SHARE 0.1

static pbf_params params(const mz_scene *s, double *cap);

/* Whether the fluid runs the velocity passes (XSPH, vorticity, the walls' viscosity). */
static bool velocity_passes(const pbf_params *P)
{
    return P->xsph > 0 || P->vorticity > 0 || P->wall_nu > 0;
}

size_t pbf_device_bytes(const mz_scene *s, size_t n)
{
    double cap;
    pbf_params P = params(s, &cap);
    /* attributes and their sorted copy; density, λ, λ's change; the velocity passes' sorted
     * velocities, vorticity and XSPH; the walls' and colliders' density tables (pbf_init) */
    return n * (2 * 16 + 3 * 4 + (velocity_passes(&P) ? 3 * 16 : 0)) +
           (WALL_TABLE + 2 * WALL_TABLE - 1) * sizeof(cl_float2);
}

static pbf_params params(const mz_scene *s, double *cap)
{
    const mz_fluid *f = &s->fluids[0];
    int dim = s->sim.dimensions;
    double pi = acos(-1.0), h = scene_support_radius(s), m = build_particle_mass(s, f);
    double volume = m / f->rest_density;
    double s0 = rest_gradient_sum(f->spacing, h, volume, dim);
    *cap = MAX_SHARE / s0;
    double dq = f->tensile_dq * h, wq = h * h - dq * dq;
    const double *ga = s->sim.gravity;
    double g = sqrt(ga[0] * ga[0] + ga[1] * ga[1] + ga[2] * ga[2]);
    pbf_params P = {
        .h = (cl_float)h,
        .h2 = (cl_float)(h * h),
        .poly6 = (cl_float)(dim == 3 ? 315.0 / (64.0 * pi * pow(h, 9)) : 4.0 / (pi * pow(h, 8))),
        .spiky = (cl_float)(dim == 3 ? -45.0 / (pi * pow(h, 6)) : -30.0 / (pi * pow(h, 5))),
        .volume = (cl_float)volume,
        .rest_density = (cl_float)f->rest_density,
        .epsilon = (cl_float)(f->relaxation_epsilon * s0),
        .p_corr = (cl_float)(f->tensile_k * g * h),
        .inv_w_dq = (cl_float)(1.0 / (wq * wq * wq)),
        .n_corr = f->tensile_n,
        .xsph = (cl_float)f->xsph_viscosity,
        .vorticity = (cl_float)f->vorticity,
        .r_min = (cl_float)(1e-5 * h),
        .wall_nu = (cl_float)(f->walls == MZ_WALLS_WALL_FUNCTION ? f->viscosity / f->rest_density
                                                                 : 0.0),
        .wall_layer = (cl_float)f->spacing,
    };
    return P;
}

/* A particle's attributes from its inverse mass, phase and contact radius: r = m_fluid/m (0
 * pinned), ψ = its volume over a fluid particle's for what the density sees (fluid 1, rigid
 * (spacing/fluid spacing)^d, cloth 0), fluid flag. */
static void attribute(const mz_scene *s, float inv_mass, uint32_t phase, float radius, float a[4])
{
    const mz_fluid *f = &s->fluids[0];
    double w_fluid = 1.0 / build_particle_mass(s, f);
    a[0] = (float)(inv_mass / w_fluid);
    a[1] = a[2] = a[3] = 0.0f;
    if (phase == MZ_PHASE_FLUID) {
        a[1] = 1.0f;
        a[2] = 1.0f;
    } else if (phase == MZ_PHASE_RIGID) {
        a[1] = (float)pow(2.0 * radius / f->spacing, s->sim.dimensions);
    }
}

/* Per particle (id order) its attributes. */
static float *attributes(const mz_scene *s, const mz_particles *p, size_t cap)
{
    float *a = xcalloc(4 * (cap > p->n ? cap : p->n + 1), sizeof *a); /* cap: the buffer's room */
    for (size_t i = 0; i < p->n; i++)
        attribute(s, p->inv_mass[i], p->phase[i], p->pos[4 * i + 3], &a[4 * i]);
    return a;
}

/* Per body index (fluids, then the bodies) the attributes of its unpinned particles, with the
 * inverse mass and contact radius the builder gives them (src/build/build.c): a distributed
 * rank computes its window's attributes from these after every build (pbf_attributes), so that
 * nothing but a particle's body and inverse mass need travel or be checkpointed. */
static cl_float4 *attribute_table(const mz_scene *s, size_t *nb)
{
    *nb = s->n_fluids + bodies_count(s);
    cl_float4 *t = xcalloc(*nb, sizeof *t);
    for (size_t b = 0; b < s->n_fluids; b++)
        attribute(s, (float)(1.0 / build_particle_mass(s, &s->fluids[b])), MZ_PHASE_FLUID,
                  (float)(0.5 * s->fluids[b].spacing), t[b].s);
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body *b = bodies_get(s, k);
        attribute(s, (float)(1.0 / bodies_particle_mass(s, b)), (uint32_t)b->geom->phase,
                  (float)(0.5 * b->geom->thickness), t[s->n_fluids + k].s);
    }
    return t;
}

int pbf_init(mz_sim *sim, pbd_state *st)
{
    pbd_fluid *fl = &st->fluid;
    const mz_scene *s = sim->scene;
    fl->on = true;
    double depth, limit = scene_pbf_step_limit(s, &depth);
    if (scene_substep_dt(s) > limit)
        mz_warn("PBF step %.3g ms exceeds the limit %.3g ms for water %.3g m deep (%g h/sqrt(|g| "
                "H), h %g m); the foot of a resting column blows up just beyond it at 2 "
                "iterations (more hold it a little further): raise simulation.substeps to %.0f "
                "or set simulation.adaptive",
                1e3 * scene_substep_dt(s), 1e3 * limit, depth, MZ_PBF_DEPTH_LIMIT,
                scene_support_radius(s), ceil(scene_frame_dt(s) / limit - 1e-9));
    double cap;
    fl->P = params(s, &cap);
    fl->k_cap = cap;
    fl->warm_start = (cl_float)s->fluids[0].warm_start;
    fl->velocity = velocity_passes(&fl->P);
    static const char *const names[] = {"pbf_warm", "pbf_lambda", "pbf_delta", "pbf_curl",
                                        "pbf_confine", NULL};
    cl_kernel *const kernels[] = {&fl->warm, &fl->solve, &fl->delta, &fl->curl, &fl->confine};
    fl->program = sim_build_kernels(sim, "pbd/pbf.cl", names, kernels);
    if (!fl->program)
        return -1;
    /* three more instances of the snapshot kernel, each bound to its own source */
    cl_kernel *const sorts[] = {&fl->sort_attr, &fl->sort_x, &fl->sort_v};
    for (int k = 0; k < 3; k++) {
        cl_int err;
        *sorts[k] = clCreateKernel(st->cprogram, "sort_positions", &err);
        if (!cl_ok(err, "clCreateKernel(sort_positions)"))
            return -1;
    }
    mz_cl *cl = sim->cl;
    size_t n = sim->cap; /* room: more than the particles on a rank of a distributed run */
    float *a = attributes(s, sim->parts, n);
    cl_mem_flags rw = CL_MEM_READ_WRITE;
    fl->attr = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 16 * n, a, "clCreateBuffer(fluid attributes)");
    free(a);
    if (sim->plan) { /* a rank: the window's attributes by body, after every build */
        size_t nb;
        cl_float4 *t = attribute_table(s, &nb);
        fl->attr_table = mz_cl_buffer(cl, CL_MEM_READ_ONLY, nb * sizeof *t, t,
                                      "clCreateBuffer(attributes by body)");
        free(t);
        fl->attributes = cl_prog_kernel(fl->program, "pbf_attributes");
        if (!fl->attr_table || !fl->attributes)
            return -1;
    }
    float *zero = xcalloc(n, sizeof *zero);
    fl->density = mz_cl_buffer(cl, rw, 4 * n, zero, "clCreateBuffer(density)");
    fl->lambda = mz_cl_buffer(cl, rw, 4 * n, zero, "clCreateBuffer(density multipliers)");
    free(zero);
    fl->attr_sorted = mz_cl_buffer(cl, rw, 16 * n, NULL, "clCreateBuffer(sorted attributes)");
    fl->lambda_s = mz_cl_buffer(cl, rw, 4 * n, NULL, "clCreateBuffer(multiplier changes)");
    if (!fl->attr || !fl->density || !fl->lambda || !fl->attr_sorted || !fl->lambda_s)
        return -1;
    if (fl->velocity) {
        fl->vs = mz_cl_buffer(cl, rw, 16 * n, NULL, "clCreateBuffer(sorted velocities)");
        fl->omega = mz_cl_buffer(cl, rw, 16 * n, NULL, "clCreateBuffer(vorticity)");
        fl->dv = mz_cl_buffer(cl, rw, 16 * n, NULL, "clCreateBuffer(XSPH)");
        if (!fl->vs || !fl->omega || !fl->dv)
            return -1;
    }
    cl_float2 *table = wall_table(s, &fl->P);
    fl->walls = mz_cl_buffer(cl, CL_MEM_READ_ONLY, WALL_TABLE * sizeof *table, table,
                             "clCreateBuffer(wall density table)");
    free(table);
    table = solid_table(s, &fl->P);
    fl->solid = mz_cl_buffer(cl, CL_MEM_READ_ONLY, (2 * WALL_TABLE - 1) * sizeof *table, table,
                             "clCreateBuffer(collider density table)");
    free(table);
    if (!fl->walls || !fl->solid)
        return -1;
    sim->field[MZ_FIELD_DENSITY] = &fl->density;
    return 0;
}

int pbf_boundary_init(mz_sim *sim, pbd_state *st)
{
    pbd_fluid *fl = &st->fluid;
    const mz_scene *s = sim->scene;
    /* 1: the walls alone (a particle further than h from them has no boundary neighbour and
     * skips the walk), 2: colliders too */
    fl->bparts = !scene_boundary_particles(s) ? 0 : s->n_colliders ? 2 : 1;
    float mass = (float)build_particle_mass(s, &s->fluids[0]);
    return boundary_init(&fl->bound, sim, mass, fl->P.h,
                         st->grid.desc.hashed ? MZ_GRID_HASHED : MZ_GRID_DENSE, false);
}

int pbf_boundary_move(mz_sim *sim, pbd_state *st, double t)
{
    return boundary_move(&st->fluid.bound, sim, t);
}

/* Every kernel that reads the grid: its tables and the slot buffer of the last build. */
bool pbf_bind_grid(mz_sim *sim, pbd_state *st)
{
    pbd_fluid *fl = &st->fluid;
    mz_grid *g = &st->grid;
    cl_mem slot = pbf_dist_slot(st);
    cl_float4 lo = sim_float4(sim->scene->domain.min), hi = sim_float4(sim->scene->domain.max);
    cl_float none = 0.0f; /* the warm start's pass: no s_corr (each iteration takes its share) */
    boundary_args b = boundary_of(&fl->bound, g->desc); /* stand-ins when not particles */
    /* a rank: its window's attributes, from the bodies and inverse masses that travelled */
    cl_uint by_body = bodies_count(sim->scene) > 0;
    bool ok = !st->dist.on ||
              (KARGS(fl->attributes, "pbf_attributes", A(sim->n_u), A(by_body), A(sim->body),
                     A(sim->inv_mass), A(fl->attr_table), A(fl->attr)) &&
               (sim->n == 0 || sim_launch(sim, fl->attributes, sim->n, STAGE_GRID,
                                          "pbf_attributes")));
    ok = ok && KARGS(fl->sort_attr, "sort_positions", A(sim->n_u), A(slot), A(fl->attr),
                    A(fl->attr_sorted)) &&
              KARGS(fl->warm, "pbf_warm", A(sim->n_u), A(fl->warm_start), A(fl->attr_sorted), A(slot),
                    A(fl->lambda), A(fl->lambda_s)) &&
              KARGS(fl->solve, "pbf_lambda", A(sim->n_u), A(fl->P), A(g->desc), A(g->cell_words),
                    A(g->cell_first), A(st->sorted), A(fl->attr_sorted), A(slot), A(lo), A(hi),
                    A(fl->walls), A(st->n_colliders), A(st->solids), A(st->now), A(fl->solid),
                    A(fl->lambda), A(fl->lambda_s), A(fl->density), A(fl->bparts), A(b.desc),
                    A(b.words), A(b.first), A(b.pos)) &&
              KARGS(fl->delta, "pbf_delta", A(sim->n_u), A(fl->P), A(g->desc), A(g->cell_words),
                    A(g->cell_first), A(st->sorted), A(fl->attr_sorted), A(slot), A(lo), A(hi),
                    A(fl->walls), A(st->n_colliders), A(st->solids), A(st->now), A(fl->solid),
                    A(fl->lambda_s), A(sim->pred), A(st->loads.keep), A(st->loads.wall_corr),
                    A(st->loads.touch), A(none), A(fl->bparts), A(b.desc), A(b.words),
                    A(b.first), A(b.pos));
    if (ok && fl->velocity) {
        cl_float dt = 0.0f; /* set per substep */
        ok = KARGS(fl->sort_x, "sort_positions", A(sim->n_u), A(slot), A(sim->pos),
                   A(st->sorted)) &&
             KARGS(fl->sort_v, "sort_positions", A(sim->n_u), A(slot), A(sim->vel), A(fl->vs)) &&
             KARGS(fl->curl, "pbf_curl", A(sim->n_u), A(fl->P), A(g->desc), A(g->cell_words),
                   A(g->cell_first), A(st->sorted), A(fl->attr_sorted), A(fl->vs), A(fl->omega),
                   A(fl->dv)) &&
             KARGS(fl->confine, "pbf_confine", A(sim->n_u), A(dt), A(fl->P), A(g->desc),
                   A(g->cell_words), A(g->cell_first), A(st->sorted), A(fl->attr_sorted), A(slot),
                   A(fl->vs), A(fl->omega), A(fl->dv), A(sim->vel), A(lo), A(hi));
    }
    return ok && sim_launch(sim, fl->sort_attr, sim->n, STAGE_GRID, "sort_positions") &&
           sim_launch(sim, st->sort, sim->n, STAGE_DENSITY, "sort_positions") &&
           sim_launch(sim, fl->warm, sim->n, STAGE_DENSITY, "pbf_warm") &&
           sim_launch(sim, fl->delta, sim->n, STAGE_DENSITY, "pbf_delta") &&
           pbf_dist_share(sim, st, sim->pred, 16) && pbf_dist_reach(sim, st);
}

bool pbf_iterate(mz_sim *sim, pbd_state *st)
{
    pbd_fluid *fl = &st->fluid;
    return cl_ok(clSetKernelArg(fl->delta, 20, sizeof fl->k_iter, &fl->k_iter),
                 "clSetKernelArg(pbf_delta)") &&
           sim_launch(sim, st->sort, sim->n, STAGE_DENSITY, "sort_positions") &&
           sim_launch(sim, fl->solve, sim->n, STAGE_DENSITY, "pbf_lambda") &&
           pbf_dist_share(sim, st, fl->lambda_s, 4) && /* distributed: the halo's λ changes */
           sim_launch(sim, fl->delta, sim->n, STAGE_DENSITY, "pbf_delta");
}

bool pbf_velocities(mz_sim *sim, pbd_state *st, float dt)
{
    pbd_fluid *fl = &st->fluid;
    if (!fl->velocity)
        return true;
    return cl_ok(clSetKernelArg(fl->confine, 1, sizeof dt, &dt), "clSetKernelArg(pbf_confine)") &&
           sim_launch(sim, fl->sort_x, sim->n, STAGE_VISCOSITY, "sort_positions") &&
           sim_launch(sim, fl->sort_v, sim->n, STAGE_VISCOSITY, "sort_positions") &&
           sim_launch(sim, fl->curl, sim->n, STAGE_VISCOSITY, "pbf_curl") &&
           (!(fl->P.vorticity > 0) || pbf_dist_share(sim, st, fl->omega, 16)) &&
           sim_launch(sim, fl->confine, sim->n, STAGE_VISCOSITY, "pbf_confine");
}

void pbf_release(pbd_fluid *fl)
{
    cl_kernel ks[] = {fl->warm,      fl->solve,  fl->delta,  fl->curl,      fl->confine,
                      fl->sort_attr, fl->sort_x, fl->sort_v, fl->attributes};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {fl->walls,    fl->solid,   fl->attr, fl->attr_sorted, fl->lambda,
                   fl->lambda_s, fl->density, fl->vs,   fl->omega,       fl->dv,
                   fl->attr_table};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (fl->program)
        clReleaseProgram(fl->program);
    boundary_release(&fl->bound);
}

/* s_corr is an artificial pressure, a force: a substep moves the fluid by dt² times its
 * acceleration, shared out over the iterations (kernels/pbd/pbf.cl), so its effect does not
 * grow with iterations or substeps. Each share is evaluated at the current positions: applied
 * whole in the substep's first pass, the stiff (W/W(dq h))^n repulsion overshoots (a resting 2D
 * tank at 4 substeps blew up within 0.15 s). Like any explicit force it needs short enough
 * steps: a share above about 0.25 h² diverged (the tank at 2 iterations: 0.42 h²), so a share
 * is capped at what the paper's form added per iteration (0.1/S0 = 0.065 h²), and a substep
 * too long for the whole artificial pressure applies iterations × that, less than the whole. */
void pbf_substep(pbd_state *st, int iterations, double dt)
{
    pbd_fluid *fl = &st->fluid;
    fl->k_iter = (cl_float)fmin((double)fl->P.p_corr * dt * dt / iterations, fl->k_cap);
}
