/* FLIP/PIC fluid (issue 7), one fixed step (simulation.substeps per frame):
 *
 *   grid        the shared neighbour grid sorts the particles into cells one FLIP cell wide
 *   p2g         each grid node gathers its cell's three lower face velocities, density and
 *               type (fluid / air / solid) from the particles around it; then gravity, and the
 *               faces touching a solid take its velocity (0)
 *   projection  divergence → pressure Poisson solve (red-black SOR, or damped Jacobi, from the
 *               last step's pressure) → pressure gradient subtracted
 *   g2p         velocities extrapolated into the air next to the fluid; each particle takes the
 *               FLIP/PIC blend of the grid's velocity and moves by RK2 through it, then is
 *               pushed out of the walls and colliders
 *
 * With fluids[].transfer "apic" (Jiang et al. 2015) p2g and g2p are p2g_apic and g2p_apic: each
 * particle also carries its velocity's gradient (one float4 per component, apic_c: solver state,
 * in the particles' device order), which p2g spreads as an affine field and g2p takes from the
 * grid; no FLIP share.
 *
 * The projection: flip_pressure.c (kernels/flip/flip_pressure.cl); the state both share:
 * flip_state.h. Kernels and the grid layout: kernels/flip/flip.cl, src/solvers/flip/flip.h. */
#include "device/grid.h"
#include "solvers/colliders.h"
#include "solvers/flip/flip.h"
#include "solvers/flip/flip_multigrid.h"
#include "solvers/flip/flip_state.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const flip_stages[] = {"grid", "p2g", "projection", "g2p", NULL};

/* Layers of faces the velocity is extrapolated into the air: a particle's trilinear stencil
 * reaches one layer past its fluid cell, and RK2's midpoint up to half a step's travel more, so
 * two cover steps of up to a cell. */
#define EXTRAPOLATION_LAYERS 2


static flip_grid grid_for(const mz_scene *s)
{
    int n[3];
    double cell[3];
    scene_flip_grid(s, n, cell);
    int dim = s->sim.dimensions;
    flip_grid g = {0};
    g.origin = sim_float4(s->domain.min);
    if (dim == 2)
        g.origin.s[2] = 0.0f;
    for (int a = 0; a < 3; a++) {
        g.cell.s[a] = (float)cell[a];
        g.inv_cell.s[a] = (float)(1.0 / cell[a]);
        g.inv_cell2.s[a] = a < dim ? (float)(1.0 / (cell[a] * cell[a])) : 0.0f;
        g.cells.s[a] = n[a];
        g.nodes.s[a] = a < dim ? n[a] + 1 : 1;
    }
    const mz_fluid *f = &s->fluids[0];
    g.no_slip.s[0] = f->walls == MZ_WALLS_NO_SLIP;
    g.wall.s[0] = f->walls == MZ_WALLS_WALL_FUNCTION ? (float)(f->viscosity / f->rest_density)
                                                     : 0.0f;
    return g;
}

static size_t node_count(const flip_grid *g)
{
    return (size_t)g->nodes.s[0] * (size_t)g->nodes.s[1] * (size_t)g->nodes.s[2];
}

/* The neighbour grid's cells: at least as wide as the FLIP cells, dense over the domain (the
 * FLIP grid is dense anyway). */
static double neighbour_cell(const flip_grid *g, int dim)
{
    double h = g->cell.s[0];
    for (int a = 1; a < dim; a++)
        h = fmax(h, g->cell.s[a]);
    return h;
}

/* The static colliders' signed distance at every cell centre (negative inside; cells whose
 * centre is inside are solid), uploaded once (moving ones join it every step: flip_solids), and
 * into owner, when it is not NULL, the collider whose solid holds each centre (the nearest; −1
 * none). NULL when there are no colliders. */
