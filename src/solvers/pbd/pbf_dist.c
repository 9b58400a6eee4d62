/* The position-based solver under mpirun, PBF fluid or cloth and soft bodies (docs/distributed.md):
 * slabs of the neighbour grid's layers, as WCSPH runs them (dist/slabs.h), with what sets PBD
 * apart (cloth_dist.c adds the distance constraints).
 *
 * - One process keeps the particle buffers in id order and reads them through the grid's slot
 *   map, so the order within a cell, which every neighbour sum follows, is id order. A rank
 *   keeps its window in the grid's order instead (the exchange needs that) and gives the
 *   kernels an identity slot map; before each build it sorts the window by id, so that the
 *   build's stable sort by cell gives (cell, id): one process's order, whatever the history.
 *   The ids therefore travel with halo copies too.
 * - The grid is built on the predicted positions, so the exchange sends each owned particle to
 *   the windows of its predicted layer, after predict.
 * - Every pass whose output a neighbour reads, computed on the halo, would miss the neighbours
 *   beyond the window: the owners' values are copied into the halo slots instead (slabs_share)
 *   after each of them — the predicted positions after the warm start's correction and after
 *   every iteration (density correction, colliders, domain clamp), this iteration's λ change
 *   before the correction reads it, and the vorticity before confinement reads it. λ itself
 *   (the warm start's, read by its owner only) and the velocities travel with the particles;
 *   the halo's update then computes the owners' bits.
 * - Reach: an owned particle's neighbour query is made at its position now, and one process
 *   finds there the particles whose cells the build put there; the rank holds them only within
 *   its window. After every share of x* a kernel (pbd_reach) checks that each owned particle's
 *   query stays within it; once a substep, a rank whose particle's did not stops the run
 *   (pbf_dist_reach_check): it no longer computes one process's bits. That takes a particle
 *   moved more than the halo less one layer past its slab by the corrections (density,
 *   colliders, domain) within one substep: a run that blows up (a 2D tank of boundary
 *   particles at 8 substeps of 1/160 s threw particles 9 to 13 layers in one substep).
 * - Two halo layers: the iterations move a particle after the build, and a particle of the
 *   first owned layer that moved into the halo layer queries one layer further. Bodies need
 *   more when their constraints reach further (twice the longest rest length).
 * - The fluid's per-particle attributes (mass ratio, volume, fluid flag) are neither carried nor
 *   checkpointed: a rank makes its window's after every build from each particle's body and
 *   inverse mass (fluid.c, pbf_attributes). With bodies in the scene, inverse masses and body
 *   indices travel to the halo (contacts, constraints and the fluid's density read their
 *   neighbours'); a fluid alone reads them of owned particles only, and they stay with them. */
#include "device/cl_prog.h"
#include "dist/dist.h"
#include "scene/bodies.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>

#define PBF_HALO 2

void pbd_slab_geometry(const mz_scene *s, double *h, int *halo)
{
    *h = pbd_cell_size(s); /* the grid pbd_init makes */
    /* A constraint's partner must be in the window of its owner's: twice the longest rest
     * length (cloth_dist.c stops the run if one stretches further) in whole layers. */
    double reach = 2.0 * bodies_longest_rest(s);
    *halo = (int)fmax(PBF_HALO, ceil(reach / *h));
}

cl_mem pbf_dist_slot(const pbd_state *st)
{
    return st->dist.on ? st->dist.slot : st->grid.vals;
}

static cl_mem buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes, NULL, what);
}

/* A scratch buffer replaced by an empty one of `bytes`. */
static bool renew(mz_sim *sim, cl_mem *b, size_t bytes, const char *what)
{
    if (!*b)
        return true;
    cl_mem nb = buffer(sim, bytes, what);
    if (!nb)
        return false;
    clReleaseMemObject(*b);
    *b = nb;
    return true;
}

