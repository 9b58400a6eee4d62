/* Rigid bodies under mpirun (docs/distributed.md, "Rigid bodies"), on pbf_dist.c's slabs.
 *
 * - Shape matching sums over a body's particles (centre of mass, then A = Σ (x* − c) r0ᵀ, then
 *   the walls' deepest penetrations) in one work-group per body: work-item l adds particles
 *   l, l + 128, ... in turn, then a fixed tree adds the 128 partial sums. Each partial sum runs
 *   through particles that any rank may own, so the ranks cannot each sum theirs and combine
 *   (float addition does not associate): that would be a bounded, not an exact, answer. Instead
 *   every rank gets every rigid particle's x* by id (each owner writes its own into a zeroed
 *   copy, and the copies are OR-ed together: exact, every id has one owner) and runs one
 *   process's rigid_match on it. Every rank then holds the same bodies, bit for bit, and the
 *   same matched x*, which it writes into its window's slots (owned and halo alike).
 * - The per-body stages (predict, update) run on every rank alike from the same body states;
 *   the per-particle ones (place, velocity) run over the window's slots, finding each rigid
 *   particle's rest offset and body by its id: the same inline functions as one process's.
 * - Cost: 16 bytes a rigid particle of the whole run through one MPI_Allreduce an iteration,
 *   and the matching of every body on every rank (a rank's memory holds 36 bytes a rigid
 *   particle of the run: copy, host copy, rest offset, body). Fine for bodies of thousands of
 *   particles; many large bodies would want the sums split by body owner instead. */
#include "device/cl_prog.h"
#include "dist/dist.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <stdlib.h>

int rigid_dist_init(mz_sim *sim, pbd_state *st)
{
    pbd_rigid *r = &st->rigid;
    pbd_rigid_dist *d = &r->dist;
    d->place = cl_prog_kernel(r->program, "rigid_place_slots");
    d->velocity = cl_prog_kernel(r->program, "rigid_velocity_slots");
    d->to_ids = cl_prog_kernel(r->program, "rigid_to_ids");
    d->from_ids = cl_prog_kernel(r->program, "rigid_from_ids");
    size_t bytes = 16 * (size_t)(r->n ? r->n : 1);
    d->x = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes, NULL,
                        "clCreateBuffer(rigid positions by id)");
    d->host = xmalloc(bytes);
    if (!d->place || !d->velocity || !d->to_ids || !d->from_ids || !d->x)
        return -1;
    /* shape matching reads and writes the copy by id: its element 0 is id r->first */
    return cl_ok(clSetKernelArg(r->match, 5, sizeof d->x, &d->x), "clSetKernelArg(rigid_match)") &&
                   cl_ok(clSetKernelArg(r->match, 6, sizeof r->first, &r->first),
                         "clSetKernelArg(rigid_match)")
               ? 0
               : -1;
}

/* A kernel over slots [0, n) of the window (the buffers move with every exchange and build). */
static bool by_slot(mz_sim *sim, pbd_state *st, cl_kernel k, cl_mem out, int stage,
                    const char *name)
{
    pbd_rigid *r = &st->rigid;
    return KARGS(k, name, A(sim->n_u), A(r->first), A(r->n), A(sim->id), A(r->owner), A(r->r0),
                 A(r->bodies), A(out)) &&
           (sim->n == 0 || sim_launch(sim, k, sim->n, stage, name));
}

bool rigid_dist_place(mz_sim *sim, pbd_state *st)
{
    return by_slot(sim, st, st->rigid.dist.place, sim->pred, STAGE_PREDICT, "rigid_place_slots");
}

bool rigid_dist_velocity(mz_sim *sim, pbd_state *st)
{
    return by_slot(sim, st, st->rigid.dist.velocity, sim->vel, STAGE_UPDATE,
                   "rigid_velocity_slots");
}

bool rigid_dist_gather(mz_sim *sim, pbd_state *st)
{
    pbd_rigid *r = &st->rigid;
    pbd_rigid_dist *d = &r->dist;
    cl_command_queue q = sim->cl->queue;
    size_t bytes = 16 * (size_t)r->n, begin, end;
    sim_owned(sim, &begin, &end);
    cl_uint end_u = (cl_uint)end, zero = 0;
    bool ok = cl_ok(clEnqueueFillBuffer(q, d->x, &zero, sizeof zero, 0, bytes, 0, NULL, NULL),
                    "clEnqueueFillBuffer(rigid positions by id)") &&
              KARGS(d->to_ids, "rigid_to_ids", A(end_u), A(r->first), A(r->n), A(sim->id),
                    A(sim->pred), A(d->x)) &&
              (end == begin ||
               sim_launch_range(sim, d->to_ids, begin, end, STAGE_SHAPE, "rigid_to_ids")) &&
              cl_ok(clEnqueueReadBuffer(q, d->x, CL_TRUE, 0, bytes, d->host, 0, NULL, NULL),
                    "clEnqueueReadBuffer(rigid positions by id)");
    if (!ok)
        dist_abort(MZ_EXIT_RUNTIME); /* the other ranks wait in the reduction */
    dist_or_u32(d->host, 4 * (size_t)r->n);
    return cl_ok(clEnqueueWriteBuffer(q, d->x, CL_FALSE, 0, bytes, d->host, 0, NULL, NULL),
                 "clEnqueueWriteBuffer(rigid positions by id)");
}

bool rigid_dist_scatter(mz_sim *sim, pbd_state *st)
{
    pbd_rigid *r = &st->rigid;
    pbd_rigid_dist *d = &r->dist;
    return KARGS(d->from_ids, "rigid_from_ids", A(sim->n_u), A(r->first), A(r->n), A(sim->id),
                 A(d->x), A(sim->pred)) &&
           (sim->n == 0 || sim_launch(sim, d->from_ids, sim->n, STAGE_SHAPE, "rigid_from_ids"));
}

void rigid_dist_release(pbd_rigid_dist *d)
{
    cl_kernel ks[] = {d->place, d->velocity, d->to_ids, d->from_ids};
    mz_cl_release_kernels(ks, 4);
    cl_mem ms[] = {d->x};
    mz_cl_release_mems(ms, 1);
    free(d->host);
    *d = (pbd_rigid_dist){0};
}
