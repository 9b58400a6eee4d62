/* Cloth and soft bodies under mpirun (docs/distributed.md, "Cloth and soft bodies"): the slabs,
 * exchange and halo values of PBF fluid (pbf_dist.c), with the distance constraints projected
 * by each rank for the particles it owns.
 *
 * - The constraint tables (ends, parameters, the adjacency by particle id, degrees) are the
 *   single process's, whole on every rank. Their particles are named by id; a rank finds a
 *   partner's slot in its window through slot_of, rewritten after every build (a kernel over
 *   the window). Entries of particles that left stay behind, stale: the kernels check that the
 *   slot they point at holds that id.
 * - One process projects every constraint (distance_solve), then gathers each particle's
 *   corrections in adjacency order (distance_apply). A rank does both at once per owned
 *   particle (distance_gather): the same step of each incident constraint, from the same
 *   inputs (its partner's x* from the partner's owner, shared after every pass), summed in the
 *   same order. A constraint between two ranks' particles is stepped on both; each end keeps its
 *   own λ, per adjacency entry, and both copies are the same bits.
 * - Every partner must be in the window: the halo covers twice the longest rest length
 *   (pbd_slab_geometry); a constraint stretched further is found (missing) and the run stops. */
#include "device/cl_prog.h"
#include "dist/dist.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

static cl_mem buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, what);
}

int cloth_dist_init(mz_sim *sim, pbd_state *st)
{
    pbd_cloth_dist *c = &st->dist.cloth;
    c->gather = cl_prog_kernel(st->cprogram, "distance_gather");
    c->map = cl_prog_kernel(st->cprogram, "slot_map");
    c->slot_of = buffer(sim, 4 * sim->n_total, "clCreateBuffer(slot of id)");
    c->lambda = buffer(sim, 8 * (size_t)st->nc, "clCreateBuffer(lambda per end)");
    c->out = buffer(sim, 16 * sim->cap, "clCreateBuffer(gathered positions)");
    c->missing = buffer(sim, 4, "clCreateBuffer(missing partner)");
    if (!c->gather || !c->map || !c->slot_of || !c->lambda || !c->out || !c->missing)
        return -1;
    cl_uint none = ~0u, zero = 0;
    cl_command_queue q = sim->cl->queue;
    if (!cl_ok(clEnqueueFillBuffer(q, c->slot_of, &none, 4, 0, 4 * sim->n_total, 0, NULL, NULL),
               "clEnqueueFillBuffer(slot of id)") ||
        !cl_ok(clEnqueueFillBuffer(q, c->missing, &zero, 4, 0, 4, 0, NULL, NULL),
               "clEnqueueFillBuffer(missing partner)"))
        return -1;
    c->on = true;
    return 0;
}

bool cloth_dist_bind(mz_sim *sim, pbd_state *st, float inv_dt2)
{
    pbd_cloth_dist *c = &st->dist.cloth;
    cl_uint window = sim->n_u, owned_end = window;
    cl_float omega = (cl_float)sim->scene->sim.relaxation;
    cl_int first = 1;
    return KARGS(c->map, "slot_map", A(window), A(sim->id), A(c->slot_of)) &&
           sim_launch(sim, c->map, sim->n, STAGE_GRID, "slot_map") &&
           KARGS(c->gather, "distance_gather", A(owned_end), A(window), A(inv_dt2), A(omega),
                 A(first), A(sim->id), A(c->slot_of), A(st->ends), A(st->params),
                 A(st->adj_start), A(st->adj), A(st->adj_other), A(st->degree), A(sim->pred),
                 A(sim->inv_mass), A(c->lambda), A(c->out), A(c->missing));
}

bool cloth_dist_project(mz_sim *sim, pbd_state *st, bool first)
{
    pbd_cloth_dist *c = &st->dist.cloth;
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    if (end == begin)
        return true;
    cl_uint end_u = (cl_uint)end;
    cl_int f = first;
    return cl_ok(clSetKernelArg(c->gather, 0, sizeof end_u, &end_u),
                 "clSetKernelArg(distance_gather)") &&
           cl_ok(clSetKernelArg(c->gather, 4, sizeof f, &f), "clSetKernelArg(distance_gather)") &&
           sim_launch_range(sim, c->gather, begin, end, STAGE_DISTANCE, "distance_gather") &&
           cl_ok(clEnqueueCopyBuffer(sim->cl->queue, c->out, sim->pred, 16 * begin, 16 * begin,
                                     16 * (end - begin), 0, NULL, NULL),
                 "clEnqueueCopyBuffer(gathered positions)");
}

bool cloth_dist_check(mz_sim *sim, pbd_state *st)
{
    pbd_cloth_dist *c = &st->dist.cloth;
    cl_uint missing = 0;
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, c->missing, CL_TRUE, 0, 4, &missing, 0, NULL,
                                   NULL),
               "clEnqueueReadBuffer(missing partner)"))
        return false;
    if (missing == 0)
        return true;
    /* only this rank knows: the others would wait for it at the next share */
    mz_error("a constraint reaches particle %u, which is not in this rank's window (a halo of "
             "%d layers of %g m beyond its slab): a cloth or soft body stretched past twice its "
             "rest lengths. Run the scene without mpirun",
             missing - 1, st->dist.slabs.halo, st->grid.desc.h);
    dist_abort(MZ_EXIT_RUNTIME);
    return false;
}

void cloth_dist_release(pbd_cloth_dist *c)
{
    cl_kernel ks[] = {c->gather, c->map};
    mz_cl_release_kernels(ks, 2);
    cl_mem ms[] = {c->slot_of, c->lambda, c->out, c->missing};
    mz_cl_release_mems(ms, 4);
    *c = (pbd_cloth_dist){0};
}
