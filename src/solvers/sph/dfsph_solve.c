/* DFSPH's two solves (Bender & Koschier 2017): the error and apply passes of kernels/sph/dfsph.cl
 * and the iterations between them, their errors summed on the device as fixed-point integers
 * and read back where they decide (the same sum however the particles are split: ranks under
 * mpirun take one process's iterations). The step that calls them: dfsph.c. */
#include "solvers/sph/dfsph_state.h"
#include "dist/dist.h"
#include "util/err.h"

#include <math.h>

/* The forces pass and a divergence solve's error pass in one (dfsph_forces_error) over the
 * owned particles [begin, end), in the error pass's groups (or eights): its sums as that
 * pass's; the forces (MZ_DFSPH_FORCES_IN: every acceleration but pressure) into sim->pred and
 * their |a|² into a2, the walls' rest for the loads where they are kept. */
static bool forces_error(mz_sim *sim, dfsph_state *st, cl_float dt, cl_float unit, cl_mem K,
                         size_t begin, cl_uint end, size_t groups, size_t local, int stage)
{
    cl_kernel k = st->k_forces_error;
    const char *name = "dfsph_forces_error";
    boundary_args b = dfsph_bound_of(st);
    cl_float dt_last = (cl_float)st->dt_last;
    const sph_lists *l = &st->lists;
    return KARGS(k, name, A(end), A(dt_last), A(st->P), A(st->frame), A(st->walls),
                 A(st->penalty), A(sim->pos), A(sim->vel), A(st->rho), A(l->stride), A(l->fluid),
                 A(l->fluid_count), A(l->wall), A(l->wall_count), A(b.pos), A(b.mass),
                 A(sim->pred), A(st->a2), A(st->loads.rest_on),
                 A(*(st->loads.rest ? &st->loads.rest : &st->a2)), A(b.moving), A(b.vel),
                 A(b.acc)) &&
           KARGS_FROM(k, name, 23, A(dt), A(unit), A(st->alpha), A(K), A(st->k), A(st->kq),
                      A(st->gw), A(st->partial)) &&
           cl_ok(clSetKernelArg(k, 31, 16 * local, NULL), "clSetKernelArg(dfsph_forces_error)") &&
           KARGS_FROM(k, name, 32, A(st->lists.grad), A(st->lists.plane)) &&
           sim_launch_local(sim, k, begin, groups * local, local, stage, name);
}

/* One error pass: every particle's error and stiffness into k, and with avg the average error
 * (in units of density) into *avg: summed, read back (the host waits for the queue) and, under
 * mpirun, added over the ranks. Without (NULL: a pass whose average decides nothing) the queue
 * runs on. warm > 0: the warm pass (dfsph_error). */
static bool error_pass(mz_sim *sim, dfsph_state *st, int density, double dt, double warm,
                       cl_mem K, int stage, double *avg)
{
    boundary_args b = dfsph_bound_of(st);
    size_t local = st->step_size.local; /* the error sums' groups: the step size's */
    size_t begin, end; /* the owned particles (all of them in one process) */
    sim_owned(sim, &begin, &end);
    size_t groups = (end - begin + local - 1) / local;
    if (groups == 0)
        groups = 1;
    /* the partials: a group's sum, or with the lanes one an eight (dfsph_error) */
    size_t partials = st->eights ? (end + 7) / 8 : groups;
    cl_float dt_f = (cl_float)dt, warm_f = (cl_float)warm, dt_last_f = (cl_float)st->dt_last,
             dt_before_f = (cl_float)st->dt_before;
    cl_uint partials_u = (cl_uint)partials, end_u = (cl_uint)end;
    /* The fixed point's unit: a power of two, 2^40 / ρ0 within a factor 2 (mz_dfsph_fixed),
     * kept a finite float for any ρ0. */
    int exponent = 40 - ilogb(st->P.rest_density);
    double unit = ldexp(1.0, exponent < -100 ? -100 : exponent > 100 ? 100 : exponent);
    cl_float unit_f = (cl_float)unit;
    const sph_lists *l = &st->lists;
    uint64_t total[2] = {0, 0};
    cl_int fill = st->grads_due;
    st->grads_due = false;
    /* A divergence pass that decides: with the forces (dfsph_forces_error), whose last run
     * leaves the step's forces. */
    bool ok;
    if (!density && avg)
        ok = forces_error(sim, st, dt_f, unit_f, K, begin, end_u, groups, local, stage);
    else
        ok = KARGS(st->k_error, "dfsph_error", A(end_u), A(density), A(dt_f), A(warm_f),
                   A(dt_last_f), A(dt_before_f), A(unit_f), A(st->P), A(sim->pos), A(sim->vel),
                   A(st->rho), A(st->alpha), A(l->stride), A(l->fluid), A(l->fluid_count),
                   A(l->wall), A(l->wall_count), A(b.pos), A(b.mass), A(K), A(st->Kprev),
                   A(st->k), A(st->partial)) &&
             cl_ok(clSetKernelArg(st->k_error, 23, 16 * local, NULL),
                   "clSetKernelArg(dfsph_error, scratch)") &&
             KARGS_FROM(st->k_error, "dfsph_error", 24, A(b.moving), A(b.vel), A(b.acc),
                        A(l->grad), A(l->plane), A(st->kq), A(st->gw), A(fill)) &&
             sim_launch_local(sim, st->k_error, begin, groups * local, local, stage,
                              "dfsph_error");
    /* Distributed: the halo's k/ρ, which the apply after this pass reads, start on their way
     * (the apply ends the share; a solve that stops here drops it). */
    dfsph_dist_due(&st->dist, st->kq, 4);
    ok = ok && dfsph_dist_begin(&st->dist);
    if (!avg) {
        if (!ok && st->dist.on)
            dist_abort(MZ_EXIT_RUNTIME);
        return ok;
    }
    ok = ok &&
        KARGS(st->k_sum, "dfsph_sum", A(partials_u), A(st->partial), A(st->total)) &&
        cl_ok(clSetKernelArg(st->k_sum, 3, 16 * local, NULL),
              "clSetKernelArg(dfsph_sum, scratch)") &&
        sim_launch_local(sim, st->k_sum, 0, local, local, stage, "dfsph_sum") &&
        cl_ok(clEnqueueReadBuffer(sim->cl->queue, st->total, CL_TRUE, 0, sizeof total, total, 0,
                                  NULL, NULL),
              "clEnqueueReadBuffer(DFSPH error)");
    if (!ok && st->dist.on) /* the other ranks wait in the sum */
        dist_abort(MZ_EXIT_RUNTIME);
    *avg = dfsph_dist_average(sim, total, unit);
    return ok;
}

