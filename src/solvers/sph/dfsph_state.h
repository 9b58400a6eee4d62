/* Inside solvers/sph/: DFSPH's state, shared by its step (dfsph.c) and its two solves
 * (dfsph_solve.c). Not for use outside the folder: the rest of mizu sees dfsph.h. */
#ifndef MZ_DFSPH_STATE_H
#define MZ_DFSPH_STATE_H
#include "device/grid.h"
#include "solvers/boundary.h"
#include "solvers/sim.h"
#include "solvers/sph/dfsph.h"
#include "solvers/sph/dfsph_dist.h"
#include "solvers/sph/loads.h"
#include "solvers/sph/neighbour_list.h"
#include "solvers/sph/sph.h"
#include "solvers/sph/step_size.h"

#include <stdbool.h>

enum dfsph_stage { STAGE_GRID, STAGE_DENSITY, STAGE_DIVERGENCE, STAGE_FORCES, STAGE_PRESSURE,
                   STAGE_ADVECT };

typedef struct dfsph_state {
    sph_params P;
    mz_walls_arg walls;
    mz_frame_arg frame; /* the domain's frame at this step's start */
    cl_int penalty, min_neighbours;
    cl_program program;
    /* (k_forces_error: the forces pass and a divergence error pass in one, dfsph_solve.c) */
    cl_kernel k_density, k_forces_error, k_predict, k_error, k_sum, k_apply, k_advect, k_max;
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
    bool warm_in_density; /* the density pass made the divergence solve's warm error pass */
    cl_mem Kprev; /* the density solve's κ = K/dt² of the step before last (its warm start) */
    cl_mem p_sum; /* Σ p dt over the frame's steps so far (dfsph_advect) */
    cl_mem partial, total; /* the error sums (two 64-bit integers a group, dfsph.cl) */
    sph_lists lists; /* the step's neighbours, written by the density pass */
    sph_step_size step_size; /* |v|max and |a|max */
    double dt_last; /* the last step's dt (the first step's guess before any) */
    double dt_before; /* the dt of the step before (of Kprev's κ) */
    double dt_viscous; /* the explicit viscosity's stable step (infinite without) */
    double dt_start;   /* the first step's bound (dfsph.c, start_step, start_ramp) */
    double dt_solves;  /* the step the solves carry (solves_control; infinite at first) */
    mz_dfsph_stats stats; /* over the run, for the summary and tests */
    long capped_warned_step;
    dfsph_dist dist; /* under mpirun */
} dfsph_state;

/* A solve's most iterations; past them it stops and says so (dfsph.c, warn_capped). */
enum { MAX_ITERATIONS = 100 };

static inline boundary_args dfsph_bound_of(const dfsph_state *st)
{
    return boundary_of(&st->bound, st->grid.desc);
}

/* One of the two solves (density 1: the constant-density solve, 0: the divergence-free one):
 * its iterations, or -1 on failure; the average error it ended with into *left. */
int dfsph_solve(mz_sim *sim, dfsph_state *st, int density, double dt, double warm, double tol,
                int min_iterations, double *left);

#endif
