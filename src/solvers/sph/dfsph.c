/* Divergence-free SPH (Bender & Koschier 2015, 2017): incompressible by two pressure solves a
 * step instead of a stiff equation of state, so its steps are set by the flow's speed, not a
 * speed of sound. Kernels and the step's order: kernels/sph/dfsph.cl.
 *
 * Both solves iterate until the average error over the particles is below the scene's
 * tolerance (density_tolerance of ρ0 for the compression predicted at the end of the step,
 * divergence_tolerance for the density change the velocity field would make in a step), at
 * least once after their warm passes, at most MAX_ITERATIONS times: the error that stops a
 * solve is its last velocities', so what it leaves is checked (DENSITY_MIN_ITERATIONS). Both
 * start warm, from the stiffnesses of the last steps (see solve). The errors are summed on the
 * device as integers (fixed point) and read back once an iteration: the same sum however the
 * particles are split, so that ranks under mpirun (dfsph_dist.c) take one process's
 * iterations. */
#include "build/build.h"
#include "device/grid.h"
#include "solvers/sim.h"
#include "solvers/boundary.h"
#include "solvers/sph/dfsph.h"
#include "solvers/sph/dfsph_dist.h"
#include "solvers/sph/dfsph_memory.h"
#include "solvers/sph/loads.h"
#include "solvers/sph/neighbour_list.h"
#include "solvers/sph/sph.h"
#include "solvers/sph/step_size.h"
#include "dist/dist.h"
#include "util/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum dfsph_stage { STAGE_GRID, STAGE_DENSITY, STAGE_DIVERGENCE, STAGE_FORCES, STAGE_PRESSURE,
                   STAGE_ADVECT };
static const char *const dfsph_stages[] = {"grid",     "density", "divergence solve", "forces",
                                           "pressure solve", "advect", NULL};

enum { MAX_ITERATIONS = 100 };

/* The density solve's least iterations after its warm pass. Each solve stops on the error of
 * the velocities it ends with, so one iteration is enough for the tolerance; a second, when the
 * first had met it, took 9% of the peer's dam break (2.13 → 1.34 iterations a step) and left
 * the same water (its surge front within 0.4%) and resting tanks whose round-off spread is the
 * same (docs/benchmarks.md, session 24). The peer's minIterations 2 counts differently: its
 * iterations check the error of the pressure before their update, so its 2 are a warm start and
 * one checked update, then one unchecked (half-weighted) update. */
enum { DENSITY_MIN_ITERATIONS = 1 };

/* The density solve's warm pass applies this fraction of the pressure the last two steps
 * applied (the smaller, never scaled up; see solve). */
static const double DENSITY_WARM = 0.7;

/* The step the solves carry (solves_control): a step whose two solves took more than
 * SOLVES_HEAVY iterations together (warm passes not counted) caps the next at 0.9 of its own; a
 * step under SOLVES_LIGHT lets the cap grow by 1.1. */
enum { SOLVES_HEAVY = 20, SOLVES_LIGHT = 8 };

typedef struct dfsph_state {
    sph_params P;
    mz_walls_arg walls;
    mz_frame_arg frame; /* the domain's frame at this step's start */
    cl_int penalty, min_neighbours;
    cl_program program;
    cl_kernel k_density, k_forces, k_predict, k_error, k_sum, k_apply, k_advect, k_max;
    mz_grid grid;
    bool grid_made;
    boundary_set bound;
    sph_loads loads; /* forces on walls and colliders, when the scene measures them */
    cl_mem S;        /* with loads: the step's Σ scale k per particle (dfsph_apply) */
    bool s_first;    /* the next apply is the step's first */
    cl_mem rho, alpha, k, K, Kv, p, a2;
    cl_mem kq; /* k/ρ, which the error pass writes and the applies read a neighbour's of */
    cl_mem gw; /* G_i = Σ_b m_b ∇W_ib of the step's wall list (float4): the solves' wall terms */
    bool grads_due; /* the lists are new: the next error pass writes their gradients */
    bool eights;    /* dfsph_error's lanes: a partial error sum for each eight particles */
    cl_mem Kprev; /* the density solve's κ = K/dt² of the step before last (its warm start) */
    cl_mem p_sum; /* Σ p dt over the frame's steps so far (dfsph_advect) */
    cl_mem partial, total; /* the error sums (two 64-bit integers a group, dfsph.cl) */
    sph_lists lists; /* the step's neighbours, written by the density pass */
    sph_step_size step_size; /* |v|max and |a|max */
    double dt_last; /* the last step's dt (the first step's guess before any) */
    double dt_before; /* the dt of the step before (of Kprev's κ) */
    double dt_viscous; /* the explicit viscosity's stable step (infinite without) */
    double dt_solves;  /* the step the solves carry (solves_control; infinite at first) */
    mz_dfsph_stats stats; /* over the run, for the summary and tests */
    long capped_warned_step;
    dfsph_dist dist; /* under mpirun */
} dfsph_state;