static float *collider_distances(const mz_scene *s, const flip_grid *g, size_t nodes,
                                 cl_int *owner)
{
    if (!s->n_colliders)
        return NULL;
    float *d = xmalloc(nodes * sizeof *d);
    size_t nx = (size_t)g->nodes.s[0], ny = (size_t)g->nodes.s[1];
    for (size_t node = 0; node < nodes; node++) {
        size_t idx[3] = {node % nx, node / nx % ny, node / (nx * ny)};
        double p[3];
        for (int a = 0; a < 3; a++)
            p[a] = s->domain.min[a] + ((double)idx[a] + 0.5) * g->cell.s[a];
        double best = INFINITY, inside = 0;
        if (owner)
            owner[node] = -1;
        for (size_t c = 0; c < s->n_colliders; c++) {
            if (s->colliders[c].has_motion)
                continue;
            double dc = collider_distance(&s->colliders[c], p, s->sim.dimensions);
            best = fmin(best, dc);
            if (owner && dc < inside)
                inside = dc, owner[node] = MZ_OWNER_COLLIDER + (cl_int)c;
        }
        d[node] = (float)fmax(fmin(best, 1e30), -1e30);
    }
    return d;
}

/* The forces on solids: each cell's collider (owner: collider_distances's, nodes of them when
 * the scene measures forces), each load's owner and point, and the sums' buffer. Stand-ins
 * when the scene measures none. */
static int loads_init(mz_sim *sim, flip_state *st, cl_int *owner)
{
    const mz_scene *s = sim->scene;
    size_t nl = scene_load_count(s), nodes = st->nodes;
    st->face_star = flip_buffer(sim, nl ? 16 * nodes : 16, "clCreateBuffer(stopped faces)");
    cl_int *lown = xcalloc(nl + 1, sizeof *lown);
    cl_float4 *about = xcalloc(nl + 1, sizeof *about);
    for (size_t k = 0; k < nl; k++) {
        lown[k] = scene_load_ref(s, k).owner;
        about[k] = sim_float4(scene_load_ref(s, k).load->about);
    }
    int flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    st->owner = mz_cl_buffer(sim->cl, flags, 4 * (nl ? nodes : 1), owner,
                             "clCreateBuffer(cell colliders)");
    st->load_owner = mz_cl_buffer(sim->cl, flags, 4 * (nl + 1), lown, "clCreateBuffer(loads)");
    st->load_about = mz_cl_buffer(sim->cl, flags, 16 * (nl + 1), about, "clCreateBuffer(loads)");
    free(lown);
    free(about);
    if (!st->face_star || !st->owner || !st->load_owner || !st->load_about)
        return -1;
    if (nl && !(sim->loads.sums = flip_buffer(sim, 24 * nl, "clCreateBuffer(load sums)")))
        return -1;
    return 0;
}

/* Moving colliders: the static distances and owners kept aside, the per-step ones and the
 * solid cells' velocities made by flip_solids. Nothing when none move. */
static int movers_init(mz_sim *sim, flip_state *st)
{
    const mz_scene *s = sim->scene;
    size_t nodes = st->nodes;
    st->moving = scene_moving_count(s) > 0;
    st->solid_vel = flip_buffer(sim, st->moving ? 16 * nodes : 16, "clCreateBuffer(solid velocities)");
    if (!st->solid_vel)
        return -1;
    if (!st->moving)
        return 0;
    collider_dev *cd = colliders_table(s, st->mover_collider, &st->n_movers);
    st->solids = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              (s->n_colliders + 1) * sizeof *cd, cd, "clCreateBuffer(colliders)");
    free(cd);
    st->sdf_static = st->sdf;
    st->owner_static = st->owner;
    st->sdf = flip_buffer(sim, 4 * nodes, "clCreateBuffer(collider distances)");
    st->owner = flip_buffer(sim, 4 * nodes, "clCreateBuffer(cell colliders)");
    return st->solids && st->sdf && st->owner ? 0 : -1;
}

