/* Inside solvers/flip/: FLIP's state, shared by the step (flip.c) and the pressure projection
 * (flip_pressure.c). Not for use outside the folder: the rest of mizu sees flip.h. */
#ifndef MZ_FLIP_STATE_H
#define MZ_FLIP_STATE_H
#include "device/grid.h"
#include "solvers/flip/flip.h"

#include <stdbool.h>

enum flip_stage { STAGE_GRID, STAGE_P2G, STAGE_PROJECTION, STAGE_G2P };

typedef struct flip_state {
    flip_grid g;
    size_t nodes;
    cl_uint nodes_u;
    mz_grid grid;
    bool grid_made;
    /* flip.cl; flip_pressure.cl; flip_solids.cl (when needed) */
    cl_program program, pressure_program, solids_program;
    cl_kernel k_p2g, k_prepare, k_setup, k_jacobi, k_rbgs, k_residual, k_gradient, k_extrapolate,
        k_g2p, k_loads, k_fluid_count, k_fluid_list;
    /* The fluid cells by colour (colour 0's, then colour 1's), rebuilt each step: what the
     * sweeps and the residual visit. `listers` work-items (lister_groups: work-groups of
     * `local`) each count and list a chunk of nodes; the host turns their counts into
     * offsets. */
    cl_mem fluid_counts, fluid_offsets, fluid_list;
    cl_uint *lister_counts, n_fluid[2];
    size_t listers, lister_slices; /* slices: grids listed at once (flip_list_levels) */
    bool lister_groups;
    /* APIC: the particles' velocity gradients, ∇u, ∇v, ∇w (float4 each, per particle; ∇w only
     * in 3D: the 2D kernels never touch it), and whether the transfer is APIC's. */
    bool apic;
    cl_mem apic_c[3];
    cl_mem face_vel, face_old, face_adv, valid, valid_tmp;
    /* Forces on solids (when the scene measures them): the solid faces' stopped velocities,
     * each cell's collider, each load's owner and torque point; loads_now: due this step. */
    cl_mem face_star, owner, load_owner, load_about;
    cl_int loads_now;
    /* Moving colliders: their table, each slot's collider; the static distances and owners,
     * and the solid cells' velocities (16 bytes a node, a stand-in when none move). */
    cl_int moving;
    cl_kernel k_solids;
    cl_mem solids, sdf_static, owner_static, solid_vel;
    int mover_collider[MZ_MAX_MOVING];
    int n_movers;
    cl_mem type, density, pressure, pressure_tmp, rhs, diag, sdf, partial;
    cl_mem part_density, part_pressure; /* per particle, for output */
    cl_int colliders;
    float inv_n0; /* 1 / particles per cell in the rest lattice */
    size_t local, groups;
    float *partial_host;
    flip_stats stats;
    struct flip_mg *mg; /* pressure_solver "mgpcg": flip_multigrid.h */
} flip_state;

static inline cl_mem flip_buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, what);
}

static inline void swap_mem(cl_mem *a, cl_mem *b)
{
    cl_mem t = *a;
    *a = *b;
    *b = t;
}

/* The projection's kernels (kernels/flip/flip_pressure.cl) and buffers; 0, or -1 after
 * reporting. */
int flip_pressure_init(mz_sim *sim, flip_state *st);
/* Device memory flip_pressure_init makes for the pressure grid g of `nodes` nodes, in bytes:
 * with a GPU's partial sums and listers, more than a CPU's. */
size_t flip_pressure_bytes(const mz_scene *s, const flip_grid *g, size_t nodes);
/* The fluid cells of each colour of a grid (level 0's, or a multigrid level's) into `list`
 * (colour 0's, then colour 1's, each in node order) and their counts; reads back. The sweeps'
 * sums over such a list are the same as over every node, so the results are too. */
bool flip_list_cells(mz_sim *sim, flip_state *st, const flip_grid *g, size_t nodes,
                     cl_mem type, cl_mem list, cl_uint n_fluid[2]);
/* The same for several grids (multigrid levels, at most MG_MAX_LEVELS) with one read-back. */
typedef struct flip_level_cells {
    const flip_grid *g;
    size_t nodes;
    cl_mem type, list;
    cl_uint *n_fluid; /* [2] */
} flip_level_cells;
bool flip_list_levels(mz_sim *sim, flip_state *st, int levels, const flip_level_cells *cells);
/* The largest |residual| and |rhs| over the fluid cells, and how many there are (reads back). */
bool flip_pressure_residual(mz_sim *sim, flip_state *st, float *r, float *b, long *fluid);
/* The same in two halves: the kernel and a read-back that does not wait (its event) ...; */
bool flip_pressure_residual_begin(mz_sim *sim, flip_state *st, cl_event *read);
/* ... waiting for it (and releasing it), the values from the groups' partials. */
bool flip_pressure_residual_end(flip_state *st, cl_event read, float *r, float *b, long *fluid);

#endif