/* slot[i] = i for i < cap. */
static bool fill_fixed(mz_sim *sim, pbd_state *st, size_t cap)
{
    cl_uint *id = xmalloc((cap ? cap : 1) * sizeof *id);
    for (size_t i = 0; i < cap; i++)
        id[i] = (cl_uint)i;
    bool ok = cl_ok(clEnqueueWriteBuffer(sim->cl->queue, st->dist.slot, CL_TRUE, 0, 4 * cap, id,
                                         0, NULL, NULL),
                    "clEnqueueWriteBuffer(slots)");
    free(id);
    return ok;
}

/* Room for cap particles (slabs.h's grow), between two substeps: the grid keeps the buffers
 * that travel; the rest is scratch, or fixed. */
static int grow(void *ctx, size_t cap)
{
    mz_sim *sim = ctx;
    pbd_state *st = sim->state;
    pbd_fluid *fl = &st->fluid;
    pbd_dist *d = &st->dist;
    if (grid_reserve(&st->grid, cap) != 0)
        return -1;
    cl_mem *b16[] = {&st->sorted, &fl->attr, &fl->attr_sorted, &fl->vs,
                     &fl->omega,  &fl->dv,   &d->cloth.out};
    cl_mem *b4[] = {&fl->lambda_s, &d->slot, &d->keys, &d->vals};
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof b16 / sizeof *b16; i++)
        ok = renew(sim, b16[i], 16 * cap, "clCreateBuffer(PBF scratch)");
    for (size_t i = 0; ok && i < sizeof b4 / sizeof *b4; i++)
        ok = renew(sim, b4[i], 4 * cap, "clCreateBuffer(PBF scratch)");
    if (ok && st->loads.on) /* (a stand-in otherwise) */
        ok = renew(sim, &st->loads.touch, 32 * cap, "clCreateBuffer(touch)");
    if (!ok || !fill_fixed(sim, st, cap))
        return -1;
    sim->cap = cap;
    return 0;
}

int pbf_dist_init(mz_sim *sim, pbd_state *st)
{
    pbd_dist *d = &st->dist;
    mz_grid *g = &st->grid;
    const mz_scene *s = sim->scene;
    while (d->id_bits < 32 && ((size_t)1 << d->id_bits) < sim->n_total)
        d->id_bits++;
    size_t cap = sim->cap;
    d->slot = buffer(sim, 4 * cap, "clCreateBuffer(slots)");
    d->keys = buffer(sim, 4 * cap, "clCreateBuffer(id sort keys)");
    d->vals = buffer(sim, 4 * cap, "clCreateBuffer(id sort values)");
    if (!d->slot || !d->keys || !d->vals || !fill_fixed(sim, st, cap))
        return -1;
    /* What neighbour loops and the halo's own passes read travels with halo copies (ids: the
     * window's sort); a fluid's inverse masses, bodies and densities are read of owned
     * particles only, a body's inverse masses and bodies of neighbours too (contacts, partners). */
    bool bodies = bodies_count(s) > 0;
    cl_mem *moved16[] = {&sim->pos, &sim->vel, &sim->pred}, *moved4[] = {&sim->id,
                                                                         &st->fluid.lambda};
    cl_mem *either4[] = {&sim->inv_mass, &sim->body}, *owned4[] = {&st->fluid.density};
    if (grid_set_count(g, sim->n) != 0)
        return -1;
    for (size_t i = 0; i < 3; i++)
        if (grid_register(g, moved16[i], 16))
            return -1;
    for (size_t i = 0; i < 2; i++)
        if (*moved4[i] && grid_register(g, moved4[i], 4))
            return -1;
    for (size_t i = 0; i < 2; i++)
        if ((bodies ? grid_register(g, either4[i], 4) : grid_register_owned(g, either4[i], 4)))
            return -1;
    for (size_t i = 0; i < 1; i++)
        if (*owned4[i] && grid_register_owned(g, owned4[i], 4))
            return -1;
    /* predict's part of the walls' forces is made before the exchange: it goes with the
     * particle to its new owner, which sums it (src/solvers/pbd/loads.c) */
    if (st->loads.on && grid_register_owned(g, &st->loads.wall_corr, 16))
        return -1;
    if (slabs_create(&d->slabs, g, sim->plan, sim->pos) != 0)
        return -1;
    d->reach = cl_prog_kernel(st->cprogram, "pbd_reach");
    d->far = buffer(sim, 4, "clCreateBuffer(reach)");
    cl_uint none = ~0u;
    if (!d->reach || !d->far ||
        !cl_ok(clEnqueueWriteBuffer(sim->cl->queue, d->far, CL_TRUE, 0, 4, &none, 0, NULL,
                                    NULL),
               "clEnqueueWriteBuffer(reach)"))
        return -1;
    d->on = true;
    d->slabs.grow = grow;
    d->slabs.grow_ctx = sim;
    sim->slabs = &d->slabs;
    sim->grid_by_vals = false; /* the buffers themselves are in the grid's order */
    sim_set_count(sim, g->n);
    /* The owned particles of the first exchange: by their positions. */
    return grid_build(g, sim->pos) == 0 && slabs_after_build(&d->slabs) == 0 ? 0 : -1;
}

