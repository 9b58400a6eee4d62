/* FLIP's pressure projection (src/solvers/flip/flip.c runs the rest of the step): the cell
 * types' divergence and the volume correction's target into a Poisson system, solved by
 * red-black SOR (or damped Jacobi, or multigrid-preconditioned CG: flip_cg.c) over the fluid
 * cells only, from the last step's pressure; then the pressure gradient subtracted. Kernels:
 * kernels/flip/flip_pressure.cl. */
#include "solvers/flip/flip_multigrid.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Damped Jacobi: ω = 1 leaves the checkerboard mode of a closed region (eigenvalue 2 of D⁻¹A)
 * undamped forever; 0.8 damps it by 0.6 a sweep and slows the smooth modes by only 20%. */
#define JACOBI_OMEGA 0.8

bool flip_pressure_residual_begin(mz_sim *sim, flip_state *st, cl_event *read)
{
    cl_uint n_fluid = st->n_fluid[0] + st->n_fluid[1];
    return KARGS(st->k_residual, "pressure_residual", A(n_fluid), A(st->g), A(st->fluid_list),
                 A(st->type), A(st->rhs), A(st->diag), A(st->pressure), A(st->partial)) &&
           cl_ok(clSetKernelArg(st->k_residual, 8, 12 * st->local, NULL),
                 "clSetKernelArg(pressure_residual, scratch)") &&
           sim_launch_local(sim, st->k_residual, 0, st->groups * st->local, st->local,
                            STAGE_PROJECTION, "pressure_residual") &&
           cl_ok(clEnqueueReadBuffer(sim->cl->queue, st->partial, CL_FALSE, 0, 12 * st->groups,
                                     st->partial_host, 0, NULL, read),
                 "clEnqueueReadBuffer(pressure residual)");
}

bool flip_pressure_residual_end(flip_state *st, cl_event read, float *r, float *b, long *fluid)
{
    bool ok = cl_ok(clWaitForEvents(1, &read), "clWaitForEvents(pressure residual)");
    clReleaseEvent(read);
    if (!ok)
        return false;
    *r = *b = 0.0f;
    double count = 0;
    for (size_t g = 0; g < st->groups; g++) {
        *r = fmaxf(*r, st->partial_host[3 * g]);
        *b = fmaxf(*b, st->partial_host[3 * g + 1]);
        count += st->partial_host[3 * g + 2];
    }
    *fluid = (long)count;
    return true;
}

bool flip_pressure_residual(mz_sim *sim, flip_state *st, float *r, float *b, long *fluid)
{
    cl_event read;
    return flip_pressure_residual_begin(sim, st, &read) &&
           flip_pressure_residual_end(st, read, r, b, fluid);
}

/* Successive over-relaxation's best ω for a Poisson problem n cells across:
 * 2 / (1 + sin(π/n)). The slowest mode of a body of fluid with a free surface spans about
 * twice its size (p = 0 on one side, ∂p/∂n = 0 on the other); its size from its cell count. */
static double sor_omega(long fluid_cells, int dim)
{
    double n = 2.0 * pow((double)(fluid_cells > 1 ? fluid_cells : 1), 1.0 / dim);
    return 2.0 / (1.0 + sin(acos(-1.0) / fmax(n, 2.0)));
}

static bool sweep(mz_sim *sim, flip_state *st, float omega)
{
    if (sim->scene->sim.pressure_solver == MZ_PRESSURE_JACOBI) {
        bool ok = KARGS(st->k_jacobi, "pressure_jacobi", A(st->nodes_u), A(st->g), A(omega),
                        A(st->type), A(st->rhs), A(st->diag), A(st->pressure),
                        A(st->pressure_tmp)) &&
                  sim_launch(sim, st->k_jacobi, st->nodes, STAGE_PROJECTION, "pressure_jacobi");
        swap_mem(&st->pressure, &st->pressure_tmp);
        return ok;
    }
    for (int colour = 0; colour < 2; colour++) {
        cl_uint items = st->n_fluid[colour], first = colour ? st->n_fluid[0] : 0;
        if (items && (!KARGS(st->k_rbgs, "pressure_rbgs", A(items), A(first), A(st->g),
                             A(st->fluid_list), A(omega), A(st->type), A(st->rhs), A(st->diag),
                             A(st->pressure)) ||
                      !sim_launch(sim, st->k_rbgs, items, STAGE_PROJECTION, "pressure_rbgs")))
            return false;
    }
    return true;
}

