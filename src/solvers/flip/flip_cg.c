/* Conjugate gradients on FLIP's pressure system (both right-hand sides, each with its own step
 * lengths), preconditioned by the multigrid V-cycle (flip_multigrid.c): "mgpcg". The step
 * lengths are computed on the device from deterministic partial sums (kernels/flip/flip_cg.cl),
 * so an iteration never waits for the host; the host reads back only the convergence checks,
 * the same true residual the sweeps are stopped by (flip_pressure_residual). */
#include "solvers/flip/flip_multigrid.h"
#include "util/err.h"

#include <math.h>

int flip_cg_init(mz_sim *sim, flip_state *st)
{
    flip_mg *mg = st->mg;
    static const char *const names[] = {"cg_apply",  "cg_smooth_dot", "cg_scalars",
                                        "cg_update", "cg_start",      NULL};
    cl_kernel *const kernels[] = {&mg->k_apply, &mg->k_smooth_dot, &mg->k_scalars,
                                  &mg->k_update, &mg->k_start};
    mg->cg_program = sim_build_kernels(sim, "flip/flip_cg.cl", names, kernels);
    size_t n = st->nodes;
    return mg->cg_program && (mg->r = flip_buffer(sim, 8 * n, "clCreateBuffer(CG residual)")) &&
                   (mg->z0 = flip_buffer(sim, 8 * n, "clCreateBuffer(CG preconditioned)")) &&
                   (mg->d = flip_buffer(sim, 8 * n, "clCreateBuffer(CG direction)")) &&
                   (mg->d_next = flip_buffer(sim, 8 * n, "clCreateBuffer(CG next direction)")) &&
                   (mg->q = flip_buffer(sim, 8 * n, "clCreateBuffer(CG A direction)")) &&
                   (mg->part = flip_buffer(sim, 8 * st->groups, "clCreateBuffer(CG partials)")) &&
                   (mg->scal = flip_buffer(sim, 3 * 8, "clCreateBuffer(CG scalars)")) &&
                   (mg->part_dot = flip_buffer(sim, 8 * flip_cg_dot_parts(n, st->local),
                                               "clCreateBuffer(CG r.z partials)"))
               ? 0
               : -1;
}

size_t flip_cg_dot_parts(size_t nodes, size_t local)
{
    return nodes / local + 2; /* each colour's groups: at most its cells / local, plus one */
}

/* The groups' partials (`parts` of them in `part`, written by the kernels just run) summed
 * into scal (step 0: alpha, from cg_apply's; step 1: r·z and beta, from cg_smooth_dot's). */
static bool scalars(mz_sim *sim, flip_state *st, cl_int step, cl_int first, cl_uint parts,
                    cl_mem part)
{
    flip_mg *mg = st->mg;
    return KARGS(mg->k_scalars, "cg_scalars", A(parts), A(step), A(first), A(part),
                 A(mg->scal)) &&
           cl_ok(clSetKernelArg(mg->k_scalars, 5, 8 * st->local, NULL),
                 "clSetKernelArg(cg_scalars, scratch)") &&
           sim_launch_local(sim, mg->k_scalars, 0, st->local, st->local, STAGE_PROJECTION,
                            "cg_scalars");
}

bool flip_cg_start(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, bool update)
{
    flip_mg *mg = st->mg;
    cl_uint items = st->n_fluid[0] + st->n_fluid[1], red = st->n_fluid[0];
    cl_int up = update;
    return !items ||
           (KARGS(mg->k_start, "cg_start", A(items), A(red), A(up), A(st->g), A(st->fluid_list),
                  A(st->type), A(st->diag), A(mg->scal), A(mg->d), A(mg->q), A(st->pressure),
                  A(b), A(z)) &&
            sim_launch(sim, mg->k_start, items, STAGE_PROJECTION, "cg_start"));
}

/* The rest of z = M⁻¹ r after cg_start and `halves` of its half-sweeps, r·z (summed in its
 * last half-sweeps) and beta. */
static bool precondition_rest(mz_sim *sim, flip_state *st, cl_int first, int halves)
{
    flip_mg *mg = st->mg;
    return flip_mg_vcycle_rest(sim, st, mg->r, mg->z0, halves, true) &&
           scalars(sim, st, 1, first, mg->n_parts, mg->part_dot);
}

/* x −= alpha d, r += alpha q: the last step taken back. */
static bool step_back(mz_sim *sim, flip_state *st, cl_uint items)
{
    flip_mg *mg = st->mg;
    cl_float sign = -1.0f;
    return KARGS(mg->k_update, "cg_update", A(items), A(sign), A(st->fluid_list), A(mg->scal),
                 A(mg->d), A(mg->q), A(st->pressure), A(mg->r)) &&
           sim_launch(sim, mg->k_update, items, STAGE_PROJECTION, "cg_update");
}