static cl_mem dfsph_buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes, NULL, what);
}

/* A scratch buffer replaced by an empty one of `bytes` (none made: left so). */
static bool renew(mz_sim *sim, cl_mem *b, size_t bytes)
{
    if (!*b)
        return true;
    cl_mem nb = dfsph_buffer(sim, bytes, "clCreateBuffer(DFSPH scratch)");
    if (!nb)
        return false;
    clReleaseMemObject(*b);
    *b = nb;
    return true;
}

static boundary_args bound_of(const dfsph_state *st)
{
    return boundary_of(&st->bound, st->grid.desc);
}

/* Whether the fluid list keeps its kernel gradients (sph_lists.grads), which the solves' dozen
 * passes then read instead of computing each again (a square root and a quotient a pair):
 * MIZU_DFSPH_GRADS=1 or 0, else on CPU devices where there is room for them beside what the run
 * needs (the fit check counts only that, as with WCSPH's lists; the buffer is made only where
 * the device can make one that large). The same bits either way. The step's first error pass
 * computes them and writes them (eight lanes' entries one vector store on a CPU; the density
 * pass wrote them until session 23, a record at a time, 20% of its time). Measured
 * (docs/benchmarks.md): on PoCL the solves 1.5-1.7x faster; on an H200 the solves no faster
 * (reading 12 bytes a pair costs what the arithmetic did) and the density pass that wrote them
 * 2.9x slower, so GPUs compute them. */
static bool grads_wanted(const mz_sim *sim)
{
    const char *env = getenv("MIZU_DFSPH_GRADS");
    if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0))
        return env[0] == '1';
    if (sim->cl->type & CL_DEVICE_TYPE_GPU)
        return false;
    return sph_lists_room(sim, (double)sim->cap * (double)sph_lists_grad_bytes(sim->scene));
}

/* ρ and α at the current positions (after a grid build), and the neighbour lists the step's
 * other passes read: built again, longer, when a particle has more neighbours than they hold. */
static bool density_alpha(mz_sim *sim, dfsph_state *st)
{
    boundary_args b = bound_of(st);
    sph_lists *l = &st->lists;
    for (;;) {
        if (sph_lists_before_build(l, sim) != 0 ||
            !KARGS(st->k_density, "dfsph_density_alpha", A(sim->n_u), A(st->P),
                   A(st->min_neighbours), A(st->grid.desc), A(st->grid.cell_words),
                   A(st->grid.cell_first), A(sim->pos), A(b.desc), A(b.words), A(b.first),
                   A(b.pos), A(b.mass), A(b.nb), A(l->stride), A(l->cap), A(l->fluid),
                   A(l->fluid_count), A(l->wall), A(l->wall_count), A(l->overflow),
                   A(st->rho), A(st->alpha), A(st->gw)) ||
            !dfsph_launch_owned(sim, st->k_density, STAGE_DENSITY, "dfsph_density_alpha"))
            return false;
        int fits = sph_lists_after_build(l, sim);
        st->grads_due = true; /* new lists: the next error pass writes their gradients */
        if (fits != 0)
            return fits > 0;
    }
}

/* One error pass: every particle's error and stiffness into k, and with avg the average error
 * (in units of density) into *avg: summed, read back (the host waits for the queue) and, under
 * mpirun, added over the ranks. Without (NULL: a pass whose average decides nothing) the queue
 * runs on. warm > 0: the warm pass (dfsph_error). */