/* The moving colliders where their laws have them at the step's end: every cell's distance,
 * solid owner and solid velocity. */
static bool place_solids(mz_sim *sim, flip_state *st, double dt)
{
    if (!st->moving)
        return true;
    motion_now now = colliders_now(sim->scene, st->mover_collider, st->n_movers, sim->time + dt);
    cl_uint nc = (cl_uint)sim->scene->n_colliders;
    return KARGS(st->k_solids, "flip_solids", A(st->nodes_u), A(st->g), A(nc), A(st->solids),
                 A(now), A(st->sdf_static), A(st->owner_static), A(st->sdf), A(st->owner),
                 A(st->solid_vel)) &&
           sim_launch(sim, st->k_solids, st->nodes, STAGE_P2G, "flip_solids");
}

/* After the projection, when due: the pressure force on each measured solid. */
static bool face_loads(mz_sim *sim, flip_state *st, double dt)
{
    if (!st->loads_now)
        return true;
    size_t nl = scene_load_count(sim->scene);
    cl_float rho = (cl_float)sim->scene->fluids[0].rest_density, inv_dt = (cl_float)(1.0 / dt);
    return KARGS(st->k_loads, "flip_face_loads", A(st->nodes_u), A(st->g), A(rho), A(inv_dt),
                 A(st->type), A(st->pressure), A(st->face_star), A(st->owner),
                 A(st->load_owner), A(st->load_about), A(sim->loads.sums)) &&
           sim_launch_local(sim, st->k_loads, 0, 256 * nl, 256, MZ_STAGE_OBSERVE,
                            "flip_face_loads");
}

/* Warn when a step can carry a particle more than a cell: the velocity is extrapolated only
 * EXTRAPOLATION_LAYERS faces into the air. The speed is the free fall from the top of the fluid
 * to the floor, or the fastest initial speed: SPH's c0 estimate without its factor 10 (an SPH
 * speed_of_sound given in the scene means nothing here: then no estimate, no warning). */
static void check_step(const mz_scene *s, const flip_grid *g)
{
    double v = s->fluids[0].speed_of_sound > 0 ? 0 : scene_speed_of_sound(s) / 10.0;
    double dt = scene_substep_dt(s), cell = g->cell.s[0];
    for (int a = 1; a < s->sim.dimensions; a++)
        cell = fmin(cell, g->cell.s[a]);
    if (v * dt > cell)
        mz_warn("FLIP step %.3g ms carries a particle at the expected top speed (%.3g m/s, free "
                "fall from the top of the fluid) %.2g cells, more than the one cell the grid "
                "velocity reaches past the fluid: raise simulation.substeps to %.0f",
                1e3 * dt, v, v * dt / cell, ceil(scene_frame_dt(s) * v / cell));
}

