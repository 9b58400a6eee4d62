/* DFSPH under mpirun (dfsph_dist.h; docs/distributed.md, "DFSPH").
 *
 * - A rank computes its owned particles only; every pass reads its neighbours' values, and of
 *   the halo's (one layer) those its owners computed: positions and velocities from the step's
 *   exchange, then after each pass that changes them — each error pass's k/ρ (the apply reads
 *   k_j/ρ_j), with the first of them the densities (the forces read ρ_j), the velocities after
 *   each apply (the next error pass and the forces read v_j), and the forces' accelerations,
 *   from which each rank predicts its halo's velocities as their owners do. A share's copy to
 *   the host starts after the pass that made its values and ends while the inner particles'
 *   apply runs (dfsph_solve.c). α, the running totals K and the forces on walls' S are read of
 *   the particle's own slot only, and K travels with its owner.
 * - The solves stop on the average error over all particles: the ranks add their integer sums
 *   (MPI_Allreduce), which is one process's sum whatever the split, so every rank takes one
 *   process's iterations.
 * - The step size is the maximum over ranks (exact), as for WCSPH. */
#include "solvers/sph/dfsph_dist.h"

#include "dist/dist.h"
#include "solvers/sph/sph.h"
#include "util/err.h"

#include <math.h>

void dfsph_slab_geometry(const mz_scene *s, double *h, int *halo)
{
    *h = sph_params_for(s).h; /* the grid's cell, as dfsph_init makes it */
    /* Positions do not move between the build and the solves (the lists are the step's): a
     * pass of an owned particle reads one layer beyond; what the halo itself would need of a
     * layer further comes from the owners instead. */
    *halo = 1;
}

int dfsph_dist_init(dfsph_dist *d, mz_sim *sim, mz_grid *g, int (*grow)(void *ctx, size_t cap))
{
    if (!sim->plan)
        return 0;
    if (slabs_create(&d->slabs, g, sim->plan, sim->pos) != 0)
        return -1;
    d->on = true;
    d->slabs.grow = grow;
    d->slabs.grow_ctx = sim;
    sim->slabs = &d->slabs;
    sim_set_count(sim, g->n);
    return 0;
}

int dfsph_dist_exchange(dfsph_dist *d, mz_sim *sim)
{
    if (!d->on)
        return 0;
    if (slabs_exchange(&d->slabs, sim->pos) != 0)
        return -1;
    sim_set_count(sim, d->slabs.grid->n);
    return 0;
}

int dfsph_dist_after_build(dfsph_dist *d)
{
    return d->on ? slabs_after_build(&d->slabs) : 0;
}

void dfsph_dist_due(dfsph_dist *d, cl_mem buf, size_t elem)
{
    if (!d->on)
        return;
    for (int i = 0; i < d->n_due; i++)
        if (d->due[i] == buf)
            return;
    if (d->n_due == DFSPH_DIST_MAX_DUE || d->begun) { /* a caller's slip: fail loudly */
        mz_error("internal: a DFSPH share has no room for another buffer");
        dist_abort(MZ_EXIT_RUNTIME);
    }
    d->due[d->n_due] = buf;
    d->due_elem[d->n_due++] = elem;
}

bool dfsph_dist_begin(dfsph_dist *d)
{
    if (!d->on || d->begun || d->n_due == 0)
        return true;
    d->begun = true;
    return slabs_share_begin(&d->slabs, d->due, d->due_elem, d->n_due) == 0;
}

bool dfsph_dist_end(dfsph_dist *d)
{
    if (!d->on || !d->begun)
        return true;
    d->begun = false;
    int n = d->n_due;
    d->n_due = 0;
    return slabs_share_end(&d->slabs, d->due, d->due_elem, n) == 0;
}

void dfsph_dist_drop(dfsph_dist *d)
{
    if (!d->on || !d->begun)
        return;
    slabs_share_drop(&d->slabs);
    d->begun = false;
    d->n_due = 0;
}

bool dfsph_launch_range(mz_sim *sim, cl_kernel k, size_t begin, size_t end, int stage,
                        const char *name)
{
    if (end <= begin)
        return true;
    cl_uint end_u = (cl_uint)end; /* the count: the launch's rounding stays out of the halo */
    return cl_ok(clSetKernelArg(k, 0, sizeof end_u, &end_u), "clSetKernelArg(owned)") &&
           sim_launch_range(sim, k, begin, end, stage, name);
}

bool dfsph_launch_owned(mz_sim *sim, cl_kernel k, int stage, const char *name)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    return dfsph_launch_range(sim, k, begin, end, stage, name);
}

double dfsph_dist_average(mz_sim *sim, uint64_t total[2], double unit)
{
    dist_sum_u64(total, 2);
    double sum = ldexp((double)total[0], 24) + (double)total[1];
    return sim->n_total ? sum / unit / (double)sim->n_total : 0.0;
}

void dfsph_dist_rebalance(dfsph_dist *d)
{
    if (d->on)
        slabs_rebalance(&d->slabs);
}

void dfsph_dist_release(dfsph_dist *d, mz_sim *sim)
{
    if (d->on) /* before the grid: its pinned buffers go through the grid's queue */
        slabs_release(&d->slabs);
    if (sim->slabs == &d->slabs)
        sim->slabs = NULL;
    d->on = false;
}