/* Level l's count (count: fluid_count*) or list launch, its counts and offsets at 2 w l. */
static bool lister_launch(mz_sim *sim, flip_state *st, bool count, const flip_level_cells *c,
                          int l)
{
    size_t w = st->listers, items = st->lister_groups ? w * st->local : w;
    size_t local = st->lister_groups ? st->local : 0;
    cl_uint chunk = (cl_uint)((c->nodes + w - 1) / w), n_nodes = (cl_uint)c->nodes;
    cl_uint base = (cl_uint)(2 * w * (size_t)l);
    size_t scratch = 4 * st->local; /* the groups' local sums or scan, bytes */
    cl_kernel k = count ? st->k_fluid_count : st->k_fluid_list;
    const char *name = count ? (st->lister_groups ? "fluid_count_groups" : "fluid_count")
                             : (st->lister_groups ? "fluid_list_groups" : "fluid_list");
    bool args = count ? KARGS(k, name, A(n_nodes), A(chunk), A(*c->g), A(c->type), A(base),
                              A(st->fluid_counts))
                      : KARGS(k, name, A(n_nodes), A(chunk), A(*c->g), A(c->type), A(base),
                              A(st->fluid_offsets), A(c->list));
    cl_uint last = count ? 6 : 7; /* the groups' kernels' scratch */
    return args &&
           (!st->lister_groups ||
            cl_ok(clSetKernelArg(k, last, scratch, NULL), "clSetKernelArg(lister scratch)")) &&
           sim_launch_local(sim, k, 0, items, local, STAGE_PROJECTION,
                            count ? "fluid_count" : "fluid_list");
}

bool flip_list_levels(mz_sim *sim, flip_state *st, int levels, const flip_level_cells *cells)
{
    size_t w = st->listers;
    if ((size_t)levels > st->lister_slices) {
        mz_error("flip: %d grid levels to list, room for %zu", levels, st->lister_slices);
        return false;
    }
    for (int l = 0; l < levels; l++)
        if (!lister_launch(sim, st, true, &cells[l], l))
            return false;
    /* one read-back for all the levels: each is a wait for the device */
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, st->fluid_counts, CL_TRUE, 0,
                                   8 * w * (size_t)levels, st->lister_counts, 0, NULL, NULL),
               "clEnqueueReadBuffer(fluid counts)"))
        return false;
    for (int l = 0; l < levels; l++) {
        cl_uint total[2] = {0, 0}, *at = st->lister_counts + 2 * w * (size_t)l;
        for (size_t k = 0; k < w; k++)
            for (int c = 0; c < 2; c++) {
                cl_uint n = at[2 * k + c];
                at[2 * k + c] = total[c];
                total[c] += n;
            }
        for (size_t k = 0; k < w; k++)
            at[2 * k + 1] += total[0];
        cells[l].n_fluid[0] = total[0];
        cells[l].n_fluid[1] = total[1];
    }
    /* The in-order queue writes the offsets before a later call's read-back reuses the host
     * array. */
    if (!cl_ok(clEnqueueWriteBuffer(sim->cl->queue, st->fluid_offsets, CL_FALSE, 0,
                                    8 * w * (size_t)levels, st->lister_counts, 0, NULL, NULL),
               "clEnqueueWriteBuffer(fluid offsets)"))
        return false;
    for (int l = 0; l < levels; l++)
        if (!lister_launch(sim, st, false, &cells[l], l))
            return false;
    return true;
}

bool flip_list_cells(mz_sim *sim, flip_state *st, const flip_grid *g, size_t nodes,
                     cl_mem type, cl_mem list, cl_uint n_fluid[2])
{
    flip_level_cells c = {g, nodes, type, list, n_fluid};
    return flip_list_levels(sim, st, 1, &c);
}

