/* Position-based solvers (Müller et al. 2006; XPBD, Macklin et al. 2016; small steps, Macklin
 * et al. 2019; fluids and rigids in one particle system, Macklin et al. 2014), one substep:
 *
 *   predict      v += dt·(g + walls), v *= damping, x* = x + dt·v   (pinned: w = 0);
 *                rigid bodies: a rigid motion from their momenta (src/solvers/pbd/rigid.c)
 *   grid         the neighbour grid on x* (when anything collides or there is PBF fluid)
 *   iterations × [ density (PBF, src/solvers/pbd/fluid.c) → distance (solve, apply) → contacts →
 *                  colliders → domain → shape matching (rigids) ]
 *   update       v = (x* − x)/dt, x = x*; rigid velocities and momenta from their poses
 *   viscosity    XSPH and vorticity confinement (PBF)
 *
 * Every sweep is a per-constraint pass followed by a per-particle gather (Jacobi; see
 * kernels/pbd/pbd_constraints.cl), so runs are deterministic. λ is reset every substep. Particle
 * buffers stay in id order (constraints name particles by id); contacts read a snapshot of the
 * predicted positions sorted by cell. Under mpirun (pbf_dist.c, cloth_dist.c, rigid_dist.c) a
 * rank keeps its window in the grid's order instead, exchanges it after predict, shares x* with
 * the other ranks after every pass that moves it, gathers each owned particle's constraints
 * itself, and matches every rigid body on all its particles' x*, gathered by id. The
 * stage enum and names are the --profile rows. */
#include "dist/dist.h"
#include "scene/bodies.h"
#include "solvers/colliders.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const pbd_stages[] = {"predict",   "grid",           "density",
                                         "distance",  "contacts",       "colliders",
                                         "domain",    "shape matching", "update",
                                         "viscosity", NULL};

/* Layout of mz_body_info in kernels/pbd/pbd_constraints.cl. */
typedef struct body_info {
    cl_float friction, static_friction;
    cl_uint flags, pad;
} body_info;
enum { BODY_COLLIDES = 1, BODY_SELF = 2, BODY_FLUID = 4, BODY_RIGID = 8 };


/* Per particle id, its incident constraints as 2·c + (second end): a CSR adjacency; *other
 * holds the particle at the constraint's other end, entry for entry. By id over the whole run
 * (a distributed rank holds a share of the particles, and every table). */
static void adjacency(const mz_particles *p, cl_uint **start, cl_uint **adj, cl_uint **degree,
                      cl_uint **other)
{
    size_t n = p->n_total, nc = p->n_constraints;
    *start = xcalloc(n + 1, sizeof **start);
    *degree = xcalloc(n ? n : 1, sizeof **degree);
    *adj = xcalloc(2 * nc + 1, sizeof **adj);
    for (size_t c = 0; c < nc; c++) {
        (*degree)[p->con_ends[2 * c]]++;
        (*degree)[p->con_ends[2 * c + 1]]++;
    }
    for (size_t i = 0; i < n; i++)
        (*start)[i + 1] = (*start)[i] + (*degree)[i];
    *other = xcalloc(2 * nc + 1, sizeof **other);
    cl_uint *fill = xcalloc(n ? n : 1, sizeof *fill);
    for (size_t c = 0; c < nc; c++)
        for (int side = 0; side < 2; side++) {
            uint32_t i = p->con_ends[2 * c + side];
            (*other)[(*start)[i] + fill[i]] = p->con_ends[2 * c + !side];
            (*adj)[(*start)[i] + fill[i]++] = (cl_uint)(2 * c + side);
        }
    free(fill);
}

/* Whether particles meet by contact (two solids, a self-colliding one, a solid and PBF fluid),
 * and the contact distance: the widest fluid spacing or body thickness. */
static bool contacts_of(const mz_scene *s, double *contact)
{
    bool self = false, fluid = scene_solver(s) == MZ_SOLVER_PBF;
    size_t solids = bodies_count(s);
    *contact = 0;
    for (size_t k = 0; fluid && k < s->n_fluids; k++)
        *contact = fmax(*contact, s->fluids[k].spacing);
    for (size_t k = 0; k < solids; k++) {
        const mz_body *b = bodies_get(s, k);
        self |= b->geom->phase != MZ_PHASE_RIGID && b->self_collision;
        *contact = fmax(*contact, b->geom->thickness);
    }
    return solids >= 2 || self || (solids && fluid);
}

