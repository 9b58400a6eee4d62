/* SPH solvers, one step:
 *
 *   WCSPH          grid → density (poly6 sum, or the continuity equation with δ-SPH diffusion)
 *                  + pressure (Tait) → forces + symplectic Euler
 *   collapsed SPH  grid → one pass: density now, forces from last step's density and pressure
 *
 * Forces: symmetric pressure (spiky gradient), viscosity (viscosity-kernel Laplacian),
 * Monaghan's artificial viscosity, gravity, and the walls: penalty walls, or boundary particles
 * (the fluid lattice continued into the walls; wall pressure extrapolated as in Adami et al.
 * 2012; no-slip; Monaghan's 1994 repulsion as a last resort), with a domain clamp behind both. Steps are fixed (frame / substeps) or
 * adaptive: dt = cfl · min(h / max(c0, |v|max), sqrt(h / |a|max)), never past the frame's end.
 * The update writes new positions and velocities into second buffers (neighbours still read the
 * old ones), and the handles are swapped.
 *
 * WCSPH keeps neighbour lists (neighbour_list.h) where the device has room for them (about
 * 450 bytes a particle in 3D, 340 with a GPU's masked fluid list): its density pass, the step's
 * one grid walk, writes them and the forces pass reads them (~33 neighbours a particle instead
 * of 216 candidates in 27 cells); the output is bit-identical. A particle whose list ran short walks the grid in the forces pass,
 * and the lists grow at the frame's end. MIZU_SPH_LISTS=1 or 0 decides for a run
 * (sph_lists_wanted). */
#include "build/build.h"
#include "device/grid.h"
#include "dist/dist.h"
#include "dist/slabs.h"
#include "solvers/sim.h"
#include "solvers/boundary.h"
#include "solvers/sph/loads.h"
#include "solvers/sph/neighbour_list.h"
#include "solvers/sph/sph.h"
#include "solvers/sph/sph_state.h"
#include "solvers/sph/step_size.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const sph_stages[] = {"grid", "density", "forces", "step size", NULL};

/* Whether a WCSPH run keeps neighbour lists: MIZU_SPH_LISTS=1 or 0, else when the device has
 * room for them beside what the run needs (the fit check counts only that, so a run that fits
 * without them is never refused for them), and each of the two lists, with room to grow by a
 * quarter, is a buffer the device can make (PoCL here makes none over 2.1 GB: 10^7 particles'
 * lists are 2.3 GB each) of at most 2^32 entries. Measured: 1.36x the frame loop on 2 CPU
 * cores, 1.33x on an H200 at 10^6 particles (docs/benchmarks.md). */
static bool sph_lists_wanted(const mz_sim *sim, bool masked)
{
    const char *env = getenv("MIZU_SPH_LISTS");
    if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0))
        return env[0] == '1';
    double lists = (double)sim->cap * (double)sph_lists_bytes(sim->scene, masked);
    return sph_lists_room(sim, lists) && sph_lists_buffers_fit(sim, masked, 1.25);
}

static cl_mem sph_buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes, NULL, what);
}

/* A buffer replaced by an empty one of `bytes` (what it held is not needed: scratch). */
static bool renew(mz_sim *sim, cl_mem *b, size_t bytes, const char *what)
{
    if (!*b)
        return true;
    cl_mem nb = sph_buffer(sim, bytes, what);
    if (!nb)
        return false;
    clReleaseMemObject(*b);
    *b = nb;
    return true;
}

/* Distributed: room for cap particles (slabs.h's grow), between two steps. The grid keeps the
 * buffers that travel with the particles; the rest is rewritten by every step before it is
 * read. */
static int sph_grow(void *ctx, size_t cap)
{
    mz_sim *sim = ctx;
    sph_state *st = sim->state;
    if (grid_reserve(&st->grid, cap) != 0)
        return -1;
    /* (continuity's densities travel, and with probes the densities and pressures) */
    cl_mem *scratch4[] = {&st->p, &st->a2, &st->drho, &st->rho_next, &st->rho};
    bool ok = renew(sim, &sim->pred, 16 * cap, "clCreateBuffer(predicted position)") &&
              renew(sim, &st->vel_out, 16 * cap, "clCreateBuffer(new velocity)") &&
              (!st->P.kgc || renew(sim, &st->kgc, kgc_bytes(sim->scene) * cap,
                                  "clCreateBuffer(gradient correction)"));
    for (size_t i = 0; ok && i < sizeof scratch4 / sizeof *scratch4; i++)
        ok = grid_moves(&st->grid, scratch4[i]) ||
             renew(sim, scratch4[i], 4 * cap, "clCreateBuffer(SPH scratch)");
    if (!ok)
        return -1;
    sim->cap = cap;
    return 0;
}