/* Sweeps until the divergence left is below pressure_tolerance × the largest before, checked
 * after sweeps 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, ... (each check reads back; at most a quarter
 * more sweeps, and at most 16, than needed). */
static int solve_pressure(mz_sim *sim, flip_state *st)
{
    const mz_simulation *S = &sim->scene->sim;
    float r, b;
    long fluid;
    if (!flip_pressure_residual(sim, st, &r, &b, &fluid))
        return -1;
    int it = 0, next = 1;
    if (b == 0.0f) { /* nothing to correct: the answer is p = 0 */
        cl_float zero = 0.0f;
        if (!cl_ok(clEnqueueFillBuffer(sim->cl->queue, st->pressure, &zero, sizeof zero, 0,
                                       8 * st->nodes, 0, NULL, NULL),
                   "clEnqueueFillBuffer(pressure)"))
            return -1;
        r = 0.0f;
    }
    if (S->pressure_solver == MZ_PRESSURE_MGPCG) {
        if (r > S->pressure_tolerance * b &&
            (it = flip_mgpcg(sim, st, S->pressure_tolerance * b, S->pressure_iterations,
                             &r, &fluid)) < 0)
            return -1;
    } else {
        float omega = (float)(S->pressure_solver == MZ_PRESSURE_JACOBI
                                  ? JACOBI_OMEGA
                                  : sor_omega(fluid, S->dimensions));
        while (r > S->pressure_tolerance * b && it < S->pressure_iterations) {
            if (!sweep(sim, st, omega))
                return -1;
            it++;
            if (it == next || it == S->pressure_iterations) {
                if (!flip_pressure_residual(sim, st, &r, &b, &fluid))
                    return -1;
                next = it + (it / 4 < 1 ? 1 : it / 4 > 16 ? 16 : it / 4);
            }
        }
    }
    flip_stats *stat = &st->stats;
    if (stat->projections == 0)
        stat->first_iterations = it;
    stat->projections++;
    stat->iterations += it;
    stat->capped += r > S->pressure_tolerance * b;
    stat->last_iterations = it;
    stat->last_residual = b > 0 ? r / b : 0;
    stat->fluid_cells = fluid;
    return 0;
}

int flip_project(mz_sim *sim, double dt)
{
    flip_state *st = sim->state;
    const mz_fluid *f = &sim->scene->fluids[0];
    cl_float rho_over_dt = (cl_float)(f->rest_density / dt), inv_dt = (cl_float)(1.0 / dt);
    cl_float dt_over_rho = (cl_float)(dt / f->rest_density);
    cl_float correction = (cl_float)f->volume_correction;
    if (!KARGS(st->k_setup, "pressure_setup", A(st->nodes_u), A(st->g), A(rho_over_dt),
               A(correction), A(inv_dt), A(st->type), A(st->density), A(st->face_vel),
               A(st->rhs), A(st->diag), A(st->pressure)) ||
        !sim_launch(sim, st->k_setup, st->nodes, STAGE_PROJECTION, "pressure_setup") ||
        !flip_list_cells(sim, st, &st->g, st->nodes, st->type, st->fluid_list, st->n_fluid) ||
        solve_pressure(sim, st) != 0)
        return -1;
    return KARGS(st->k_gradient, "pressure_gradient", A(st->nodes_u), A(st->g), A(dt_over_rho),
                 A(st->type), A(st->density), A(st->pressure), A(st->face_vel),
                 A(st->face_old), A(st->face_adv), A(st->valid)) &&
                   sim_launch(sim, st->k_gradient, st->nodes, STAGE_PROJECTION,
                              "pressure_gradient")
               ? 0
               : -1;
}

/* The residual's partial-sum groups and the fluid cells' listers on a GPU or a CPU of `local`
 * work-items a group. */
static size_t residual_groups(bool gpu)
{
    return gpu ? 512 : 16;
}