/* Cells 1.5x the contact distance: the grid is built once a substep on x*, and the corrections
 * of the iterations (a fraction of the distance) must not carry a pair in contact out of each
 * other's 27 cells. The fluid's support radius is wider. Ballistic fluid alone meets nothing
 * and one process makes no grid; a rank's slabs are layers of one: 1.5 spacings. */
static double grid_cell(const mz_scene *s, double contact)
{
    double h = fmax(1.5 * contact, scene_solver(s) == MZ_SOLVER_PBF ? scene_support_radius(s) : 0);
    for (size_t k = 0; h == 0 && k < s->n_fluids; k++)
        h = fmax(h, 1.5 * s->fluids[k].spacing);
    return h;
}

double pbd_cell_size(const mz_scene *s)
{
    double contact;
    contacts_of(s, &contact);
    return grid_cell(s, contact);
}

static bool body_tables(mz_sim *sim, pbd_state *st, double *contact)
{
    const mz_scene *s = sim->scene;
    size_t nb = s->n_fluids + bodies_count(s);
    body_info *info = xcalloc(nb, sizeof *info);
    bool fluid = scene_solver(s) == MZ_SOLVER_PBF;
    for (size_t k = 0; fluid && k < s->n_fluids; k++)
        info[k].flags = BODY_COLLIDES | BODY_FLUID; /* fluid meets fluid through its density */
    for (size_t k = 0; k < bodies_count(s); k++) {
        const mz_body *b = bodies_get(s, k);
        body_info *bi = &info[s->n_fluids + k];
        bool rigid = b->geom->phase == MZ_PHASE_RIGID;
        bi->friction = (cl_float)b->friction;
        bi->static_friction = (cl_float)b->static_friction;
        bi->flags = BODY_COLLIDES | (rigid ? BODY_RIGID : b->self_collision ? BODY_SELF : 0);
    }
    st->contacts = contacts_of(s, contact);
    st->bodies = mz_cl_buffer(sim->cl, CL_MEM_READ_ONLY, nb * sizeof *info, info,
                              "clCreateBuffer(body table)");
    free(info);

    size_t nsol = s->n_colliders;
    collider_dev *cd = colliders_table(s, st->mover_collider, &st->n_movers);
    st->n_colliders = (cl_uint)nsol;
    st->solids = mz_cl_buffer(sim->cl, CL_MEM_READ_ONLY, (nsol + 1) * sizeof *cd, cd,
                              "clCreateBuffer(colliders)");
    free(cd);
    return st->bodies && st->solids;
}

static bool constraint_buffers(mz_sim *sim, pbd_state *st)
{
    const mz_particles *p = sim->parts;
    size_t nc = p->n_constraints, n = p->n_total;
    cl_uint *start, *adj, *degree, *other;
    adjacency(p, &start, &adj, &degree, &other);
    mz_cl *cl = sim->cl;
    cl_mem_flags ro = CL_MEM_READ_ONLY, rw = CL_MEM_READ_WRITE;
    st->nc = (cl_uint)nc;
    size_t m = nc ? nc : 1;
    st->ends = mz_cl_buffer(cl, ro, 8 * m, nc ? p->con_ends : NULL, "clCreateBuffer(constraint ends)");
    st->params = mz_cl_buffer(cl, ro, 16 * m, nc ? p->con_params : NULL,
                              "clCreateBuffer(constraint parameters)");
    st->lambda = mz_cl_buffer(cl, rw, 4 * m, NULL, "clCreateBuffer(lambda)");
    st->corr = mz_cl_buffer(cl, rw, 16 * m, NULL, "clCreateBuffer(constraint corrections)");
    st->adj_start = mz_cl_buffer(cl, ro, 4 * (n + 1), start, "clCreateBuffer(adjacency start)");
    st->adj = mz_cl_buffer(cl, ro, 4 * (2 * nc + 1), adj, "clCreateBuffer(adjacency)");
    st->adj_other = mz_cl_buffer(cl, ro, 4 * (2 * nc + 1), other,
                                 "clCreateBuffer(constraint partners)");
    st->degree = mz_cl_buffer(cl, ro, 4 * (n ? n : 1), degree, "clCreateBuffer(degree)");
    free(start);
    free(adj);
    free(degree);
    free(other);
    return st->ends && st->params && st->lambda && st->corr && st->adj_start && st->adj &&
           st->adj_other && st->degree;
}

