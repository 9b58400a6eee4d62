/* Inside solvers/flip/: simulation.pressure_solver "mgpcg", conjugate gradients (flip_cg.c)
 * preconditioned by a geometric multigrid V-cycle (flip_multigrid.c) over FLIP's pressure
 * system. Kernels: kernels/flip/flip_cg.cl, kernels/flip/flip_multigrid.cl. */
#ifndef MZ_FLIP_MULTIGRID_H
#define MZ_FLIP_MULTIGRID_H
#include "solvers/flip/flip_state.h"

#define MG_MAX_LEVELS 16
/* Red-black sweeps before and after the coarse correction on each level; the coarsest level's
 * sweeps each way (one launch: cheap). */
#define MG_SMOOTH 2 /* at least 1: the last post-smoothing sweep sums CG's r·z */
#define MG_COARSEST_SWEEPS 16
/* The level above the coarsest runs its part of the cycle in the coarsest solve's one
 * work-group (mg_tail: one launch instead of 11) when it has at most this many cells: its
 * work is then less than the launches' cost (a few thousand cells, a fraction of them fluid). */
#define MG_TAIL_CELLS 4096

/* Whether a level of these cells gets a coarser one: while it has more than 256 cells or an
 * axis of more than 16. Tiny levels cost a launch per kernel and do next to no work (PoCL's
 * launches dominate below ~10^4 cells); 16 sweeps each way still nearly solve 256 cells. */
static inline bool mg_coarsen_more(const int cells[3], int dim)
{
    long total = 1;
    bool wide = false;
    for (int a = 0; a < dim; a++) {
        total *= cells[a];
        wide |= cells[a] > 16;
    }
    return total > 256 || wide;
}

typedef struct flip_mg {
    int levels;
    flip_grid g[MG_MAX_LEVELS]; /* g[0]: the pressure grid */
    size_t nodes[MG_MAX_LEVELS];
    /* Levels ≥ 1: cell types, right-hand side, correction, residual (level 0 uses the pressure
     * grid's types, the caller's vectors and q for its residual). */
    cl_mem type[MG_MAX_LEVELS], b[MG_MAX_LEVELS], z[MG_MAX_LEVELS], res[MG_MAX_LEVELS];
    /* Each level's fluid cells by colour (level 0: the pressure grid's list) and their counts */
    cl_mem list[MG_MAX_LEVELS];
    cl_uint n_list[MG_MAX_LEVELS][2];
    cl_program mg_program, cg_program;
    cl_kernel k_coarsen, k_smooth, k_coarsest, k_residual, k_residual0, k_restrict, k_prolong,
        k_tail;
    /* CG: residual, preconditioned residual, direction and the next one (cg_apply reads one,
     * writes the other), A·direction (float2 per node); the groups' partial sums; r·z, alpha,
     * beta (float2 each) */
    cl_mem r, z0, d, d_next, q, part, scal;
    /* r·z's partial sums, one a work-group of the cycle's last two half-sweeps on level 0
     * (cg_smooth_dot), and how many this cycle wrote */
    cl_mem part_dot;
    cl_uint n_parts;
    cl_kernel k_apply, k_smooth_dot, k_scalars, k_update, k_start;
} flip_mg;

/* The levels, their kernels and buffers (st->mg); 0, or -1 after reporting. */
int flip_mg_init(mz_sim *sim, flip_state *st);
/* Device memory flip_mg_init makes for the pressure grid `top` (its coarse levels and CG's
 * vectors), with `groups` partial sums, in bytes. */
size_t flip_mg_bytes(const flip_grid *top, int dim, size_t groups);
/* How many levels the multigrid of the pressure grid `top` has. */
int flip_mg_level_count(const flip_grid *top, int dim);
/* r·z's partial sums for a grid of `nodes` and work-groups of `local` items. */
size_t flip_cg_dot_parts(size_t nodes, size_t local);
/* The coarse levels' cell types from this step's and their fluid cells' lists (after level
 * 0's are listed; reads back once a level). */
bool flip_mg_levels(mz_sim *sim, flip_state *st);
/* z = M⁻¹ b, one V-cycle over the fluid cells (b and z: float2 per node of the pressure grid),
 * from its start: z = 0 and level 0's first half-sweep (cg_start, flip_cg.c) ... */
bool flip_mg_vcycle(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z);
/* ... or the rest of it after cg_start and `halves` of level 0's pre-smoothing half-sweeps
 * (1 or 2: the second may be queued early, flip_mg_half); with `dot`, b·z's partial sums
 * into part_dot, n_parts of them (cg_smooth_dot). */
bool flip_mg_vcycle_rest(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, int halves, bool dot);
/* Level 0's pre-smoothing half-sweep number `half` (0, 1, ...) of the cycle of b and z. */
bool flip_mg_half(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, int half);
/* z = 0 and level 0's first half-sweep of b from it (cg_start), after x += alpha d,
 * r −= alpha q with `update` (then b is CG's r). */
bool flip_cg_start(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, bool update);
/* The CG's kernels and buffers (in st->mg); 0, or -1 after reporting. */
int flip_cg_init(mz_sim *sim, flip_state *st);
/* Solves from st->pressure until the largest residual is at most `goal` (checked as
 * flip_pressure_residual does) or after max_it iterations; the iterations, -1 on failure;
 * *r: the largest residual last measured, *fluid: the fluid cells. */
int flip_mgpcg(mz_sim *sim, flip_state *st, double goal, int max_it, float *r, long *fluid);
void flip_mg_release(flip_mg *mg);

#endif