static bool error_pass(mz_sim *sim, dfsph_state *st, int density, double dt, double warm,
                       cl_mem K, int stage, double *avg)
{
    boundary_args b = bound_of(st);
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
    bool ok =
        KARGS(st->k_error, "dfsph_error", A(end_u), A(density), A(dt_f), A(warm_f),
              A(dt_last_f), A(dt_before_f), A(unit_f), A(st->P), A(sim->pos), A(sim->vel),
              A(st->rho), A(st->alpha), A(l->stride), A(l->fluid), A(l->fluid_count),
              A(l->wall), A(l->wall_count), A(b.pos), A(b.mass), A(K), A(st->Kprev), A(st->k),
              A(st->partial)) &&
        cl_ok(clSetKernelArg(st->k_error, 23, 16 * local, NULL),
              "clSetKernelArg(dfsph_error, scratch)") &&
        cl_ok(clSetKernelArg(st->k_error, 24, sizeof b.moving, &b.moving),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 25, sizeof b.vel, &b.vel),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 26, sizeof b.acc, &b.acc),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 27, sizeof l->grad, &l->grad),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 28, sizeof l->plane, &l->plane),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 29, sizeof st->kq, &st->kq),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 30, sizeof st->gw, &st->gw),
              "clSetKernelArg(dfsph_error)") &&
        cl_ok(clSetKernelArg(st->k_error, 31, sizeof fill, &fill),
              "clSetKernelArg(dfsph_error)") &&
        sim_launch_local(sim, st->k_error, begin, groups * local, local, stage,
                         "dfsph_error");
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