static int flip_init(mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    const mz_fluid *f = &s->fluids[0];
    flip_state *st = xcalloc(1, sizeof *st);
    sim->state = st;
    int dim = s->sim.dimensions;
    st->g = grid_for(s);
    st->nodes = node_count(&st->g);
    st->nodes_u = (cl_uint)st->nodes;
    double n0 = 1.0;
    for (int a = 0; a < dim; a++)
        n0 *= st->g.cell.s[a] / f->spacing;
    st->inv_n0 = (float)(1.0 / n0);
    check_step(s, &st->g);

    st->apic = f->transfer == MZ_TRANSFER_APIC;
    const char *const names[] = {st->apic ? "p2g_apic" : "p2g", "prepare_faces", "extrapolate",
                                 st->apic ? "g2p_apic" : "g2p", NULL};
    cl_kernel *const kernels[] = {&st->k_p2g, &st->k_prepare, &st->k_extrapolate, &st->k_g2p};
    st->program = sim_build_kernels(sim, "flip/flip.cl", names, kernels);
    if (!st->program || flip_pressure_init(sim, st) != 0)
        return -1;
    /* The solids' kernels, only when the scene has forces or moving colliders to measure. */
    if (scene_load_count(s) || scene_moving_count(s)) {
        static const char *const snames[] = {"flip_face_loads", "flip_solids", NULL};
        cl_kernel *const skernels[] = {&st->k_loads, &st->k_solids};
        st->solids_program = sim_build_kernels(sim, "flip/flip_solids.cl", snames, skernels);
        if (!st->solids_program)
            return -1;
    }

    size_t nodes = st->nodes, n = sim->n;
    struct {
        cl_mem *m;
        size_t bytes;
        const char *what;
    } bufs[] = {{&st->face_vel, 16 * nodes, "clCreateBuffer(face velocities)"},
                {&st->face_old, 16 * nodes, "clCreateBuffer(face velocities before projection)"},
                {&st->face_adv, 16 * nodes, "clCreateBuffer(advection velocities)"},
                {&st->valid, 4 * nodes, "clCreateBuffer(valid faces)"},
                {&st->valid_tmp, 4 * nodes, "clCreateBuffer(extrapolated valid faces)"},
                {&st->type, nodes, "clCreateBuffer(cell types)"},
                {&st->density, 4 * nodes, "clCreateBuffer(cell densities)"},
                {&st->pressure, 8 * nodes, "clCreateBuffer(pressure and correction)"},
                {&st->rhs, 8 * nodes, "clCreateBuffer(pressure right-hand sides)"},
                {&st->diag, 4 * nodes, "clCreateBuffer(pressure diagonal)"},
                {&st->part_density, 4 * n, "clCreateBuffer(particle density)"},
                {&st->part_pressure, 4 * n, "clCreateBuffer(particle pressure)"}};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (!(*bufs[i].m = flip_buffer(sim, bufs[i].bytes, bufs[i].what)))
            return -1;
    if (s->sim.pressure_solver == MZ_PRESSURE_JACOBI &&
        !(st->pressure_tmp = flip_buffer(sim, 8 * nodes, "clCreateBuffer(pressure, next)")))
        return -1;
    /* APIC's velocity gradients, zero at the start (a uniform initial velocity). */
    for (int a = 0; st->apic && a < dim; a++) {
        cl_float zero = 0.0f;
        if (!(st->apic_c[a] = flip_buffer(sim, 16 * n, "clCreateBuffer(APIC velocity gradients)")))
            return -1;
        if (n && !cl_ok(clEnqueueFillBuffer(sim->cl->queue, st->apic_c[a], &zero, sizeof zero, 0,
                                            16 * n, 0, NULL, NULL),
                        "clEnqueueFillBuffer(APIC velocity gradients)"))
            return -1;
    }
    /* The static colliders' distances and, for the forces on solids, each cell's collider: one
     * pass over the cells. */
    size_t nl = scene_load_count(s);
    cl_int *owner = xmalloc((nl ? nodes : 1) * sizeof *owner);
    for (size_t node = 0; node < (nl ? nodes : 1); node++)
        owner[node] = -1;
    float *sdf = collider_distances(s, &st->g, nodes, nl ? owner : NULL);
    st->colliders = sdf != NULL;
    st->sdf = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, sdf ? 4 * nodes : 4, sdf,
                           "clCreateBuffer(collider distances)");
    free(sdf);
    int rc = !st->sdf || loads_init(sim, st, owner) != 0 || movers_init(sim, st) != 0 ? -1 : 0;
    free(owner);
    if (rc != 0)
        return -1;
    /* The warm start's first guess, frame 0's density and pressure: all zero. */
    cl_float zero = 0.0f;
    cl_mem zeroed[] = {st->pressure, st->part_density, st->part_pressure};
    size_t zeroed_bytes[] = {8 * nodes, 4 * n, 4 * n};
    for (size_t i = 0; i < 3; i++)
        if (zeroed_bytes[i] &&
            !cl_ok(clEnqueueFillBuffer(sim->cl->queue, zeroed[i], &zero, sizeof zero, 0,
                                       zeroed_bytes[i], 0, NULL, NULL),
                   "clEnqueueFillBuffer(FLIP initial state)"))
            return -1;

    if (grid_create(&st->grid, sim->cl, n, neighbour_cell(&st->g, dim), dim, s->domain.min, s->domain.max,
                    MZ_GRID_DENSE) != 0)
        return -1;
    st->grid_made = true;
    sim->grid = &st->grid;
    cl_mem *moved4[] = {&sim->inv_mass, &sim->id, &sim->body};
    if (grid_register(&st->grid, &sim->pos, 16) || grid_register(&st->grid, &sim->vel, 16))
        return -1;
    for (size_t i = 0; i < sizeof moved4 / sizeof *moved4; i++)
        if (grid_register(&st->grid, moved4[i], 4))
            return -1;
    for (int a = 0; st->apic && a < dim; a++)
        if (grid_register(&st->grid, &st->apic_c[a], 16))
            return -1;
    sim->field[MZ_FIELD_DENSITY] = &st->part_density;
    sim->field[MZ_FIELD_PRESSURE] = &st->part_pressure;
    return 0;
}