static bool set_args(cl_kernel k, const char *name, int n, const cl_uint *index,
                     cl_mem *const *mem)
{
    for (int i = 0; i < n; i++)
        if (!cl_ok(clSetKernelArg(k, index[i], sizeof(cl_mem), mem[i]), name))
            return false;
    return true;
}

bool pbf_dist_bind(mz_sim *sim, pbd_state *st)
{
    if (!st->dist.on)
        return true;
    static const cl_uint ip[] = {6, 7, 8, 9, 11}, id[] = {4, 5, 7, 9}, iu[] = {2, 3, 4},
                         ic[] = {3, 4, 5, 7};
    pbd_loads *l = &st->loads; /* the wall corrections move with the particles, touch grows */
    cl_mem *mp[] = {&sim->pos, &sim->vel, &sim->pred, &sim->inv_mass, &l->wall_corr};
    cl_mem *md[] = {&sim->inv_mass, &sim->body, &sim->pred, &l->wall_corr};
    cl_mem *mu[] = {&sim->pos, &sim->vel, &sim->pred};
    cl_mem *mc[] = {&sim->pos, &sim->inv_mass, &sim->pred, &l->touch};
    return cl_ok(clSetKernelArg(st->predict, 0, sizeof sim->n_u, &sim->n_u), "predict") &&
           cl_ok(clSetKernelArg(st->update, 0, sizeof sim->n_u, &sim->n_u), "update") &&
           set_args(st->predict, "clSetKernelArg(predict)", 5, ip, mp) &&
           set_args(st->domain, "clSetKernelArg(domain)", 4, id, md) &&
           set_args(st->update, "clSetKernelArg(update)", 3, iu, mu) &&
           set_args(st->colliders, "clSetKernelArg(colliders)", 4, ic, mc);
}

bool pbf_dist_bind_contacts(mz_sim *sim, pbd_state *st)
{
    /* the contacts' buffers moved with the exchange and the build; the window's table too */
    cl_float omega = (cl_float)sim->scene->sim.relaxation;
    return KARGS(st->collide, "collide", A(sim->n_u), A(st->grid.desc), A(st->grid.cell_words),
                 A(st->grid.cell_first), A(st->sorted), A(st->dist.slot), A(sim->pos),
                 A(sim->inv_mass), A(sim->body), A(st->bodies), A(st->adj_start),
                 A(st->adj_other), A(omega), A(sim->pred), A(sim->id));
}