/* d = z + beta d, q = A d, alpha; then x += alpha d, r −= alpha q and the next cycle's
 * start (cg_start). */
static bool step(mz_sim *sim, flip_state *st, cl_uint items, cl_int first)
{
    flip_mg *mg = st->mg;
    size_t global = st->groups * st->local;
    bool ok = KARGS(mg->k_apply, "cg_apply", A(items), A(first), A(st->g), A(st->fluid_list),
                    A(st->type), A(st->diag), A(mg->scal), A(mg->z0), A(mg->d), A(mg->d_next),
                    A(mg->q), A(mg->part)) &&
              cl_ok(clSetKernelArg(mg->k_apply, 12, 8 * st->local, NULL),
                    "clSetKernelArg(cg_apply, scratch)") &&
              sim_launch_local(sim, mg->k_apply, 0, global, st->local, STAGE_PROJECTION,
                               "cg_apply");
    swap_mem(&mg->d, &mg->d_next);
    return ok && scalars(sim, st, 0, 0, (cl_uint)st->groups, mg->part) &&
           flip_cg_start(sim, st, mg->r, mg->z0, true);
}

/* A check reads back every CG_CHECK_EVERY iterations. The schedule must not depend on earlier
 * solves (the last solve's count, say): a run resumed from a checkpoint must stop where the
 * uninterrupted one did. Every iteration, so none runs past the tolerance; the read does not
 * drain the queue: the next cycle's next half-sweep is queued behind it first (work the
 * device does while the host waits; wasted, one half-sweep, only after the last iteration). */
#define CG_CHECK_EVERY 1
#define CG_GROWN 4.0f

/* The largest residual of the pressure (the device's partials, flip_pressure_residual's
 * kernel), its read-back begun and, unless `last`, the next half-sweep queued behind it before
 * waiting. */
static bool check(mz_sim *sim, flip_state *st, bool last, float *r, long *fluid)
{
    flip_mg *mg = st->mg;
    cl_event read;
    if (!flip_pressure_residual_begin(sim, st, &read))
        return false;
    bool ok = last || flip_mg_half(sim, st, mg->r, mg->z0, 1);
    ok = cl_ok(clFlush(sim->cl->queue), "clFlush") && ok;
    float b;
    return flip_pressure_residual_end(st, read, r, &b, fluid) && ok;
}

int flip_mgpcg(mz_sim *sim, flip_state *st, double goal, int max_it, float *r, long *fluid)
{
    flip_mg *mg = st->mg;
    cl_uint items = st->n_fluid[0] + st->n_fluid[1];
    if (!items)
        return 0;
    if (!flip_mg_levels(sim, st) ||
        /* r = b − A x: the V-cycle's fine residual kernel, on the system itself */
        !KARGS(mg->k_residual0, "mg_residual0", A(items), A(st->g), A(st->fluid_list),
               A(st->type), A(st->rhs), A(st->diag), A(st->pressure), A(mg->r)) ||
        !sim_launch(sim, mg->k_residual0, items, STAGE_PROJECTION, "mg_residual0") ||
        !flip_cg_start(sim, st, mg->r, mg->z0, false) ||
        !precondition_rest(sim, st, 1, 1))
        return -1;
    /* Past what float can resolve (the tolerance below the round-off of A x, e.g. a closed
     * region's right-hand side that is round-off itself), CG does not stall as the sweeps do:
     * its steps grow without bound along the constant mode of a region with no air (20x a
     * step, measured). A check that finds the residual more than CG_GROWN times the best so
     * far takes the last step back and stops; the largest residual of a converging CG is not
     * monotone (stopping at any rise stopped 3 of 20 solves early with one sweep a side). */
    float best = *r;
    int it = 0;
    while (it < max_it) {
        if (!step(sim, st, items, it == 0))
            return -1;
        it++;
        int halves = 1;
        if (it % CG_CHECK_EVERY == 0 || it == max_it) {
            if (!check(sim, st, it == max_it, r, fluid))
                return -1;
            halves = 2;
            if (*r <= goal)
                break;
            if (*r > CG_GROWN * best) {
                float b;
                if (!step_back(sim, st, items) ||
                    !flip_pressure_residual(sim, st, r, &b, fluid))
                    return -1;
                break;
            }
            best = fminf(best, *r);
        }
        if (it < max_it && !precondition_rest(sim, st, 0, halves))
            return -1;
    }
    return it;
}