int flip_p2g(mz_sim *sim, double dt)
{
    flip_state *st = sim->state;
    const mz_scene *s = sim->scene;
    if (grid_build(&st->grid, sim->pos) != 0)
        return -1;
    sim_profile_grid(sim, &st->grid, STAGE_GRID);
    cl_float4 gdt = sim_frame(s, sim->time).g;
    for (int a = 0; a < 3; a++)
        gdt.s[a] *= (float)dt;
    cl_float dt_f = (cl_float)dt;
    if (!place_solids(sim, st, dt))
        return -1;
    cl_mem cz = st->apic_c[2] ? st->apic_c[2] : st->apic_c[1]; /* 2D: never read */
    bool p2g = st->apic
                   ? KARGS(st->k_p2g, "p2g_apic", A(st->nodes_u), A(st->g), A(st->grid.desc),
                           A(st->grid.cell_words), A(st->grid.cell_first), A(sim->pos),
                           A(sim->vel), A(st->inv_n0), A(st->colliders), A(st->sdf),
                           A(st->face_vel), A(st->density), A(st->type), A(st->apic_c[0]),
                           A(st->apic_c[1]), A(cz))
                   : KARGS(st->k_p2g, "p2g", A(st->nodes_u), A(st->g), A(st->grid.desc),
                           A(st->grid.cell_words), A(st->grid.cell_first), A(sim->pos),
                           A(sim->vel), A(st->inv_n0), A(st->colliders), A(st->sdf),
                           A(st->face_vel), A(st->density), A(st->type));
    return p2g && sim_launch(sim, st->k_p2g, st->nodes, STAGE_P2G, "p2g") &&
                   KARGS(st->k_prepare, "prepare_faces", A(st->nodes_u), A(st->g), A(gdt),
                         A(dt_f), A(st->type), A(st->face_vel), A(st->face_old),
                         A(st->loads_now), A(st->face_star), A(st->moving),
                         A(st->solid_vel)) &&
                   sim_launch(sim, st->k_prepare, st->nodes, STAGE_P2G, "prepare_faces")
               ? 0
               : -1;
}

int flip_extrapolate(mz_sim *sim)
{
    flip_state *st = sim->state;
    for (int layer = 0; layer < EXTRAPOLATION_LAYERS; layer++) {
        if (!KARGS(st->k_extrapolate, "extrapolate", A(st->nodes_u), A(st->g), A(st->face_vel),
                   A(st->face_old), A(st->face_adv), A(st->valid), A(st->valid_tmp)) ||
            !sim_launch(sim, st->k_extrapolate, st->nodes, STAGE_G2P, "extrapolate"))
            return -1;
        swap_mem(&st->valid, &st->valid_tmp);
    }
    return 0;
}