static size_t listers(bool gpu, size_t local)
{
    return gpu ? 1024 : 2 * local;
}

/* The grids listed with one read-back (flip_list_levels): the multigrid's coarse levels, or
 * the pressure grid alone; each has its listers' counts and offsets. */
static size_t lister_slices(const mz_scene *s, const flip_grid *g)
{
    if (s->sim.pressure_solver != MZ_PRESSURE_MGPCG)
        return 1;
    int levels = flip_mg_level_count(g, s->sim.dimensions);
    return levels > 2 ? (size_t)levels - 1 : 1;
}

/* Whether the listers are work-groups (fluid_count_groups: a GPU's) or single work-items (a
 * CPU's, which walks a chunk fastest alone); MIZU_FLIP_LISTERS=groups|items forces it. Both
 * make the same list. */
static bool listers_in_groups(bool gpu)
{
    const char *e = getenv("MIZU_FLIP_LISTERS");
    if (e && strcmp(e, "groups") == 0)
        return true;
    if (e && strcmp(e, "items") == 0)
        return false;
    return gpu;
}

size_t flip_pressure_bytes(const mz_scene *s, const flip_grid *g, size_t nodes)
{
    /* a GPU's counts (larger than a CPU's): never less than a run holds */
    size_t groups = residual_groups(true);
    /* the residual's partials; the listers' counts and offsets; the fluid cells' list */
    size_t bytes = 12 * groups + 2 * 8 * listers(true, 0) * lister_slices(s, g) + 4 * nodes;
    if (s->sim.pressure_solver == MZ_PRESSURE_MGPCG)
        bytes += flip_mg_bytes(g, s->sim.dimensions, groups);
    return bytes;
}

int flip_pressure_init(mz_sim *sim, flip_state *st)
{
    bool gpu = (sim->cl->type & CL_DEVICE_TYPE_GPU) != 0;
    st->lister_groups = listers_in_groups(gpu);
    const char *names[] = {"pressure_setup",
                           "pressure_jacobi",
                           "pressure_rbgs",
                           "pressure_residual",
                           "pressure_gradient",
                           st->lister_groups ? "fluid_count_groups" : "fluid_count",
                           st->lister_groups ? "fluid_list_groups" : "fluid_list",
                           NULL};
    cl_kernel *const kernels[] = {&st->k_setup,    &st->k_jacobi,      &st->k_rbgs,
                                  &st->k_residual, &st->k_gradient,    &st->k_fluid_count,
                                  &st->k_fluid_list};
    st->pressure_program = sim_build_kernels(sim, "flip/flip_pressure.cl", names, kernels);
    if (!st->pressure_program)
        return -1;
    st->local = gpu ? 256 : 64;
    while (st->local > sim->cl->max_wg)
        st->local /= 2;
    st->groups = residual_groups(gpu);
    st->partial = flip_buffer(sim, 12 * st->groups, "clCreateBuffer(pressure residual)");
    st->partial_host = xcalloc(3 * st->groups, sizeof(float));
    if (!st->partial)
        return -1;
    /* Listers: on a GPU a thousand work-groups, each a chunk of nodes a tile at a time; on a
     * CPU one chunk per work-item of a group or two. */
    st->listers = listers(gpu, st->local);
    st->lister_slices = lister_slices(sim->scene, &st->g);
    st->lister_counts = xcalloc(2 * st->listers * st->lister_slices, sizeof *st->lister_counts);
    if (sim->scene->sim.pressure_solver == MZ_PRESSURE_MGPCG && flip_mg_init(sim, st) != 0)
        return -1;
    size_t count_bytes = 8 * st->listers * st->lister_slices; /* a level's after another's */
    return (st->fluid_counts = flip_buffer(sim, count_bytes, "clCreateBuffer(fluid counts)")) &&
                   (st->fluid_offsets =
                        flip_buffer(sim, count_bytes, "clCreateBuffer(fluid offsets)")) &&
                   (st->fluid_list = flip_buffer(sim, 4 * st->nodes, "clCreateBuffer(fluid cells)"))
               ? 0
               : -1;
}