bool pbf_dist_launch_owned(mz_sim *sim, pbd_state *st, cl_kernel k, int stage, const char *name)
{
    if (!st->dist.on)
        return sim_launch(sim, k, sim->n, stage, name);
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    cl_uint end_u = (cl_uint)end; /* the count: the launch's rounding stays out of the halo */
    return cl_ok(clSetKernelArg(k, 0, sizeof end_u, &end_u), "clSetKernelArg(owned)") &&
           sim_launch_range(sim, k, begin, end, stage, name);
}

bool pbf_dist_exchange(mz_sim *sim, pbd_state *st)
{
    pbd_dist *d = &st->dist;
    mz_grid *g = &st->grid;
    if (slabs_exchange(&d->slabs, sim->pred) != 0)
        return false;
    sim_set_count(sim, g->n);
    size_t n = g->n;
    if (n == 0)
        return true;
    cl_command_queue q = sim->cl->queue;
    return cl_ok(clEnqueueCopyBuffer(q, sim->id, d->keys, 0, 0, 4 * n, 0, NULL, NULL),
                 "clEnqueueCopyBuffer(id sort)") &&
           cl_ok(clEnqueueCopyBuffer(q, d->slot, d->vals, 0, 0, 4 * n, 0, NULL, NULL),
                 "clEnqueueCopyBuffer(id sort)") &&
           grid_sort(g, d->keys, d->vals, n, d->id_bits) == 0 && grid_gather(g, d->vals, n) == 0;
}

bool pbf_dist_share(mz_sim *sim, pbd_state *st, cl_mem buf, size_t elem)
{
    (void)sim;
    if (!st->dist.on)
        return true;
    cl_mem b[1] = {buf};
    size_t e[1] = {elem};
    return slabs_share_begin(&st->dist.slabs, b, e, 1) == 0 &&
           slabs_share_end(&st->dist.slabs, b, e, 1) == 0;
}

bool pbf_dist_reach(mz_sim *sim, pbd_state *st)
{
    pbd_dist *d = &st->dist;
    if (!d->on || !(st->fluid.on || st->contacts)) /* no query of the grid */
        return true;
    int wlo, whi;
    slabs_window(&d->slabs, d->slabs.rank, &wlo, &whi);
    cl_int lo = wlo, hi = whi;
    return KARGS(d->reach, "pbd_reach", A(sim->n_u), A(st->grid.desc), A(lo), A(hi),
                 A(sim->pred), A(sim->id), A(d->far)) &&
           pbf_dist_launch_owned(sim, st, d->reach, STAGE_GRID, "pbd_reach");
}

bool pbf_dist_reach_check(mz_sim *sim, pbd_state *st)
{
    pbd_dist *d = &st->dist;
    if (!d->on || !(st->fluid.on || st->contacts))
        return true;
    cl_uint far = ~0u;
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, d->far, CL_TRUE, 0, 4, &far, 0, NULL, NULL),
               "clEnqueueReadBuffer(reach)"))
        return false;
    if (far == ~0u)
        return true;
    /* only this rank knows: the others would wait for it at the next share */
    mz_error("particle %u moved within one substep (by the density constraint, colliders or "
             "walls) so far past this rank's slab that its neighbours lie beyond the %d halo "
             "layers of %g m the rank holds: the run would no longer match one process's. The "
             "step is too long for this flow (raise simulation.substeps: a substep should move "
             "a particle less than a spacing), or run the scene without mpirun",
             far, d->slabs.halo, st->grid.desc.h);
    dist_abort(MZ_EXIT_RUNTIME);
    return false;
}

void pbf_dist_release(mz_sim *sim, pbd_state *st)
{
    pbd_dist *d = &st->dist;
    if (d->on) /* before the grid: its pinned buffers go through the grid's queue */
        slabs_release(&d->slabs);
    if (sim->slabs == &d->slabs)
        sim->slabs = NULL;
    cl_mem ms[] = {d->slot, d->keys, d->vals, d->far};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    mz_cl_release_kernels(&d->reach, 1);
    d->reach = NULL;
    d->far = NULL;
    d->on = false;
}