static int sph_init(mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    sph_state *st = xcalloc(1, sizeof *st);
    sim->state = st;
    st->collapsed = scene_solver(s) == MZ_SOLVER_COLLAPSED_SPH;
    st->adaptive = s->sim.adaptive;
    st->P = sph_params_for(s);
    const sph_params *P = &st->P;
    float c[] = {P->poly6, P->spiky_grad, P->visc_lap, P->tait_b, P->mass, P->h2, P->wall_d};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (!isfinite(c[i]) || c[i] == 0.0f) {
            mz_error("SPH kernel constants leave single precision for spacing %g m and support "
                     "radius %g m (poly6 %g, spiky %g, Tait B %g): choose units that keep "
                     "lengths within a few decades of 1",
                     s->fluids[0].spacing, P->h, P->poly6, P->spiky_grad, P->tait_b);
            return -1;
        }
    st->walls = sim_walls(s);
    st->frame = sim_frame(s, sim->time);
    st->penalty = s->domain.boundary.type == MZ_BOUNDARY_PENALTY;
    static const char *const names[] = {"sph_density", "sph_forces", "csph_step",
                                        "speed_accel_max", NULL};
    cl_kernel *const kernels[] = {&st->k_density, &st->k_forces, &st->k_collapsed, &st->k_max};
    st->program = sim_build_kernels(sim, "sph/sph.cl", names, kernels);
    if (!st->program)
        return -1;

    size_t n = sim->cap; /* room: more than the particles on a rank of a distributed run */
    /* The walls first: their grid's sort needs memory only until it has run (grid_settle), so
     * it is spent before the fluid's buffers are made and the run's peak is what it holds. */
    mz_grid_mode mode = sim->plan ? MZ_GRID_SLABS : MZ_GRID_AUTO;
    mz_grid_desc fluid_desc;
    if (grid_describe(n, st->P.h, s->sim.dimensions, s->domain.min, s->domain.max, mode,
                      &fluid_desc) != 0 ||
        boundary_init(&st->bound, sim, st->P.mass, st->P.h,
                      fluid_desc.hashed ? MZ_GRID_HASHED : MZ_GRID_DENSE, true) != 0)
        return -1;
    st->vel_out = sph_buffer(sim, 16 * n, "clCreateBuffer(new velocity)");
    st->rho = sph_buffer(sim, 4 * n, "clCreateBuffer(density)");
    st->p = sph_buffer(sim, 4 * n, "clCreateBuffer(pressure)");
    st->a2 = sph_buffer(sim, 4 * n, "clCreateBuffer(acceleration)");
    st->kgc = sph_buffer(sim, kgc_bytes(s) * (st->P.kgc ? n : 1),
                         "clCreateBuffer(gradient correction)");
    if (!st->vel_out || !st->rho || !st->p || !st->a2 || !st->kgc)
        return -1;
    if (st->collapsed) {
        st->rho_prev = sph_buffer(sim, 4 * n, "clCreateBuffer(last density)");
        st->drho = sph_buffer(sim, 4 * n, "clCreateBuffer(density rate)");
        st->drho_prev = sph_buffer(sim, 4 * n, "clCreateBuffer(last density rate)");
        if (!st->rho_prev || !st->drho || !st->drho_prev)
            return -1;
        /* The initial density pass gives ρ at t = 0 with no rate yet: start from rest. */
        cl_float zero = 0.0f;
        if (!cl_ok(clEnqueueFillBuffer(sim->cl->queue, st->drho_prev, &zero, sizeof zero, 0,
                                       4 * n, 0, NULL, NULL),
                   "clEnqueueFillBuffer(density rate)"))
            return -1;
    }
    if (sph_step_size_init(&st->step_size, sim) != 0)
        return -1;

    /* Distributed: the plan found the whole run's grid dense (slabs.h); a rank's is the same. */
    if (grid_create(&st->grid, sim->cl, n, st->P.h, s->sim.dimensions, s->domain.min,
                    s->domain.max, mode) != 0)
        return -1;
    st->grid_made = true;
    sim->grid = &st->grid;
    if (grid_set_count(&st->grid, sim->n) != 0)
        return -1;
    /* The SPH kernels read neither masses (one per fluid, in P) nor ids nor bodies of a
     * neighbour: those stay with the owner in a distributed run. */
    cl_mem *owned4[] = {&sim->inv_mass, &sim->id, &sim->body}, *moved4[] = {&st->rho_prev,
                                                                             &st->drho_prev};
    /* In one process, the grid's reorder scratch is the predicted positions and |a|²: a step
     * writes both before it reads them, and nothing reads them between its end and the next
     * build (20 bytes a particle). Its sort's copies are the new velocities and the predicted
     * positions (8 bytes a particle), which are dead between steps too, when a probe's grid
     * is indexed (sph_grid_now); |a|² is not: the fixed steps' blow-up check reads it after the
     * frame. A rank's grid keeps its own for the exchange. */
    if (!sim->plan && (grid_borrow_scratch(&st->grid, &sim->pred, 16) != 0 ||
                       grid_borrow_scratch(&st->grid, &st->a2, 4) != 0 ||
                       grid_borrow_sort_copies(&st->grid, &st->vel_out, &sim->pred) != 0))
        return -1;
    if (grid_register(&st->grid, &sim->pos, 16) || grid_register(&st->grid, &sim->vel, 16))
        return -1;
    for (size_t i = 0; i < sizeof owned4 / sizeof *owned4; i++)
        if (*owned4[i] && grid_register_owned(&st->grid, owned4[i], 4))
            return -1;
    for (size_t i = 0; i < sizeof moved4 / sizeof *moved4; i++)
        if (*moved4[i] && grid_register(&st->grid, moved4[i], 4))
            return -1;
    /* WCSPH's densities by the continuity equation are state carried from step to step: they
     * start at the rest density (the lattice is at rest by construction) and travel with the
     * particles. (The scene refuses continuity with collapsed SPH.) */
    if (st->P.continuity) {
        st->rho_next = sph_buffer(sim, 4 * n, "clCreateBuffer(new density)");
        if (!st->rho_next || grid_register(&st->grid, &st->rho, 4) ||
            !cl_ok(clEnqueueFillBuffer(sim->cl->queue, st->rho, &st->P.rest_density,
                                       sizeof st->P.rest_density, 0, 4 * n, 0, NULL, NULL),
                   "clEnqueueFillBuffer(density)"))
            return -1;
    }
    /* Distributed with probes: they read the densities and pressures of the step just taken
     * after the next step's exchange and build (solvers/observe.h), so those go with their
     * owners. (Collapsed SPH's newest densities, rho_prev, already do.) */
    if (sim->plan && s->n_probes > 0 &&
        ((!st->collapsed && !st->P.continuity && grid_register_owned(&st->grid, &st->rho, 4)) ||
         grid_register_owned(&st->grid, &st->p, 4)))
        return -1;
    if (sph_loads_init(&st->loads, sim, &st->bound, st->program, "sph_wall_loads") != 0)
        return -1;
    /* WCSPH in one process: the density pass's lists for the forces pass. */
    bool masked = sph_lists_masked_on(s, sim->cl->list_masks, st->grid.desc.hashed);
    st->listed = !st->collapsed && !sim->plan && sph_lists_wanted(sim, masked);
    st->listed_i = st->listed;
    if (st->listed && (sph_lists_init(&st->lists, sim, masked) != 0 ||
                       sph_lists_before_build(&st->lists, sim) != 0))
        return -1;
    st->split = sph_split_density(sim, st);
    if (st->split) {
        static const char *const split_names[] = {"sph_density_walk", "sph_density_listed",
                                                  NULL};
        cl_kernel *const split_kernels[] = {&st->k_walk, &st->k_listed};
        st->split_program = sim_build_kernels(sim, "sph/sph_density_split.cl", split_names,
                                              split_kernels);
        if (!st->split_program)
            return -1;
    }
    /* Distributed: keep this rank's window of its share (halo layers: sph_slab_geometry). */
    if (sim->plan) {
        if (slabs_create(&st->slabs, &st->grid, sim->plan, sim->pos) != 0)
            return -1;
        st->slabs_made = true;
        st->slabs.grow = sph_grow;
        st->slabs.grow_ctx = sim;
        sim->slabs = &st->slabs;
        sim_set_count(sim, st->grid.n);
    }
    /* First step: the CFL step for c0 (the fastest initial speed is part of c0), or the force
     * criterion for gravity when that is shorter (a speed of sound far below the flow's). */
    double g = sqrt(st->frame.g.s[0] * st->frame.g.s[0] + st->frame.g.s[1] * st->frame.g.s[1] +
                    st->frame.g.s[2] * st->frame.g.s[2]);
    st->next_dt = scene_cfl(s) * st->P.h / st->P.c0;
    if (g > 0)
        st->next_dt = fmin(st->next_dt, scene_cfl(s) * sqrt(st->P.h / g));
    double fixed = scene_substep_dt(s);
    if (!st->adaptive && fixed > st->next_dt)
        mz_warn("SPH step %.3g ms exceeds the CFL limit %.3g ms (cfl %g, h %g m, c0 %.3g m/s); "
                "expect a blow-up: raise simulation.substeps to %.0f or set "
                "simulation.adaptive",
                1e3 * fixed, 1e3 * st->next_dt, scene_cfl(s), st->P.h, st->P.c0,
                ceil(scene_frame_dt(s) / st->next_dt));
    /* The initial state's density and pressure: frame 0's output, and collapsed SPH's
     * "last step" for its first step. */
    if (grid_build(&st->grid, sim->pos) != 0 ||
        (st->slabs_made && slabs_after_build(&st->slabs) != 0))
        return -1;
    /* After the build: it swaps the handles of the buffers it moves, rho_prev among them. */
    if (!sph_run_density(sim, st, st->collapsed ? &st->rho_prev : &st->rho, &st->rho_next, 0.0))
        return -1;
    /* Collapsed SPH's newest densities are swapped into rho_prev at the end of each step. */
    sim->field[MZ_FIELD_DENSITY] = st->collapsed ? &st->rho_prev : &st->rho;
    sim->field[MZ_FIELD_PRESSURE] = &st->p;
    return 0;
}

