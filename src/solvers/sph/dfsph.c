/* Divergence-free SPH (Bender & Koschier 2015, 2017): incompressible by two pressure solves a
 * step instead of a stiff equation of state, so its steps are set by the flow's speed, not a
 * speed of sound. Kernels and the step's order: kernels/sph/dfsph.cl.
 *
 * Both solves iterate until the average error over the particles is below the scene's
 * tolerance (density_tolerance of ρ0 for the compression predicted at the end of the step,
 * divergence_tolerance for the density change the velocity field would make in a step), at
 * least once after their warm passes, at most MAX_ITERATIONS times: the error that stops a
 * solve is its last velocities', so what it leaves is checked (DENSITY_MIN_ITERATIONS). Both
 * start warm, from the stiffnesses of the last steps (dfsph_solve.c). The errors are summed on the
 * device as integers (fixed point) and read back once an iteration: the same sum however the
 * particles are split, so that ranks under mpirun (dfsph_dist.c) take one process's
 * iterations. */
#include "build/build.h"
#include "solvers/sph/dfsph_memory.h"
#include "solvers/sph/dfsph_state.h"
#include "dist/dist.h"
#include "util/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dfsph_stages[] = {"grid",     "density", "divergence solve", "forces",
                                           "pressure solve", "advect", NULL};

/* The density solve's least iterations after its warm pass. Each solve stops on the error of
 * the velocities it ends with, so one iteration is enough for the tolerance; a second, when the
 * first had met it, took 9% of the peer's dam break (2.13 → 1.34 iterations a step) and left
 * the same water (its surge front within 0.4%) and resting tanks whose round-off spread is the
 * same (docs/benchmarks.md, session 24). The peer's minIterations 2 counts differently: its
 * iterations check the error of the pressure before their update, so its 2 are a warm start and
 * one checked update, then one unchecked (half-weighted) update. */
enum { DENSITY_MIN_ITERATIONS = 1 };

/* The density solve's warm pass applies this fraction of the pressure the last two steps
 * applied (the smaller, never scaled up; dfsph_solve.c). */
static const double DENSITY_WARM = 0.7;
/* The divergence solve starts from the whole of its last total. */
static const double DIVERGENCE_WARM = 1.0;

/* The step the solves carry (solves_control): a step whose two solves took more than
 * SOLVES_HEAVY iterations together (warm passes not counted) caps the next at 0.9 of its own; a
 * step under SOLVES_LIGHT lets the cap grow by 1.1. */
enum { SOLVES_HEAVY = 20, SOLVES_LIGHT = 8 };

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
    boundary_args b = dfsph_bound_of(st);
    sph_lists *l = &st->lists;
    /* Where the error pass takes one particle a work-item and computes its gradients, the
     * density pass makes the divergence solve's warm error pass too (the same pairs in the
     * same order: the same bits), one pass over the lists fewer a step. (A CPU's density
     * pass runs a cell at a time, and the warm pass writes the kept gradients.) */
    st->warm_in_density = !st->eights && !l->grad;
    cl_float warm = st->warm_in_density ? (cl_float)DIVERGENCE_WARM : 0.0f;
    cl_float dt_last = (cl_float)st->dt_last;
    for (;;) {
        if (sph_lists_before_build(l, sim) != 0 ||
            !KARGS(st->k_density, "dfsph_density_alpha", A(sim->n_u), A(st->P),
                   A(st->min_neighbours), A(st->grid.desc), A(st->grid.cell_words),
                   A(st->grid.cell_first), A(sim->pos), A(b.desc), A(b.words), A(b.first),
                   A(b.pos), A(b.mass), A(b.nb), A(l->stride), A(l->cap), A(l->fluid),
                   A(l->fluid_count), A(l->wall), A(l->wall_count), A(l->overflow),
                   A(st->rho), A(st->alpha), A(st->gw), A(warm), A(dt_last), A(sim->vel),
                   A(st->Kv), A(st->k), A(st->kq), A(b.moving), A(b.vel), A(b.acc)) ||
            !dfsph_launch_owned(sim, st->k_density, STAGE_DENSITY, "dfsph_density_alpha"))
            return false;
        int fits = sph_lists_after_build(l, sim);
        st->grads_due = true; /* new lists: the next error pass writes their gradients */
        if (fits != 0)
            return fits > 0;
    }
}