/* weight: scale over the step the pass's impulse belongs to (the forces on walls). */
static bool apply_pass(mz_sim *sim, dfsph_state *st, double scale, int first, cl_mem K,
                       int stage, double weight)
{
    boundary_args b = bound_of(st);
    cl_float scale_f = (cl_float)scale;
    const sph_lists *l = &st->lists;
    cl_int keep_s = st->loads.on, s_first = st->s_first;
    cl_float weight_f = (cl_float)weight;
    st->s_first = false;
    /* Distributed: the halo's k/ρ from their owners before, its velocities after. */
    return dfsph_dist_share(&st->dist, st->kq, 4) &&
           KARGS(st->k_apply, "dfsph_apply", A(sim->n_u), A(scale_f), A(first), A(st->P),
                 A(sim->pos), A(st->kq), A(st->k), A(l->stride), A(l->fluid),
                 A(l->fluid_count), A(l->wall), A(l->wall_count), A(b.pos), A(b.mass), A(K),
                 A(sim->vel), A(keep_s), A(s_first), A(weight_f),
                 A(*(st->S ? &st->S : &st->k)), A(l->grad), A(l->plane), A(st->gw)) &&
           dfsph_launch_owned(sim, st->k_apply, stage, "dfsph_apply") &&
           dfsph_dist_share(&st->dist, sim->vel, 16);
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
static int solve(mz_sim *sim, dfsph_state *st, int density, double dt, double warm, double tol,
                 int min_iterations, double *left)
{
    cl_mem K = density ? st->K : st->Kv;
    int stage = density ? STAGE_PRESSURE : STAGE_DIVERGENCE;
    double scale = density ? 1.0 / dt : 1.0, avg = 0;
    int first = 1;
    if (warm > 0) {
        if (!error_pass(sim, st, density, dt, warm, K, stage, NULL) ||
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
        if (decides && (avg <= tol || it == MAX_ITERATIONS))
            break;
        if (!apply_pass(sim, st, scale, first, K, stage, scale / dt))
            return -1;
        first = 0;
    }
    *left = avg;
    return it;
}

/* The CFL step: dt = cfl · min(h / |v|max, sqrt(h / |a|max)), within the frame. */
static int choose_dt(mz_sim *sim, dfsph_state *st, double frame_dt, double *dt)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    float v2, a2;
    if (sph_speed_accel_max(&st->step_size, sim, st->k_max, sim->vel, st->a2, begin, end,
                            STAGE_FORCES, &v2, &a2) != 0)
        return -1;
    /* Every rank takes the same step: the maxima over all of them (exact). */
    v2 = dist_max_float(v2);
    a2 = dist_max_float(a2);
    if (!isfinite(v2) || !isfinite(a2)) {
        mz_error("the simulation blew up at t = %.6g s (step %ld): velocities or accelerations "
                 "are no longer finite. Likely causes: a step too long for the flow (lower "
                 "simulation.cfl), or particles started on top of each other or of a wall",
                 sim->time, sim->step);
        return -1;
    }
    double h = st->P.h, cfl = scene_cfl(sim->scene), want = INFINITY;
    double by_v = v2 > 0 ? cfl * h / sqrt(v2) : INFINITY;
    double by_a = a2 > 0 ? cfl * sqrt(h / sqrt(a2)) : INFINITY;
    want = fmin(by_v, by_a);
    st->stats.fastest = fmax(st->stats.fastest, sqrt(v2));
    st->stats.largest_accel = fmax(st->stats.largest_accel, sqrt(a2));
    if (st->dt_solves < want) {
        want = st->dt_solves;
        st->stats.solves_shortened++;
    }
    want = fmin(want, st->dt_viscous);
    *dt = sim_frame_step(sim, frame_dt, want);
    /* What set the step, for the summary (a frame's end counts as none of them). */
    if (*dt >= want) {
        if (want == st->dt_viscous)
            st->stats.by_viscosity++;
        else if (want == by_a)
            st->stats.by_accel++;
        else if (want == by_v)
            st->stats.by_speed++;
    }
    return 0;
}

/* The next step's cap from this one's solves (iterations: both solves' after their warm
 * passes). Still deep water is what needs it: the solves stop at an average error, which the
 * compression a step leaves at the floor of a 40-layer tank hardly moves, so over long steps it
 * builds up unseen until a solve takes 100 iterations to push it back and throws the water up
 * (docs/scene.md, DFSPH's walls). Heavy solves shorten the step until they are light again;
 * the peer's dam break, 1.3 + 1.0 iterations a step, never meets the cap. Iteration counts are the
 * same on every rank and device: deterministic. */
static void solves_control(dfsph_state *st, double dt, int iterations)
{
    if (iterations > SOLVES_HEAVY)
        st->dt_solves = 0.9 * dt;
    else if (iterations < SOLVES_LIGHT)
        st->dt_solves *= 1.1;
}

/* A solve that ran out of iterations: said once per frame, the run goes on. */
static void warn_capped(mz_sim *sim, dfsph_state *st, const char *what, double err, double tol)
{
    st->stats.capped++;
    if (st->capped_warned_step >= sim->step - sim->frame_steps)
        return; /* already said in this frame */
    st->capped_warned_step = sim->step;
    mz_warn("the DFSPH %s solve stopped at %d iterations at t = %.6g s with an average error "
            "of %.3g%% (tolerance %.3g%%): the step is long for this flow (lower simulation.cfl) "
            "or the tolerance tight. The run goes on",
            what, MAX_ITERATIONS, sim->time, 100 * err / st->P.rest_density,
            100 * tol / st->P.rest_density);
}

/* The forces on walls and colliders, pass 0 (the walls' pairs, after the forces pass) or 1
 * (the solves' pressure impulse, after the density solve). */
static bool gather_loads(mz_sim *sim, dfsph_state *st, cl_int pass, double dt)
{
    mz_load_elems *e = &sim->loads;
    boundary_args b = bound_of(st);
    cl_uint n = (cl_uint)e->n;
    cl_float dt_f = (cl_float)dt;
    size_t begin, end; /* distributed: the pairs of the fluid this rank owns */
    sim_owned(sim, &begin, &end);
    cl_uint own_begin = (cl_uint)begin, own_end = (cl_uint)end;
    return KARGS(st->loads.k, "dfsph_wall_loads", A(n), A(pass), A(dt_f), A(st->P),
                 A(st->grid.desc), A(st->grid.cell_words), A(st->grid.cell_first), A(sim->pos),
                 A(sim->vel), A(st->rho), A(st->bound.pos), A(st->bound.mass),
                 A(st->loads.elem), A(st->bound.slot_of), A(st->loads.rest_on),
                 A(st->loads.rest), A(st->S), A(e->at), A(e->force), A(b.moving), A(b.vel),
                 A(b.acc), A(own_begin), A(own_end)) &&
           sim_launch(sim, st->loads.k, n, MZ_STAGE_OBSERVE, "dfsph_wall_loads");
}

static int build_grid(mz_sim *sim, dfsph_state *st)
{
    return grid_build(&st->grid, sim->pos) != 0 || dfsph_dist_after_build(&st->dist) != 0 ? -1
                                                                                        : 0;
}

static int dfsph_step(mz_sim *sim, dfsph_state *st, double frame_dt)
{
    const mz_fluid *f = &sim->scene->fluids[0];
    double rho0 = st->P.rest_density, left;
    st->frame = sim_frame(sim->scene, sim->time);
    if (dfsph_dist_exchange(&st->dist, sim) != 0 ||
        boundary_move(&st->bound, sim, sim->time) != 0 || build_grid(sim, st) != 0)
        return -1;
    sim_profile_grid(sim, &st->grid, STAGE_GRID);
    sim_grid_built(sim); /* the probes due at the last step's end, before anything moves */
    /* Distributed: the halo's densities, which the forces and every apply read, from their
     * owners. */
    if (!density_alpha(sim, st) || !dfsph_dist_share(&st->dist, st->rho, 4))
        return -1;
    st->s_first = true;
    /* The divergence solve ends the last step (its velocities at the new positions). */
    int it = solve(sim, st, 0, st->dt_last, 1.0, f->divergence_tolerance * rho0, 1, &left);
    if (it < 0)
        return -1;
    st->stats.divergence_iterations += it;
    int divergence_it = it;
    if (it == MAX_ITERATIONS && left > f->divergence_tolerance * rho0)
        warn_capped(sim, st, "divergence", left, f->divergence_tolerance * rho0);
    boundary_args b = bound_of(st);
    cl_float dt_last = (cl_float)st->dt_last;
    const sph_lists *l = &st->lists;
    if (!KARGS(st->k_forces, "dfsph_forces", A(sim->n_u), A(dt_last), A(st->P), A(st->frame),
               A(st->walls), A(st->penalty), A(sim->pos), A(sim->vel), A(st->rho),
               A(l->stride), A(l->fluid), A(l->fluid_count), A(l->wall), A(l->wall_count),
               A(b.pos), A(b.mass), A(sim->pred), A(st->a2), A(st->loads.rest_on),
               A(*(st->loads.rest ? &st->loads.rest : &st->a2)), A(b.moving), A(b.vel),
               A(b.acc)) ||
        !dfsph_launch_owned(sim, st->k_forces, STAGE_FORCES, "dfsph_forces"))
        return -1;
    double dt;
    if (choose_dt(sim, st, frame_dt, &dt) != 0)
        return -1;
    /* Forces on solids due at this step's end: the pairs now, the pressure after the solve. */
    bool loads = st->loads.on && sim_loads_due(sim, dt);
    if (loads && !gather_loads(sim, st, 0, dt))
        return -1;
    cl_float dt_f = (cl_float)dt;
    if (!KARGS(st->k_predict, "dfsph_predict", A(sim->n_u), A(dt_f), A(sim->pred),
               A(sim->vel)) ||
        !dfsph_launch_owned(sim, st->k_predict, STAGE_FORCES, "dfsph_predict") ||
        !dfsph_dist_share(&st->dist, sim->vel, 16))
        return -1;
    it = solve(sim, st, 1, dt, DENSITY_WARM, f->density_tolerance * rho0, DENSITY_MIN_ITERATIONS,
               &left);
    if (it < 0)
        return -1;
    st->stats.density_iterations += it;
    solves_control(st, dt, it + divergence_it);
    st->stats.worst_density_error = fmax(st->stats.worst_density_error, left / rho0);
    if (it == MAX_ITERATIONS && left > f->density_tolerance * rho0)
        warn_capped(sim, st, "density", left, f->density_tolerance * rho0);
    if (loads && !gather_loads(sim, st, 1, dt))
        return -1;
    /* the frame's progress, which sim keeps (and checkpoints), with this step */
    cl_int frame_first = sim->frame_steps == 0;
    cl_float frame_time_f = (cl_float)(sim->frame_time + dt);
    if (!KARGS(st->k_advect, "dfsph_advect", A(sim->n_u), A(dt_f), A(st->walls), A(st->rho),
               A(st->K), A(sim->pos), A(sim->vel), A(st->p), A(st->p_sum), A(frame_first),
               A(frame_time_f)) ||
        !dfsph_launch_owned(sim, st->k_advect, STAGE_ADVECT, "dfsph_advect"))
        return -1;
    st->dt_before = st->dt_last;
    st->dt_last = dt;
    st->stats.steps++;
    sim_count_step(sim, dt);
    return 0;
}

static int dfsph_advance(mz_sim *sim, double frame_dt)
{
    dfsph_state *st = sim->state;
    while (sim_frame_left(sim, frame_dt)) {
        if (dfsph_step(sim, st, frame_dt) != 0)
            return -1;
        if (sim_frame_left(sim, frame_dt) && sim_stop_here(sim))
            return 1;
    }
    dfsph_dist_rebalance(&st->dist);
    return 0;
}

/* Distributed: room for cap particles (slabs.h's grow), between two steps. The grid keeps the
 * buffers that travel with the particles; the rest is rewritten by every step before it is
 * read, the neighbour lists included (their stride is the room). */
static int dfsph_grow(void *ctx, size_t cap)
{
    mz_sim *sim = ctx;
    dfsph_state *st = sim->state;
    if (grid_reserve(&st->grid, cap) != 0)
        return -1;
    cl_mem *scratch4[] = {&st->rho, &st->alpha, &st->k, &st->kq, &st->p, &st->a2, &st->S};
    bool ok = renew(sim, &sim->pred, 16 * cap) && renew(sim, &st->gw, 16 * cap) &&
              renew(sim, &st->partial, 16 * dfsph_error_partials(cap)) &&
              (!st->loads.rest_on || renew(sim, &st->loads.rest, 16 * cap));
    for (size_t i = 0; ok && i < sizeof scratch4 / sizeof *scratch4; i++)
        ok = grid_moves(&st->grid, scratch4[i]) || renew(sim, scratch4[i], 4 * cap);
    if (!ok)
        return -1;
    unsigned list_cap = st->lists.cap;
    long grown = st->lists.grown;
    sim->cap = cap;
    sph_lists_release(&st->lists);
    st->lists.grads = grads_wanted(sim);
    if (sph_lists_init(&st->lists, sim) != 0 || sph_lists_resize(&st->lists, sim, list_cap) != 0)
        return -1;
    st->lists.grown = grown;
    return 0;
}

static int dfsph_init(mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    dfsph_state *st = xcalloc(1, sizeof *st);
    sim->state = st;
    st->P = sph_params_for(s);
    /* No Monaghan repulsion at the walls: the solves' wall pressure holds the water (with the
     * step the solves carry, solves_control). The repulsion's pull, steep as a particle is
     * pressed against a wall, set 614 of the peer dam break's 1,104 steps by |a|max. */
    st->P.wall_d = 0.0f;
    st->dt_solves = INFINITY;
    st->walls = sim_walls(s);
    st->frame = sim_frame(s, sim->time);
    st->penalty = s->domain.boundary.type == MZ_BOUNDARY_PENALTY;
    /* A full neighbourhood at h = 2 spacings holds 32 (3D) or 12 (2D) others: below 20 or 7
     * a particle is at an edge (SPlisHSPlasH's thresholds). */
    st->min_neighbours = s->sim.dimensions == 3 ? 20 : 7;
    st->capped_warned_step = -1;
    /* The viscosities are explicit: a step must stay below h²/(ν D), D = Σ_j V ∇²W_ij h² ≈ 13
     * (2D) or 15 (3D) on the lattice, taken as dt ≤ 0.06 h²/ν with ν the fluid's plus
     * Monaghan's, α c0 (h/2) / (2(d + 2)). Without this bound a viscous tank at rest took steps
     * of 9 ms against a 4 ms limit and shook itself apart. */
    double nu = st->P.mu / st->P.rest_density +
                st->P.alpha * st->P.c0 * st->P.hs / (2.0 * (s->sim.dimensions + 2));
    st->dt_viscous = nu > 0 ? 0.06 * st->P.h * st->P.h / nu : INFINITY;
    static const char *const names[] = {"dfsph_density_alpha", "dfsph_forces", "dfsph_predict",
                                        "dfsph_error",         "dfsph_sum",    "dfsph_apply",
                                        "dfsph_advect",        "speed_accel_max", NULL};
    cl_kernel *const kernels[] = {&st->k_density, &st->k_forces, &st->k_predict, &st->k_error,
                                  &st->k_sum,     &st->k_apply,  &st->k_advect,  &st->k_max};
    st->program = sim_build_exact_kernels(sim, "sph/dfsph.cl", names, kernels);
    if (!st->program)
        return -1;
    st->eights = sim->cl->lanes && !sim_kernels_slabs(sim); /* MZ_LANES && !MZ_SLABS */
    size_t n = sim->cap;
    if (sph_step_size_init(&st->step_size, sim) != 0)
        return -1;
    size_t groups = dfsph_error_partials(n);
    cl_mem *per4[] = {&st->rho, &st->alpha, &st->k,     &st->kq, &st->K,
                      &st->Kv,  &st->p,     &st->p_sum, &st->a2, &st->Kprev};
    for (size_t i = 0; i < sizeof per4 / sizeof *per4; i++)
        if (!(*per4[i] = dfsph_buffer(sim, 4 * (n ? n : 1), "clCreateBuffer(DFSPH)")))
            return -1;
    st->gw = dfsph_buffer(sim, 16 * (n ? n : 1), "clCreateBuffer(DFSPH wall gradients)");
    st->partial = dfsph_buffer(sim, 16 * groups, "clCreateBuffer(DFSPH error sums)");
    st->total = dfsph_buffer(sim, 16, "clCreateBuffer(DFSPH error)");
    st->lists.grads = grads_wanted(sim);
    if (!st->gw || !st->partial || !st->total || sph_lists_init(&st->lists, sim) != 0)
        return -1;
    cl_float zero = 0.0f;
    cl_mem *zeroed[] = {&st->K, &st->Kv, &st->p, &st->p_sum, &st->Kprev};
    for (size_t i = 0; i < sizeof zeroed / sizeof *zeroed; i++)
        if (!cl_ok(clEnqueueFillBuffer(sim->cl->queue, *zeroed[i], &zero, sizeof zero, 0,
                                       4 * (n ? n : 1), 0, NULL, NULL),
                   "clEnqueueFillBuffer(DFSPH)"))
            return -1;
    /* Distributed: the plan found the whole run's grid dense (slabs.h); a rank's is the same. */
    if (grid_create(&st->grid, sim->cl, n, st->P.h, s->sim.dimensions, s->domain.min,
                    s->domain.max, sim->plan ? MZ_GRID_SLABS : MZ_GRID_AUTO) != 0)
        return -1;
    st->grid_made = true;
    sim->grid = &st->grid;
    /* The stiffnesses travel with the particles: the next step's warm start; so does the frame's
     * pressure sum. No pass reads a neighbour's, nor its id, body or inverse mass: a distributed
     * run's halo copies go without. */
    cl_mem *owned4[] = {&sim->inv_mass, &sim->id, &sim->body, &st->K,
                        &st->Kv,        &st->Kprev, &st->p_sum};
    if (grid_set_count(&st->grid, sim->n) != 0 || grid_register(&st->grid, &sim->pos, 16) ||
        grid_register(&st->grid, &sim->vel, 16))
        return -1;
    for (size_t i = 0; i < sizeof owned4 / sizeof *owned4; i++)
        if (grid_register_owned(&st->grid, owned4[i], 4))
            return -1;
    /* Distributed with probes: they read the last step's densities and pressures after the
     * next step's exchange and build (solvers/observe.h), so those go with their owners. */
    if (sim->plan && s->n_probes > 0 && (grid_register_owned(&st->grid, &st->rho, 4) ||
                                         grid_register_owned(&st->grid, &st->p, 4)))
        return -1;
    if (boundary_init(&st->bound, sim, st->P.mass, st->P.h,
                      st->grid.desc.hashed ? MZ_GRID_HASHED : MZ_GRID_DENSE, false) != 0 ||
        sph_loads_init(&st->loads, sim, &st->bound, st->program, "dfsph_wall_loads") != 0)
        return -1;
    if (st->loads.on && !(st->S = dfsph_buffer(sim, 4 * (n ? n : 1), "clCreateBuffer(DFSPH)")))
        return -1;
    /* Distributed: keep this rank's window of its share (one halo layer: dfsph_slab_geometry). */
    if (dfsph_dist_init(&st->dist, sim, &st->grid, dfsph_grow) != 0)
        return -1;
    /* The first step's divergence solve measures its error against a step this long: the
     * force criterion for gravity, or a CFL step of the initial speeds. */
    double g = sqrt(st->frame.g.s[0] * st->frame.g.s[0] + st->frame.g.s[1] * st->frame.g.s[1] +
                    st->frame.g.s[2] * st->frame.g.s[2]);
    st->dt_last = scene_frame_dt(s);
    if (g > 0)
        st->dt_last = fmin(st->dt_last, scene_cfl(s) * sqrt(st->P.h / g));
    st->dt_before = st->dt_last;
    /* Frame 0's density. */
    if (build_grid(sim, st) != 0 || !density_alpha(sim, st))
        return -1;
    sim->field[MZ_FIELD_DENSITY] = &st->rho;
    sim->field[MZ_FIELD_PRESSURE] = &st->p;
    return 0;
}

static void dfsph_release(mz_sim *sim)
{
    dfsph_state *st = sim->state;
    if (!st)
        return;
    dfsph_dist_release(&st->dist, sim);
    if (st->grid_made)
        grid_release(&st->grid);
    sph_loads_release(&st->loads);
    boundary_release(&st->bound);
    sph_lists_release(&st->lists);
    cl_kernel ks[] = {st->k_density, st->k_forces, st->k_predict, st->k_error,
                      st->k_sum,     st->k_apply,  st->k_advect,  st->k_max};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {st->rho, st->alpha, st->k,       st->kq,    st->K, st->Kv,    st->p,
                   st->a2,  st->p_sum, st->partial, st->total, st->S, st->Kprev, st->gw};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (st->program)
        clReleaseProgram(st->program);
    sph_step_size_release(&st->step_size);
    free(st);
    sim->state = NULL;
}

/* The warm starts' stiffnesses (in the particles' device order: the last step's K and K_v, the
 * κ of the step before), the output's pressure, the last two steps' dt and the solves' cap. */
static size_t dfsph_state_parts(mz_sim *sim, mz_state_part *parts, size_t max)
{
    dfsph_state *st = sim->state;
    const mz_state_part all[] = {
        {"dfsph_stiffness", &st->K, NULL, 0, 4},
        {"dfsph_divergence_stiffness", &st->Kv, NULL, 0, 4},
        {"dfsph_pressure", &st->p, NULL, 0, 4},
        {"dfsph_previous_stiffness", &st->Kprev, NULL, 0, 4},
        {"dfsph_frame_pressure_sum", &st->p_sum, NULL, 0, 4},
        {"dfsph_last_dt", NULL, &st->dt_last, sizeof st->dt_last, 0},
        {"dfsph_before_last_dt", NULL, &st->dt_before, sizeof st->dt_before, 0},
        {"dfsph_solves_step", NULL, &st->dt_solves, sizeof st->dt_solves, 0},
    };
    return sim_state_existing(all, sizeof all / sizeof *all, parts, max);
}

int dfsph_stats(const mz_sim *sim, mz_dfsph_stats *out)
{
    if (sim->solver != &mz_solver_dfsph || !sim->state)
        return -1;
    const dfsph_state *st = sim->state;
    *out = st->stats;
    out->list_cap = st->lists.cap;
    out->lists_grown = st->lists.grown;
    return 0;
}

int dfsph_set_list_cap(mz_sim *sim, unsigned cap)
{
    if (sim->solver != &mz_solver_dfsph || !sim->state)
        return -1;
    return sph_lists_resize(&((dfsph_state *)sim->state)->lists, sim, cap);
}

static void dfsph_report(const mz_sim *sim, FILE *out)
{
    const dfsph_state *st = sim->state;
    const mz_fluid *f = &sim->scene->fluids[0];
    double steps = st->stats.steps ? (double)st->stats.steps : 1.0;
    fprintf(out, "  DFSPH: %.2f density and %.2f divergence iterations a step (tolerances %.3g%% "
                 "and %.3g%%); the average density error a solve ended with was at most "
                 "%.3g%%; %ld solves stopped at %d iterations above tolerance; %ld steps shortened "
                 "for heavy solves\n"
                 "  DFSPH steps set by the speed bound %ld, the acceleration bound %ld, the "
                 "viscous bound %ld (fastest particle %.3g m/s, largest explicit |a| %.3g m/s^2)\n",
            (double)st->stats.density_iterations / steps,
            (double)st->stats.divergence_iterations / steps, 100 * f->density_tolerance,
            100 * f->divergence_tolerance, 100 * st->stats.worst_density_error, st->stats.capped,
            MAX_ITERATIONS, st->stats.solves_shortened, st->stats.by_speed, st->stats.by_accel,
            st->stats.by_viscosity, st->stats.fastest, st->stats.largest_accel);
}

/* The next step's grid now (mz_solver.grid_now), indexed: the step builds it from the same
 * positions. */
static int dfsph_grid_now(mz_sim *sim)
{
    dfsph_state *st = sim->state;
    if (!st->dist.on)
        return grid_index(&st->grid, sim->pos);
    /* a rank exchanges and builds as the step will again (which then changes nothing) */
    return dfsph_dist_exchange(&st->dist, sim) != 0 ? -1 : build_grid(sim, st);
}

const mz_solver mz_solver_dfsph = {
    .name = "DFSPH",
    .stages = dfsph_stages,
    .device_bytes = dfsph_device_bytes,
    .init = dfsph_init,
    .advance = dfsph_advance,
    .release = dfsph_release,
    .state = dfsph_state_parts,
    .report = dfsph_report,
    .grid_now = dfsph_grid_now,
    .slab_geometry = dfsph_slab_geometry,
    .largest_buffer = dfsph_largest_buffer,
};