static int pbd_init(mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    pbd_state *st = xcalloc(1, sizeof *st);
    sim->state = st;
    static const char *const names[] = {"predict", "domain", "update", NULL};
    cl_kernel *const kernels[] = {&st->predict, &st->domain, &st->update};
    st->program = sim_build_kernels(sim, "pbd/pbd_integrate.cl", names, kernels);
    static const char *const cnames[] = {"distance_solve", "distance_apply", "sort_positions",
                                         "collide", "colliders", NULL};
    cl_kernel *const ckernels[] = {&st->solve, &st->apply, &st->sort, &st->collide,
                                   &st->colliders};
    if (!st->program)
        return -1;
    st->cprogram = sim_build_kernels(sim, "pbd/pbd_constraints.cl", cnames, ckernels);
    double contact = 0;
    if (!st->cprogram || !constraint_buffers(sim, st) || !body_tables(sim, st, &contact))
        return -1;
    /* the forces' buffers before a rank's grid registers the wall corrections */
    if (pbd_loads_init(&st->loads, sim, st->cprogram) != 0)
        return -1;
    bool pbf = scene_solver(s) == MZ_SOLVER_PBF;
    if ((pbf && pbf_init(sim, st) != 0) || (s->n_rigids && rigid_init(sim, st) != 0))
        return -1;
    if (st->contacts || pbf || sim->plan) {
        st->sorted = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16 * sim->cap, NULL,
                                  "clCreateBuffer(sorted positions)");
        double cell = grid_cell(s, contact);
        /* Distributed: the plan's dense grid, pbd_slab_geometry's cells (a rank makes one
         * whatever collides: its exchange sorts by it). */
        if (!st->sorted ||
            grid_create(&st->grid, sim->cl, sim->cap, cell, s->sim.dimensions, s->domain.min,
                        s->domain.max, sim->plan ? MZ_GRID_SLABS : MZ_GRID_AUTO) != 0)
            return -1;
        st->grid_made = true;
        sim->grid = &st->grid;
        sim->grid_by_vals = true;
    }
    if (pbf && pbf_boundary_init(sim, st) != 0)
        return -1;
    if (sim->plan && (pbf_dist_init(sim, st) != 0 || (st->nc && cloth_dist_init(sim, st) != 0) ||
                      (st->rigid.nb && rigid_dist_init(sim, st) != 0)))
        return -1;

    mz_walls_arg walls = sim_walls(s);
    mz_frame_arg frame = sim_frame(s, sim->time); /* set per substep */
    cl_int penalty = s->domain.boundary.type == MZ_BOUNDARY_PENALTY;
    cl_int by_radius = !penalty;
    cl_float dt = 0.0f, keep = 1.0f; /* set per substep */
    cl_float omega = (cl_float)s->sim.relaxation;
    pbd_loads *l = &st->loads;
    motion_now now0;
    memset(&now0, 0, sizeof now0);
    bool ok = KARGS(st->predict, "predict", A(sim->n_u), A(dt), A(keep), A(frame), A(walls),
                    A(penalty), A(sim->pos), A(sim->vel), A(sim->pred), A(sim->inv_mass),
                    A(l->keep), A(l->wall_corr)) &&
              KARGS(st->domain, "domain", A(sim->n_u), A(walls.min), A(walls.max),
                    A(by_radius), A(sim->inv_mass), A(sim->body), A(st->bodies),
                    A(sim->pred), A(l->keep), A(l->wall_corr)) &&
              KARGS(st->update, "update", A(sim->n_u), A(dt), A(sim->pos), A(sim->vel),
                    A(sim->pred)) &&
              KARGS(st->solve, "distance_solve", A(st->nc), A(dt), A(omega), A(st->ends),
                    A(st->params), A(sim->pred), A(sim->inv_mass), A(st->degree), A(st->lambda),
                    A(st->corr)) &&
              KARGS(st->apply, "distance_apply", A(sim->n_u), A(st->adj_start), A(st->adj),
                    A(st->corr), A(sim->inv_mass), A(sim->pred)) &&
              KARGS(st->colliders, "colliders", A(sim->n_u), A(st->n_colliders), A(st->solids),
                    A(sim->pos), A(sim->inv_mass), A(sim->pred), A(l->keep), A(l->touch),
                    A(dt), A(now0));
    if (ok && st->contacts) /* the grid's slot buffer and description are set per build */
        ok = KARGS(st->collide, "collide", A(sim->n_u), A(st->grid.desc), A(st->grid.cell_words),
                   A(st->grid.cell_first), A(st->sorted), A(st->grid.vals), A(sim->pos),
                   A(sim->inv_mass), A(sim->body), A(st->bodies), A(st->adj_start),
                   A(st->adj_other), A(omega), A(sim->pred), A(sim->id));
    return ok ? 0 : -1;
}