int flip_g2p(mz_sim *sim, double dt)
{
    flip_state *st = sim->state;
    const mz_scene *s = sim->scene;
    const mz_fluid *f = &s->fluids[0];
    cl_float dt_f = (cl_float)dt, ratio = (cl_float)f->flip_ratio;
    cl_float rho0 = (cl_float)f->rest_density;
    cl_float4 dmin = sim_float4(s->domain.min), dmax = sim_float4(s->domain.max);
    mz_frame_arg frame = sim_frame(s, sim->time);
    cl_mem cz = st->apic_c[2] ? st->apic_c[2] : st->apic_c[1]; /* 2D: never written */
    if (st->apic)
        return KARGS(st->k_g2p, "g2p_apic", A(sim->n_u), A(st->g), A(dt_f), A(rho0), A(dmin),
                     A(dmax), A(st->colliders), A(st->sdf), A(st->face_vel), A(st->face_adv),
                     A(st->type), A(st->density), A(st->pressure), A(sim->pos), A(sim->vel),
                     A(st->part_density), A(st->part_pressure), A(st->moving),
                     A(st->solid_vel), A(frame), A(st->apic_c[0]), A(st->apic_c[1]),
                     A(cz)) &&
                       sim_launch(sim, st->k_g2p, sim->n, STAGE_G2P, "g2p")
                   ? 0
                   : -1;
    return KARGS(st->k_g2p, "g2p", A(sim->n_u), A(st->g), A(dt_f), A(ratio), A(rho0), A(dmin),
                 A(dmax), A(st->colliders), A(st->sdf), A(st->face_vel), A(st->face_old),
                 A(st->face_adv), A(st->type), A(st->density), A(st->pressure), A(sim->pos),
                 A(sim->vel),
                 A(st->part_density), A(st->part_pressure), A(st->moving), A(st->solid_vel),
                 A(frame)) &&
                   sim_launch(sim, st->k_g2p, sim->n, STAGE_G2P, "g2p")
               ? 0
               : -1;
}

static int flip_substep(mz_sim *sim, double dt)
{
    flip_state *st = sim->state;
    st->loads_now = sim->loads.sums && sim_loads_due(sim, dt);
    if (flip_p2g(sim, dt) || flip_project(sim, dt) || !face_loads(sim, st, dt) ||
        flip_extrapolate(sim) || flip_g2p(sim, dt))
        return -1;
    return 0;
}

flip_view flip_get_view(const mz_sim *sim)
{
    const flip_state *st = sim->state;
    return (flip_view){st->g,
                       st->nodes,
                       st->face_vel,
                       st->face_old,
                       st->face_adv,
                       st->valid,
                       st->type,
                       st->density,
                       st->pressure,
                       st->diag,
                       {st->apic_c[0], st->apic_c[1], st->apic_c[2]}};
}

const flip_stats *flip_get_stats(const mz_sim *sim)
{
    return &((const flip_state *)sim->state)->stats;
}

/* A step rebuilds everything on the grid from the particles except the pressure and the volume
 * correction's potential (one float2 per node), which start the next solve (warm start); they
 * are stored per grid node, not per particle, so the particles' device order does not concern
 * them. With APIC, also the particles' velocity gradients (per particle, in device order, as
 * pos and vel are). */
static size_t flip_state_parts(mz_sim *sim, mz_state_part *parts, size_t max)
{
    flip_state *st = sim->state;
    const mz_state_part all[] = {
        {"flip_pressure", &st->pressure, NULL, 0, 0},
        {"flip_apic_cx", &st->apic_c[0], NULL, 0, 16}, /* NULL handles without APIC: left out */
        {"flip_apic_cy", &st->apic_c[1], NULL, 0, 16},
        {"flip_apic_cz", &st->apic_c[2], NULL, 0, 16},
    };
    return sim_state_existing(all, sizeof all / sizeof *all, parts, max);
}