/* Distributed: the owned particles to the windows of their layers now. */
static int exchange(mz_sim *sim, sph_state *st)
{
    if (!st->slabs_made)
        return 0;
    if (slabs_exchange(&st->slabs, sim->pos) != 0)
        return -1;
    sim_set_count(sim, st->grid.n);
    return 0;
}

static int build_grid(mz_sim *sim, sph_state *st)
{
    return grid_build(&st->grid, sim->pos) != 0 ||
                   (st->slabs_made && slabs_after_build(&st->slabs) != 0)
               ? -1
               : 0;
}

static int sph_step(mz_sim *sim, sph_state *st, double dt_seconds)
{
    cl_float dt = (cl_float)dt_seconds;
    if (exchange(sim, st) != 0)
        return -1;
    st->frame = sim_frame(sim->scene, sim->time);
    if (boundary_move(&st->bound, sim, sim->time) != 0 || build_grid(sim, st) != 0)
        return -1;
    sim_profile_grid(sim, &st->grid, STAGE_GRID);
    sim_grid_built(sim); /* the probes due at the last step's end, before anything moves */
    boundary_args b = boundary_of(&st->bound, st->grid.desc);
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    cl_uint end_u = (cl_uint)end;
    /* A step whose forces on solids are due: the forces pass keeps what the gather needs. */
    bool loads = st->loads.on && sim_loads_due(sim, dt_seconds);
    cl_int rest_out = loads && st->loads.rest_on;
    bool ok;
    if (!st->collapsed) {
        ok = sph_density_and_forces(sim, st, dt, rest_out) &&
             (!loads || sph_loads_gather(&st->loads, sim, &st->grid, &st->bound, &st->P,
                                         st->frame, 0, 0.0f, st->rho, st->rho, st->p,
                                         st->kgc));
    } else {
        cl_float lag = (cl_float)st->lag;
        ok = KARGS(st->k_collapsed, "csph_step", A(end_u), A(dt), A(lag), A(st->P),
                   A(st->frame), A(st->walls), A(st->penalty), A(st->grid.desc),
                   A(st->grid.cell_words), A(st->grid.cell_first), A(sim->pos), A(sim->vel),
                   A(st->rho_prev), A(st->drho_prev), A(b.desc), A(b.words), A(b.first),
                   A(b.pos), A(b.mass), A(b.nb), A(b.moving), A(b.vel), A(b.acc), A(st->rho),
                   A(st->drho), A(st->p),
                   A(sim->pred), A(st->vel_out), A(st->a2), A(rest_out), A(*sph_rest_arg(st))) &&
             sim_launch_range(sim, st->k_collapsed, begin, end, STAGE_FORCES, "csph_step") &&
             (!loads || sph_loads_gather(&st->loads, sim, &st->grid, &st->bound, &st->P,
                                         st->frame, 1, lag, st->rho_prev, st->drho_prev,
                                         st->p, st->kgc));
        swap_mem(&st->rho, &st->rho_prev);
        swap_mem(&st->drho, &st->drho_prev);
    }
    st->lag = dt_seconds; /* collapsed: the densities just summed are at this step's start */
    if (!ok)
        return -1;
    swap_mem(&sim->pos, &sim->pred);
    swap_mem(&sim->vel, &st->vel_out);
    return 0;
}