/* The snapshot of every particle's x* (a rank's halo too: its owned ones' neighbours), then the
 * contacts of the particles (a rank's owned ones). */
static bool contacts(mz_sim *sim, pbd_state *st)
{
    return sim_launch(sim, st->sort, sim->n, STAGE_CONTACTS, "sort_positions") &&
           pbf_dist_launch_owned(sim, st, st->collide, STAGE_CONTACTS, "collide");
}

/* One sweep of the distance constraints. Distributed: each rank's owned particles by a gather,
 * then their new x* to the halo that contacts read. */
static bool distances(mz_sim *sim, pbd_state *st, int it)
{
    if (st->dist.cloth.on)
        return cloth_dist_project(sim, st, it == 0) &&
               (!st->contacts || pbf_dist_share(sim, st, sim->pred, 16));
    return sim_launch(sim, st->solve, st->nc, STAGE_DISTANCE, "distance_solve") &&
           sim_launch(sim, st->apply, sim->n, STAGE_DISTANCE, "distance_apply");
}

/* The colliders' substep arguments: whether to keep their corrections, dt, and the moving
 * ones' laws at the substep's end (the kernel meets them there; so does PBF's density, whose
 * arguments follow the grid's build). */
static bool set_colliders(mz_sim *sim, pbd_state *st, double dt_seconds)
{
    st->now = colliders_now(sim->scene, st->mover_collider, st->n_movers,
                            sim->time + dt_seconds);
    cl_float dt = (cl_float)dt_seconds;
    return KARGS(st->colliders, "colliders", A(sim->n_u), A(st->n_colliders), A(st->solids),
                 A(sim->pos), A(sim->inv_mass), A(sim->pred), A(st->loads.keep),
                 A(st->loads.touch), A(dt), A(st->now));
}

