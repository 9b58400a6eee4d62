/* Position-based solvers (Müller et al. 2006; XPBD, Macklin et al. 2016), one substep:
 *
 *   predict    v += dt·(g + walls), x* = x + dt·v        (pinned: w = 0, never move)
 *   iterations × [ constraint projection ... , domain ]  (ballistic: no constraints)
 *   update     v += (x* − x_pred)/dt, x = x*
 *
 * The stage enum and the names below are the --profile rows, in the order they run. */
#include "err.h"
#include "sim.h"

#include <stdlib.h>

enum pbd_stage { STAGE_PREDICT, STAGE_DOMAIN, STAGE_UPDATE };
static const char *const pbd_stages[] = {"predict", "domain", "update", NULL};

typedef struct pbd_state {
    cl_program program;
    cl_kernel predict, domain, update;
} pbd_state;

static int pbd_init(mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    pbd_state *st = xcalloc(1, sizeof *st);
    sim->state = st;
    static const char *const names[] = {"predict", "domain", "update", NULL};
    cl_kernel *const kernels[] = {&st->predict, &st->domain, &st->update};
    st->program = sim_build_kernels(sim, "pbd_integrate.cl", names, kernels);
    if (!st->program)
        return -1;

    mz_walls_arg walls = sim_walls(s);
    cl_float4 gravity = sim_gravity(s);
    cl_int penalty = s->domain.boundary.type == MZ_BOUNDARY_PENALTY;
    cl_int by_radius = !penalty;
    cl_float dt = 0.0f; /* set per substep */
    bool ok = KARGS(st->predict, "predict", A(sim->n_u), A(dt), A(gravity), A(walls), A(penalty),
                    A(sim->pos), A(sim->vel), A(sim->pred), A(sim->inv_mass)) &&
              KARGS(st->domain, "domain", A(sim->n_u), A(walls.min), A(walls.max),
                    A(by_radius), A(sim->pred)) &&
              KARGS(st->update, "update", A(sim->n_u), A(dt), A(sim->pos), A(sim->vel),
                    A(sim->pred));
    return ok ? 0 : -1;
}

static int pbd_substep(mz_sim *sim, double dt_seconds)
{
    pbd_state *st = sim->state;
    cl_float dt = (cl_float)dt_seconds;
    if (!cl_ok(clSetKernelArg(st->predict, 1, sizeof dt, &dt), "clSetKernelArg(predict, dt)") ||
        !cl_ok(clSetKernelArg(st->update, 1, sizeof dt, &dt), "clSetKernelArg(update, dt)"))
        return -1;
    bool ok = sim_launch(sim, st->predict, sim->n, STAGE_PREDICT, "predict");
    /* Constraint projection joins here, before the domain, once solvers have constraints. */
    ok = ok && sim_launch(sim, st->domain, sim->n, STAGE_DOMAIN, "domain");
    ok = ok && sim_launch(sim, st->update, sim->n, STAGE_UPDATE, "update");
    return ok ? 0 : -1;
}

static void pbd_release(mz_sim *sim)
{
    pbd_state *st = sim->state;
    if (!st)
        return;
    cl_kernel ks[] = {st->predict, st->domain, st->update};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    if (st->program)
        clReleaseProgram(st->program);
    free(st);
    sim->state = NULL;
}

const mz_solver mz_solver_pbd = {
    .name = "position based",
    .stages = pbd_stages,
    .extra_bytes_per_particle = 0,
    .init = pbd_init,
    .substep = pbd_substep,
    .release = pbd_release,
};