/* The next step's grid now (mz_solver.grid_now): indexed in one process; a rank exchanges and
 * builds, as the step will again (the same windows and order: the exchange places owned
 * particles by their layers, and the build's stable sort keeps sorted keys where they are). */
static int sph_grid_now(mz_sim *sim)
{
    sph_state *st = sim->state;
    if (!st->slabs_made)
        return grid_index(&st->grid, sim->pos);
    return exchange(sim, st) != 0 || build_grid(sim, st) != 0 ? -1 : 0;
}

/* One fixed step (sim_substep counts it). */
static int sph_substep(mz_sim *sim, double dt) { return sph_step(sim, sim->state, dt); }

/* The CFL and force criteria from the largest |v| and |a| of the step just taken. */
static int choose_dt(mz_sim *sim, sph_state *st)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    float v2, a2;
    if (sph_speed_accel_max(&st->step_size, sim, st->k_max, sim->vel, st->a2, begin, end,
                            STAGE_STEP_SIZE, &v2, &a2) != 0)
        return -1;
    /* Every rank takes the same step: the maxima over all of them (exact). */
    float most[2] = {v2, a2};
    dist_max_floats(most, 2);
    v2 = most[0];
    a2 = most[1];
    double h = st->P.h, cfl = scene_cfl(sim->scene);
    double dt = cfl * h / fmax(st->P.c0, sqrt(v2));
    if (a2 > 0)
        dt = fmin(dt, cfl * sqrt(h / sqrt(a2)));
    /* A non-finite speed, or a step a million times below the CFL step of c0, is a blow-up:
     * stop with the frames so far rather than run on with NaNs or steps of zero. */
    double cfl_dt = cfl * h / st->P.c0;
    if (!isfinite(v2) || !isfinite(a2) || !(dt >= 1e-6 * cfl_dt)) {
        mz_error("the simulation blew up at t = %.6g s (step %ld): %s. Likely causes: a step "
                 "too long for the speed of sound (more simulation.substeps, or "
                 "simulation.adaptive), too little artificial_viscosity, or particles started "
                 "on top of each other or of a wall",
                 sim->time, sim->step,
                 !isfinite(v2) || !isfinite(a2) ? "velocities or accelerations are no longer "
                                                   "finite"
                                                 : "the stable step fell below a millionth of "
                                                   "the CFL step (runaway accelerations)");
        return -1;
    }
    st->next_dt = dt;
    st->v2 = v2;
    st->a2_max = a2;
    return 0;
}