/* weight: scale over the step the pass's impulse belongs to (the forces on walls).
 * Distributed: the halo's k/ρ (begun after the error pass) travel while the device applies the
 * first half of the inner particles, which read none of the halo's; then the particles beside
 * the halo; their velocities travel while the second half of the inner ones runs. Each
 * particle's apply reads only its own velocity: any order gives the same bits. */
static bool apply_pass(mz_sim *sim, dfsph_state *st, double scale, int first, cl_mem K,
                       int stage, double weight)
{
    boundary_args b = dfsph_bound_of(st);
    cl_float scale_f = (cl_float)scale;
    const sph_lists *l = &st->lists;
    cl_int keep_s = st->loads.on, s_first = st->s_first;
    cl_float weight_f = (cl_float)weight;
    st->s_first = false;
    cl_kernel k = st->k_apply;
    const char *name = "dfsph_apply";
    if (!KARGS(k, name, A(sim->n_u), A(scale_f), A(first), A(st->P), A(sim->pos), A(st->kq),
               A(st->k), A(l->stride), A(l->fluid), A(l->fluid_count), A(l->wall),
               A(l->wall_count), A(b.pos), A(b.mass), A(K), A(sim->vel), A(keep_s), A(s_first),
               A(weight_f), A(*(st->S ? &st->S : &st->k)), A(l->grad), A(l->plane), A(st->gw)))
        return false;
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    if (!st->dist.on)
        return dfsph_launch_range(sim, k, begin, end, stage, name);
    /* the owned particles no halo particle is within reach of (slabs.h) */
    size_t ib = st->dist.slabs.inner_begin, ie = st->dist.slabs.inner_end;
    size_t mid = ib + (ie - ib) / 2;
    bool ok = dfsph_launch_range(sim, k, ib, mid, stage, name) && dfsph_dist_end(&st->dist) &&
              dfsph_launch_range(sim, k, begin, ib, stage, name) &&
              dfsph_launch_range(sim, k, ie, end, stage, name);
    dfsph_dist_due(&st->dist, sim->vel, 16);
    return ok && dfsph_dist_begin(&st->dist) &&
           dfsph_launch_range(sim, k, mid, ie, stage, name) && dfsph_dist_end(&st->dist);
}

/* A solve: the warm pass (warm > 0), then iterations until the average error is below tol (in
 * units of density) and at least min_iterations were taken. The average error it ended with
 * into *left; its iterations, or -1 on failure. K, the solve's total stiffness, includes the
 * warm pass (its first apply), so the pressure and the forces on solids are all it applied.
 *
 * The iterations only add pressure where a particle is compressed: a warm start above what
 * this step needs cannot be taken back, and lifts the water. The density solve starts from
 * DENSITY_WARM × the smaller of the last two steps' pressures (κ = K/dt², the same pressure at
 * this step's dt, but no more K than that step's when the step grows): the last step's alone
 * carries one-off corrections (a compression left over, a short step's), and at half of it a
 * resting tank bounced in bursts that lengthened its steps until solves ran out of iterations;
 * scaled up by (dt/dt_last)² the dam break's steps fell to 0.05 ms; at 0.6 a frame's end read
 * the tank's pressure 6% low, at 0.8 its layers 27% off (docs/scene.md). The divergence solve
 * starts from the whole last K_v. */
int dfsph_solve(mz_sim *sim, dfsph_state *st, int density, double dt, double warm, double tol,
                int min_iterations, double *left)
{
    cl_mem K = density ? st->K : st->Kv;
    int stage = density ? STAGE_PRESSURE : STAGE_DIVERGENCE;
    double scale = density ? 1.0 / dt : 1.0, avg = 0;
    int first = 1;
    if (warm > 0) {
        bool made = !density && st->warm_in_density; /* by the density pass (dfsph.c) */
        if ((!made && !error_pass(sim, st, density, dt, warm, K, stage, NULL)) ||
            !apply_pass(sim, st, scale, 1, K, stage, scale / dt))
            return -1;
        first = 0;
    }
    int it = 0;
    for (;; it++) {
        /* Below min_iterations the solve goes on whatever the error: no read back. */
        bool decides = it >= min_iterations;
        if (!error_pass(sim, st, density, dt, 0, K, stage, decides ? &avg : NULL))
            return -1;
        if (decides && (avg <= tol || it == MAX_ITERATIONS)) {
            dfsph_dist_drop(&st->dist); /* no apply follows: its k/ρ are not needed */
            break;
        }
        if (!apply_pass(sim, st, scale, first, K, stage, scale / dt))
            return -1;
        first = 0;
    }
    *left = avg;
    return it;
}