static void flip_release(mz_sim *sim)
{
    flip_state *st = sim->state;
    if (!st)
        return;
    if (st->grid_made)
        grid_release(&st->grid);
    cl_kernel ks[] = {st->k_p2g,      st->k_prepare,     st->k_setup,
                      st->k_jacobi,   st->k_rbgs,        st->k_residual,
                      st->k_gradient, st->k_extrapolate, st->k_g2p,
                      st->k_loads,    st->k_solids,      st->k_fluid_count,
                      st->k_fluid_list};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {st->face_vel,  st->face_old,     st->face_adv,     st->valid,
                   st->valid_tmp, st->type,         st->density,      st->pressure,
                   st->pressure_tmp, st->rhs,       st->diag,         st->sdf,  st->partial,
                   st->part_density, st->part_pressure, st->face_star, st->owner,
                   st->load_owner, st->load_about, st->solids, st->sdf_static,
                   st->owner_static, st->solid_vel, st->apic_c[0], st->apic_c[1],
                   st->apic_c[2], st->fluid_counts, st->fluid_offsets, st->fluid_list};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (st->program)
        clReleaseProgram(st->program);
    if (st->pressure_program)
        clReleaseProgram(st->pressure_program);
    if (st->solids_program)
        clReleaseProgram(st->solids_program);
    flip_mg_release(st->mg);
    free(st->partial_host);
    free(st->lister_counts);
    free(st);
    sim->state = NULL;
}

/* As flip_init makes them: per node its table's buffers (face, reference and advection
 * velocities, valid flags and their extrapolation copy, type, density, pressure and
 * right-hand sides, diagonal), Jacobi's next pressure; per particle density, pressure and
 * APIC's gradients; the colliders' distances; the forces on solids (loads_init); moving
 * colliders (movers_init); the projection's (flip_pressure_bytes); the neighbour grid, moving
 * position, velocity, inverse mass, id, body and APIC's gradients. */
static size_t flip_device_bytes(const mz_scene *s, size_t n, size_t *held)
{
    flip_grid g = grid_for(s);
    size_t nodes = node_count(&g), nl = scene_load_count(s), dim = (size_t)s->sim.dimensions;
    bool apic = s->fluids[0].transfer == MZ_TRANSFER_APIC, moving = scene_moving_count(s) > 0;
    size_t bytes = nodes * (3 * 16 + 2 * 4 + 1 + 4 + 2 * 8 + 4) + n * (2 * 4 + (apic ? 16 * dim : 0));
    if (s->sim.pressure_solver == MZ_PRESSURE_JACOBI)
        bytes += 8 * nodes;
    bytes += s->n_colliders ? 4 * nodes : 4;
    bytes += (nl ? 16 * nodes : 16) + 4 * (nl ? nodes : 1) + 20 * (nl + 1) + 24 * nl;
    bytes += moving ? 16 * nodes + (s->n_colliders + 1) * sizeof(collider_dev) + 2 * 4 * nodes
                    : 16;
    bytes += flip_pressure_bytes(s, &g, nodes);
    size_t elems[3 + 5] = {16, 16, 4, 4, 4, 16, 16, 16};
    size_t cells = grid_cells_in(n, neighbour_cell(&g, (int)dim), (int)dim, s->domain.min,
                                 s->domain.max, MZ_GRID_DENSE);
    bytes += grid_device_bytes(n, cells, elems, 5 + (apic ? (int)dim : 0), false, 0);
    return *held = bytes;
}

const mz_solver mz_solver_flip = {
    .name = "FLIP",
    .stages = flip_stages,
    .device_bytes = flip_device_bytes,
    .init = flip_init,
    .substep = flip_substep,
    .release = flip_release,
    .state = flip_state_parts,
};