/* The first steps' bound: water starting at rest under gravity moves g dt in its first step,
 * which the floor takes as a compression of g dt² over a spacing; the first step makes it at
 * most the density tolerance (g dt² ≤ tol · spacing), and each step after it may be 1.1 times
 * longer (about 30 steps to the CFL's). A function of the step count alone: a resumed run
 * takes the same steps. From the CFL's first step instead (the acceleration bound, cfl
 * sqrt(h/g)), a deep column's first solves ran out of iterations before the floor's push
 * reached its top: at 10^7 particles (215 layers) that left the water under the column 12%
 * expanded for 0.1 s, whose closing threw particles at 38 m/s (docs/benchmarks.md, session
 * 25). */
static double start_step(const mz_scene *s, double g)
{
    const mz_fluid *f = &s->fluids[0];
    return g > 0 ? sqrt(f->density_tolerance * f->spacing / g) : INFINITY;
}

static double start_ramp(const dfsph_state *st, long step)
{
    return step > 400 ? INFINITY : st->dt_start * pow(1.1, (double)step); /* 1.1^400: past any */
}

/* The CFL step: dt = cfl · min(h / |v|max, sqrt(h / |a|max)), within the frame: *dt, and the
 * step wanted before the frame's end cut it, *want. */
static int choose_dt(mz_sim *sim, dfsph_state *st, double frame_dt, double *dt, double *want_out)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    float v2, a2;
    if (sph_speed_accel_max(&st->step_size, sim, st->k_max, sim->vel, st->a2, begin, end,
                            STAGE_FORCES, &v2, &a2) != 0)
        return -1;
    /* Every rank takes the same step: the maxima over all of them (exact). */
    float most[2] = {v2, a2};
    dist_max_floats(most, 2);
    v2 = most[0];
    a2 = most[1];
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
    double ramp = start_ramp(st, sim->step);
    bool ramped = ramp < want;
    want = fmin(want, ramp);
    /* A step a million times below the first one is a blow-up (velocities that grow as the
     * step shrinks): stop with the frames so far rather than run on with steps of zero. */
    double first = fmin(st->dt_start, frame_dt);
    if (!(want >= 1e-6 * first)) {
        mz_error("the simulation blew up at t = %.6g s (step %ld): the step fell to %.3g ms, "
                 "below a millionth of the first (%.3g ms), with the fastest particle at %.3g "
                 "m/s. Likely causes: water more layers deep than the solves reach (a coarser "
                 "fluids[].spacing, or a tighter fluids[].density_tolerance), or particles "
                 "started on top of each other or of a wall",
                 sim->time, sim->step, 1e3 * want, 1e3 * first, sqrt(v2));
        return -1;
    }
    *want_out = want;
    *dt = sim_frame_step(sim, frame_dt, want);
    /* What set the step, for the summary (a frame's end counts as none of them). */
    if (*dt >= want) {
        if (ramped)
            st->stats.by_start++;
        else if (want == st->dt_viscous)
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
 * same on every rank and device: deterministic. The cap is 0.9 of the step the solver wanted,
 * not of the one taken: a step a frame's end had cut to half of what was left gave a cap that
 * the next cut halved again, and a 215-layer column's heavy solves chased its first frame's
 * end from 1.2 ms to 0.005 ms in 9 steps (a solve's velocities go as 1/dt), which threw it
 * apart at 30 m/s (docs/benchmarks.md, session 25). */
static void solves_control(dfsph_state *st, double want, int iterations)
{
    if (iterations > SOLVES_HEAVY)
        st->dt_solves = 0.9 * want;
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
    boundary_args b = dfsph_bound_of(st);
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
    /* Distributed: the halo's densities, which the forces read (dfsph_forces_error), from
     * their owners with the first apply's k/ρ (dfsph_solve.c); where the density pass made
     * the warm error pass, those k/ρ are its own. */
    if (!density_alpha(sim, st))
        return -1;
    dfsph_dist_due(&st->dist, st->rho, 4);
    if (st->warm_in_density) {
        dfsph_dist_due(&st->dist, st->kq, 4);
        if (!dfsph_dist_begin(&st->dist))
            return -1;
    }
    st->s_first = true;
    /* The divergence solve ends the last step (its velocities at the new positions). Its last
     * pass is also this step's forces pass (dfsph_forces_error): viscosity, the walls' friction,
     * gravity into pred and |a|² into a2. */
    int it =
        dfsph_solve(sim, st, 0, st->dt_last, DIVERGENCE_WARM, f->divergence_tolerance * rho0, 1,
                    &left);
    if (it < 0)
        return -1;
    st->stats.divergence_iterations += it;
    int divergence_it = it;
    if (it == MAX_ITERATIONS && left > f->divergence_tolerance * rho0)
        warn_capped(sim, st, "divergence", left, f->divergence_tolerance * rho0);
    /* Distributed: the halo's accelerations from their owners, copied to the host with the
     * step size's maxima, so that every rank predicts its halo's velocities as their owners
     * do (v + dt a: the same bits) instead of sharing them after the prediction. */
    dfsph_dist_due(&st->dist, sim->pred, 16);
    double dt, want;
    if (!dfsph_dist_begin(&st->dist) || choose_dt(sim, st, frame_dt, &dt, &want) != 0)
        return -1;
    /* Forces on solids due at this step's end: the pairs now, the pressure after the solve. */
    bool loads = st->loads.on && sim_loads_due(sim, dt);
    if (loads && !gather_loads(sim, st, 0, dt))
        return -1;
    cl_float dt_f = (cl_float)dt;
    if (!dfsph_dist_end(&st->dist) ||
        !KARGS(st->k_predict, "dfsph_predict", A(sim->n_u), A(dt_f), A(sim->pred),
               A(sim->vel)) ||
        !dfsph_launch_range(sim, st->k_predict, 0, sim->n, STAGE_FORCES, "dfsph_predict"))
        return -1;
    it = dfsph_solve(sim, st, 1, dt, DENSITY_WARM, f->density_tolerance * rho0,
                     DENSITY_MIN_ITERATIONS, &left);
    if (it < 0)
        return -1;
    st->stats.density_iterations += it;
    solves_control(st, want, it + divergence_it);
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
    if (sph_lists_init(&st->lists, sim, false) != 0 ||
        sph_lists_resize(&st->lists, sim, list_cap, 0) != 0)
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
    static const char *const names[] = {"dfsph_density_alpha", "dfsph_forces_error",
                                        "dfsph_predict",       "dfsph_error",
                                        "dfsph_sum",           "dfsph_apply",
                                        "dfsph_advect",        "speed_accel_max", NULL};
    cl_kernel *const kernels[] = {&st->k_density, &st->k_forces_error, &st->k_predict,
                                  &st->k_error,   &st->k_sum,          &st->k_apply,
                                  &st->k_advect,  &st->k_max};
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
    if (!st->gw || !st->partial || !st->total || sph_lists_init(&st->lists, sim, false) != 0)
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
    st->dt_start = start_step(s, g);
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
    cl_kernel ks[] = {st->k_density, st->k_forces_error, st->k_predict, st->k_error,
                      st->k_sum,     st->k_apply,        st->k_advect,  st->k_max};
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
    return sph_lists_resize(&((dfsph_state *)sim->state)->lists, sim, cap, 0);
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
                 "viscous bound %ld, the start's ramp %ld (fastest particle %.3g m/s, largest "
                 "explicit |a| %.3g m/s^2)\n",
            (double)st->stats.density_iterations / steps,
            (double)st->stats.divergence_iterations / steps, 100 * f->density_tolerance,
            100 * f->divergence_tolerance, 100 * st->stats.worst_density_error, st->stats.capped,
            MAX_ITERATIONS, st->stats.solves_shortened, st->stats.by_speed, st->stats.by_accel,
            st->stats.by_viscosity, st->stats.by_start, st->stats.fastest,
            st->stats.largest_accel);
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