/* A frame that needs ten times the steps the speed of sound asks for (and at least a
 * thousand) has a collapsed step: say which criterion holds it down (and again at ten times
 * that, ...). The run goes on. */
static void warn_collapsed(const mz_sim *sim, sph_state *st, double frame_dt)
{
    double cfl = scene_cfl(sim->scene), c0_steps = ceil(frame_dt * st->P.c0 / (cfl * st->P.h));
    if (st->warn_steps == 0)
        st->warn_steps = 10 * (long)fmax(c0_steps, 100);
    if (sim->frame_steps != st->warn_steps)
        return;
    double v = sqrt(st->v2), a = sqrt(st->a2_max), h = st->P.h;
    bool force = a > 0 && sqrt(h / a) < h / fmax(st->P.c0, v);
    char why[256];
    if (force)
        snprintf(why, sizeof why, "the force criterion dt = cfl·sqrt(h/|a|max) with |a|max = "
                                  "%.3g m/s² (runaway accelerations: particles pressed together, "
                                  "walls too stiff for the step)", a);
    else
        snprintf(why, sizeof why, "the speed criterion dt = cfl·h/|v|max with |v|max = %.3g m/s, "
                                  "%.3g times the speed of sound (the flow outruns the scene's "
                                  "speed of sound: raise speed_of_sound)", v, v / st->P.c0);
    mz_warn("the time step collapsed: %ld steps so far in the frame that ends at t = %.6g s, "
            "%.0f times the %.0f the speed of sound needs; the step is %.3g s, limited by %s. "
            "The run goes on; SIGTERM stops it with a checkpoint",
            sim->frame_steps, sim->time - sim->frame_time + frame_dt,
            (double)sim->frame_steps / c0_steps, c0_steps, st->next_dt, why);
    st->warn_steps *= 10;
}

