/* WCSPH's passes over the particles: the density pass (one kernel, or the continuity density's
 * two; also collapsed SPH's first densities), the forces pass, and under mpirun the halo's
 * densities travelling while the inner particles' forces run. The state they share with the
 * step: sph_state.h; the step, its size and the frames: sph.c. */
#include "dist/slabs.h"
#include "solvers/sph/sph_state.h"

/* Whether the continuity density runs as two kernels, the walk writing the lists and then the
 * sums over them (where its sums run over the lists: GPUs, mz_cl.list_sums), each with only its
 * half's registers: on an H100 48 and 40 where the one kernel holds 55, the density pass 2.13 →
 * 1.95 ns a particle-step at h = 3.46 spacings, the same bits (docs/benchmarks.md). */
bool sph_split_density(const mz_sim *sim, const sph_state *st)
{
    return st->P.continuity && st->listed && sim->cl->list_sums;
}

/* Density and pressure into *rho. The continuity equation reads the neighbours' densities, so
 * it writes into *scratch and the handles are swapped; summation writes in place. Where the
 * continuity sums run over the lists after the walk (sph_split_density), the walk and the sums
 * are two kernels of the same arguments (kernels/sph/sph_density_split.cl). */
bool sph_run_density(mz_sim *sim, sph_state *st, cl_mem *rho, cl_mem *scratch, double lag)
{
    boundary_args b = boundary_of(&st->bound, st->grid.desc);
    cl_float lag_f = (cl_float)lag;
    cl_mem out = st->P.continuity ? *scratch : *rho;
    /* Distributed: the owned particles; the halo's densities come from their owners
     * (share_density_begin). */
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    cl_uint end_u = (cl_uint)end;
    cl_kernel ks[] = {st->split ? st->k_walk : st->k_density, st->k_listed};
    const char *names[] = {st->split ? "sph_density_walk" : "sph_density", "sph_density_listed"};
    bool ok = true;
    for (int k = 0; ok && k < (st->split ? 2 : 1); k++)
        ok = KARGS(ks[k], names[k], A(end_u), A(lag_f), A(st->P), A(st->frame),
                   A(st->grid.desc), A(st->grid.cell_words), A(st->grid.cell_first),
                   A(sim->pos), A(sim->vel), A(b.desc), A(b.words), A(b.first), A(b.pos),
                   A(b.mass), A(b.nb), A(b.moving), A(b.vel), A(b.acc), A(*rho), A(out),
                   A(st->p), A(st->kgc), LIST_ARGS_OUT(st)) &&
             sim_launch_range(sim, ks[k], begin, end, STAGE_DENSITY, names[k]);
    if (ok && st->P.continuity)
        swap_mem(rho, scratch);
    return ok;
}

/* The forces pass's buffer for the wall forces' rest (sph_wall_rest), or a stand-in. */
cl_mem *sph_rest_arg(sph_state *st)
{
    return st->loads.rest ? &st->loads.rest : &st->a2;
}

/* Distributed: what the density pass computed and the forces of the particles beside the halo
 * read of it — densities, pressures and gradient corrections — from the halo's owners. */
static int share_density(mz_sim *sim, sph_state *st, bool begin)
{
    cl_mem bufs[] = {st->rho, st->p, st->kgc};
    size_t elem[] = {4, 4, kgc_bytes(sim->scene)};
    int n = st->P.kgc ? 3 : 2;
    return begin ? slabs_share_begin(&st->slabs, bufs, elem, n)
                 : slabs_share_end(&st->slabs, bufs, elem, n);
}

/* WCSPH's forces pass on the owned slots [begin, end). */
static bool run_forces(mz_sim *sim, sph_state *st, size_t begin, size_t end, cl_float dt,
                       cl_int rest_out)
{
    if (end <= begin)
        return true;
    boundary_args b = boundary_of(&st->bound, st->grid.desc);
    cl_uint end_u = (cl_uint)end;
    return KARGS(st->k_forces, "sph_forces", A(end_u), A(dt), A(st->P), A(st->frame),
                 A(st->walls), A(st->penalty), A(st->grid.desc), A(st->grid.cell_words),
                 A(st->grid.cell_first), A(sim->pos), A(sim->vel), A(st->rho), A(st->p),
                 A(b.desc), A(b.words), A(b.first), A(b.pos), A(b.mass), A(b.nb), A(b.moving),
                 A(b.vel), A(b.acc), A(sim->pred), A(st->vel_out), A(st->a2), A(rest_out),
                 A(*sph_rest_arg(st)), A(st->kgc), LIST_ARGS_IN(st)) &&
           sim_launch_range(sim, st->k_forces, begin, end, STAGE_FORCES, "sph_forces");
}

/* Density, then forces. Distributed, the halo's densities travel while the device computes
 * the forces of the owned particles no halo particle touches; then those beside the halo. */
bool sph_density_and_forces(mz_sim *sim, sph_state *st, cl_float dt, cl_int rest_out)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    if (!sph_run_density(sim, st, &st->rho, &st->rho_next, st->lag))
        return false;
    if (!st->slabs_made)
        return run_forces(sim, st, begin, end, dt, rest_out);
    size_t ib = st->slabs.inner_begin, ie = st->slabs.inner_end;
    return share_density(sim, st, true) == 0 && run_forces(sim, st, ib, ie, dt, rest_out) &&
           share_density(sim, st, false) == 0 && run_forces(sim, st, begin, ib, dt, rest_out) &&
           run_forces(sim, st, ie, end, dt, rest_out);
}