static int pbd_substep(mz_sim *sim, double dt_seconds)
{
    pbd_state *st = sim->state;
    const mz_scene *s = sim->scene;
    cl_float dt = (cl_float)dt_seconds;
    cl_float keep = (cl_float)exp(-s->sim.damping * dt_seconds);
    cl_float inv_dt2 = (cl_float)(1.0 / (dt_seconds * dt_seconds));
    mz_frame_arg frame = sim_frame(s, sim->time);
    /* Forces on solids due at this substep's end: the kernels keep their corrections. */
    pbd_loads *l = &st->loads;
    bool ok = pbd_loads_begin(l, sim, dt_seconds) &&
              cl_ok(clSetKernelArg(st->predict, 10, sizeof l->keep, &l->keep),
                    "clSetKernelArg(predict)") &&
              cl_ok(clSetKernelArg(st->domain, 8, sizeof l->keep, &l->keep),
                    "clSetKernelArg(domain)") &&
              (!st->n_colliders || set_colliders(sim, st, dt_seconds)) &&
              cl_ok(clSetKernelArg(st->predict, 1, sizeof dt, &dt), "clSetKernelArg(predict)") &&
              cl_ok(clSetKernelArg(st->predict, 2, sizeof keep, &keep), "clSetKernelArg(predict)") &&
              cl_ok(clSetKernelArg(st->predict, 3, sizeof frame, &frame),
                    "clSetKernelArg(predict)") &&
              cl_ok(clSetKernelArg(st->update, 1, sizeof dt, &dt), "clSetKernelArg(update)") &&
              cl_ok(clSetKernelArg(st->solve, 1, sizeof inv_dt2, &inv_dt2),
                    "clSetKernelArg(distance_solve)");
    if (st->fluid.on)
        pbf_substep(st, s->sim.iterations, dt_seconds);
    /* Distributed: the kernels follow the buffers the last exchange and build moved; the
     * owned particles then go to the windows of their predicted positions. */
    ok = ok && pbf_dist_bind(sim, st) &&
         sim_launch(sim, st->predict, sim->n, STAGE_PREDICT, "predict");
    if (ok && st->rigid.nb)
        ok = rigid_predict(sim, st, dt, keep, &frame);
    if (ok && st->dist.on) /* (a rank's touch slots: those of its new window) */
        ok = pbf_dist_exchange(sim, st) && pbd_loads_clear_touch(l, sim);
    if (ok && st->grid_made) {
        /* the build may swap the grid's slot buffer: every kernel that reads it follows (and
         * moving boundary particles are placed and sorted first, at the colliders' time) */
        ok = (!st->fluid.on || pbf_boundary_move(sim, st, sim->time + dt_seconds) == 0) &&
             grid_build(&st->grid, sim->pred) == 0 &&
             (!st->dist.on ||
              (slabs_after_build(&st->dist.slabs) == 0 && pbf_dist_bind(sim, st)));
        cl_mem slot = pbf_dist_slot(st);
        ok = ok &&
             KARGS(st->sort, "sort_positions", A(sim->n_u), A(slot), A(sim->pred),
                   A(st->sorted)) &&
             (!st->contacts ||
              cl_ok(clSetKernelArg(st->collide, 5, sizeof st->grid.vals, &st->grid.vals),
                    "clSetKernelArg(collide)")) &&
             (!st->dist.on || !st->contacts || pbf_dist_bind_contacts(sim, st)) &&
             (!st->dist.cloth.on || cloth_dist_bind(sim, st, inv_dt2)) &&
             (!st->fluid.on || pbf_bind_grid(sim, st));
        if (ok)
            sim_profile_grid(sim, &st->grid, STAGE_GRID);
    }
    if (ok && st->nc && !st->dist.cloth.on) { /* a rank's gather starts its λ at 0 itself */
        cl_float zero = 0.0f;
        ok = cl_ok(clEnqueueFillBuffer(sim->cl->queue, st->lambda, &zero, sizeof zero, 0,
                                       4 * (size_t)st->nc, 0, NULL, NULL),
                   "clEnqueueFillBuffer(lambda)");
    }
    for (int it = 0; ok && it < s->sim.iterations; it++) {
        if (st->fluid.on)
            ok = pbf_iterate(sim, st);
        if (ok && st->nc)
            ok = distances(sim, st, it);
        if (ok && st->contacts)
            ok = contacts(sim, st);
        if (ok && st->n_colliders)
            ok = pbf_dist_launch_owned(sim, st, st->colliders, STAGE_COLLIDERS, "colliders");
        ok = ok && pbf_dist_launch_owned(sim, st, st->domain, STAGE_DOMAIN, "domain");
        if (ok && st->rigid.nb)
            ok = rigid_match(sim, st);
        /* Distributed: the iteration's positions of the halo from their owners; whether the
         * owned particles' next queries (the next iteration's, the velocity passes') stay in
         * the window. */
        ok = ok && pbf_dist_share(sim, st, sim->pred, 16) && pbf_dist_reach(sim, st);
    }
    ok = ok && (!st->dist.cloth.on || cloth_dist_check(sim, st)) &&
         pbf_dist_reach_check(sim, st) &&
         pbd_loads_sum(l, sim, dt_seconds) &&
         sim_launch(sim, st->update, sim->n, STAGE_UPDATE, "update");
    if (ok && st->rigid.nb)
        ok = rigid_update(sim, st, dt);
    if (ok && st->fluid.on)
        ok = pbf_velocities(sim, st, dt);
    return ok ? 0 : -1;
}

static void pbd_release(mz_sim *sim)
{
    pbd_state *st = sim->state;
    if (!st)
        return;
    cl_kernel ks[] = {st->predict, st->domain, st->update, st->solve,
                      st->apply,   st->sort,   st->collide, st->colliders};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {st->ends,  st->params, st->lambda, st->corr,   st->degree,
                   st->adj_start, st->adj, st->adj_other, st->sorted, st->bodies, st->solids};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    cloth_dist_release(&st->dist.cloth);
    pbf_dist_release(sim, st);
    if (st->grid_made)
        grid_release(&st->grid);
    pbf_release(&st->fluid);
    rigid_release(sim, &st->rigid);
    pbd_loads_release(&st->loads);
    if (st->program)
        clReleaseProgram(st->program);
    if (st->cprogram)
        clReleaseProgram(st->cprogram);
    free(st);
    sim->state = NULL;
}