static int advance_frame(mz_sim *sim, sph_state *st, double frame_dt)
{
    if (!st->adaptive) {
        int rc = sim_fixed_steps(sim, frame_dt);
        return rc != 0 ? rc : choose_dt(sim, st); /* once a frame: the blow-up check */
    }
    /* Steps of the chosen size; the last one of the frame ends on the frame exactly, and one
     * that would leave a sliver under a quarter step takes half of what is left instead. The
     * time into the frame is sim->frame_time, so that a frame stopped between two steps goes
     * on from there. */
    while (sim_frame_left(sim, frame_dt)) {
        double dt = sim_frame_step(sim, frame_dt, st->next_dt);
        if (sph_step(sim, st, dt) != 0 || choose_dt(sim, st) != 0)
            return -1;
        sim_count_step(sim, dt);
        warn_collapsed(sim, st, frame_dt);
        if (sim_frame_left(sim, frame_dt) && sim_stop_here(sim))
            return 1;
    }
    return 0;
}

/* A frame, then (distributed) new slabs when a rank owns more than 10% above the mean. */
/* Once a frame: lists that ran short in a step (its forces walked the grid for the particles
 * they could not hold) are made longer for the next, and the mark cleared. */
static int grow_lists(mz_sim *sim, sph_state *st)
{
    if (!st->listed)
        return 0;
    return sph_lists_after_build(&st->lists, sim) < 0 ||
                   sph_lists_before_build(&st->lists, sim) != 0
               ? -1
               : 0;
}

static int sph_advance(mz_sim *sim, double frame_dt)
{
    sph_state *st = sim->state;
    int rc = advance_frame(sim, st, frame_dt);
    if (rc == 0 && grow_lists(sim, st) != 0)
        return -1;
    if (rc == 0 && st->slabs_made)
        slabs_rebalance(&st->slabs);
    return rc;
}

static void sph_release(mz_sim *sim)
{
    sph_state *st = sim->state;
    if (!st)
        return;
    if (st->slabs_made) /* before the grid: its pinned buffers go through the grid's queue */
        slabs_release(&st->slabs);
    sim->slabs = NULL;
    if (st->grid_made)
        grid_release(&st->grid);
    sph_loads_release(&st->loads);
    boundary_release(&st->bound);
    cl_kernel ks[] = {st->k_density, st->k_forces, st->k_collapsed,
                      st->k_max,     st->k_walk,   st->k_listed};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {st->vel_out, st->rho,     st->rho_next, st->p,     st->rho_prev, st->drho,
                   st->drho_prev, st->a2,      st->kgc};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (st->program)
        clReleaseProgram(st->program);
    if (st->split_program)
        clReleaseProgram(st->split_program);
    sph_step_size_release(&st->step_size);
    if (st->listed)
        sph_lists_release(&st->lists);
    free(st);
    sim->state = NULL;
}

/* What carries from step to step: the densities (continuity: integrated; collapsed: last
 * step's and their rate), the pressure, the step-size controller and the density lag. Every
 * per-particle buffer here is in the grid's device order, as pos and vel are. */
static size_t sph_state_parts(mz_sim *sim, mz_state_part *parts, size_t max)
{
    sph_state *st = sim->state;
    const mz_state_part all[] = {
        {"sph_density", &st->rho, NULL, 0, 4},
        {"sph_pressure", &st->p, NULL, 0, 4},
        {"sph_last_density", &st->rho_prev, NULL, 0, 4},
        {"sph_density_rate", &st->drho, NULL, 0, 4},
        {"sph_last_density_rate", &st->drho_prev, NULL, 0, 4},
        {"sph_lag", NULL, &st->lag, sizeof st->lag, 0},
        {"sph_next_dt", NULL, &st->next_dt, sizeof st->next_dt, 0},
    };
    return sim_state_existing(all, sizeof all / sizeof *all, parts, max);
}

/* The most sph_init and the steps hold (tests/solvers/test_memory.c holds it to within 2% of
 * what a run holds): new velocity, density, pressure, |a|², the gradient correction (or its
 * stand-in); collapsed SPH's last density and the rates; continuity's new density; the grid
 * (its reorder scratch borrowed in one process, a rank's own per moved buffer); the walls; the
 * forces on solids; the step size's per-group maxima (a GPU's 512). Not the neighbour lists,
 * which a run keeps only where there is room beyond this. */
static size_t sph_device_bytes(const mz_scene *s, size_t n, size_t *held_after)
{
    sph_params P = sph_params_for(s);
    bool collapsed = scene_solver(s) == MZ_SOLVER_COLLAPSED_SPH, slabs = dist_active();
    size_t per = 16 + 4 + 4 + 4 + (P.kgc ? kgc_bytes(s) : 0), fixed = P.kgc ? 0 : kgc_bytes(s);
    /* position, velocity, inverse mass, id, body, then what the solver moves with them */
    size_t elems[10] = {16, 16, 4, 4, 4};
    int n_reg = 5;
    if (collapsed) {
        per += 3 * 4;
        elems[n_reg++] = 4;
        elems[n_reg++] = 4;
    }
    if (P.continuity) {
        per += 4;
        elems[n_reg++] = 4;
    }
    if (slabs && s->n_probes > 0) { /* the pressures, and the densities unless they travel */
        elems[n_reg++] = 4;
        if (!collapsed && !P.continuity)
            elems[n_reg++] = 4;
    }
    size_t cells = grid_cells_in(n, P.h, s->sim.dimensions, s->domain.min, s->domain.max,
                                 slabs ? MZ_GRID_DENSE : MZ_GRID_AUTO);
    size_t grid = grid_device_bytes(n, cells, elems, n_reg, slabs,
                                    slabs ? 0
                                          : MZ_GRID_LENT4 | MZ_GRID_LENT16 | MZ_GRID_LENT_SORT);
    size_t walls_sorting, walls = boundary_device_bytes(s, n, P.h, true, &walls_sorting);
    size_t held = n * per + fixed + grid + walls + sph_loads_bytes(s, n) + sph_step_size_bytes();
    *held_after = held;
    /* The walls are sorted before anything else of the solver's is made (sph_init): with many
     * more wall particles than fluid ones, that is when it holds most. */
    return held > walls_sorting ? held : walls_sorting;
}

static void sph_slab_geometry(const mz_scene *s, double *h, int *halo)
{
    *h = sph_params_for(s).h; /* the grid's cell, as sph_init makes it */
    /* WCSPH's forces read densities of the layer next to the owned ones, which read one layer
     * further; collapsed SPH's one pass reads one layer. */
    *halo = 1;
}

int sph_list_stats(const mz_sim *sim, unsigned *cap, unsigned *windows, long *grown)
{
    const sph_state *st = sim->state;
    if (!st->listed)
        return -1;
    *cap = st->lists.cap;
    *windows = st->lists.windows;
    *grown = st->lists.grown;
    return 0;
}

int sph_set_list_cap(mz_sim *sim, unsigned cap)
{
    sph_state *st = sim->state;
    return st->listed ? sph_lists_resize(&st->lists, sim, cap, 1) : -1;
}

const mz_solver mz_solver_sph = {
    .name = "SPH",
    .stages = sph_stages,
    .device_bytes = sph_device_bytes,
    .init = sph_init,
    .substep = sph_substep,
    .advance = sph_advance,
    .release = sph_release,
    .state = sph_state_parts,
    .slab_geometry = sph_slab_geometry,
    .grid_now = sph_grid_now,
};