/* What carries from substep to substep beyond positions and velocities (λ of the distance
 * constraints restarts at 0): the fluid's multipliers for the warm start and its density, and
 * the rigid bodies' momenta and poses. */
static size_t pbd_state_parts(mz_sim *sim, mz_state_part *parts, size_t max)
{
    pbd_state *st = sim->state;
    const mz_state_part all[] = {
        {"pbf_lambda", &st->fluid.lambda, NULL, 0, 4},
        {"pbf_lambda_change", &st->fluid.lambda_s, NULL, 0, 4},
        {"pbf_density", &st->fluid.density, NULL, 0, 4},
        {"rigid_bodies", &st->rigid.bodies, NULL, 0, 0},
    };
    return sim_state_existing(all, sizeof all / sizeof *all, parts, max);
}

/* As pbd_init makes them: the constraints' buffers and adjacency; the body and collider tables;
 * PBF's buffers; the rigids'; the sorted snapshot and the grid (when anything collides or there
 * is fluid); PBF's boundary particles, sorted last (the most may be held while they are); the
 * forces on solids. A rank's bodies (cloth_dist.c): every id's slot, λ at both ends, the
 * gather's x*. */
static size_t pbd_device_bytes(const mz_scene *s, size_t n, size_t *held)
{
    bool pbf = scene_solver(s) == MZ_SOLVER_PBF, slabs = dist_active();
    size_t all = scene_particle_count(s), nc = bodies_constraint_count(s), m = nc ? nc : 1;
    /* constraint_buffers: ends, parameters, λ, corrections; adjacency start, adjacency and
     * partners, degree */
    size_t bytes = m * (8 + 16 + 4 + 16) + 4 * (all + 1) + 2 * 4 * (2 * nc + 1) +
                   4 * (all ? all : 1);
    bytes += (s->n_fluids + bodies_count(s)) * sizeof(body_info) +
             (s->n_colliders + 1) * sizeof(collider_dev);
    bytes += (pbf ? pbf_device_bytes(s, n) : 0) + rigid_device_bytes(s);
    double contact;
    size_t copies = 0; /* the grid's sort copies: made at its first sort, after the walls' */
    if (contacts_of(s, &contact) || pbf || slabs) {
        size_t cells = grid_cells_in(n, grid_cell(s, contact), s->sim.dimensions, s->domain.min,
                                     s->domain.max, slabs ? MZ_GRID_DENSE : MZ_GRID_AUTO);
        bytes += 16 * n + grid_device_bytes(n, cells, NULL, 0, slabs, 0);
        copies = 2 * 4 * n;
    }
    size_t walls_sorting = 0,
           walls = pbf ? boundary_device_bytes(s, n, scene_support_radius(s), false,
                                               &walls_sorting)
                       : 0;
    *held = bytes + walls + pbd_loads_bytes(s, n);
    /* a rank's bodies (cloth_dist.c): every id's slot, λ at both ends, the gather's x*; every
     * rigid particle's x* by id (rigid_dist.c); the fluid's attributes by body */
    if (slabs && nc)
        *held += 4 * all + 8 * nc + 16 * n;
    for (size_t k = 0; slabs && k < s->n_rigids; k++)
        *held += s->rigids[k].geom ? s->rigids[k].geom->n * 16 : 0;
    if (slabs && pbf)
        *held += 16 * (s->n_fluids + bodies_count(s));
    if (slabs && scene_load_count(s)) /* the wall corrections travel: the grid's scratch */
        *held += 16 * n;
    size_t sorting = bytes - copies + walls_sorting;
    return sorting > *held ? sorting : *held;
}

/* A frame of substeps; distributed, then new slabs when a rank owns more than 10% above the
 * mean (no output bit depends on where the slabs are). */
static int pbd_advance(mz_sim *sim, double frame_dt)
{
    pbd_state *st = sim->state;
    int rc = sim_fixed_steps(sim, frame_dt);
    if (rc == 0 && st->dist.on)
        slabs_rebalance(&st->dist.slabs);
    return rc;
}

const mz_solver mz_solver_pbd = {
    .name = "position based",
    .stages = pbd_stages,
    .device_bytes = pbd_device_bytes,
    .init = pbd_init,
    .substep = pbd_substep,
    .advance = pbd_advance,
    .release = pbd_release,
    .state = pbd_state_parts,
    .slab_geometry = pbd_slab_geometry,
    .id_order = true,
};
