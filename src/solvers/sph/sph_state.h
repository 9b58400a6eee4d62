/* Inside solvers/sph/: WCSPH's and collapsed SPH's state, shared by the step (sph.c) and the
 * passes it launches (sph_passes.c). Not for use outside the folder: the rest of mizu sees
 * sph.h. */
#ifndef MZ_SPH_STATE_H
#define MZ_SPH_STATE_H
#include "device/grid.h"
#include "dist/slabs.h"
#include "solvers/boundary.h"
#include "solvers/sim.h"
#include "solvers/sph/loads.h"
#include "solvers/sph/neighbour_list.h"
#include "solvers/sph/sph.h"
#include "solvers/sph/step_size.h"

#include <stdbool.h>

enum sph_stage { STAGE_GRID, STAGE_DENSITY, STAGE_FORCES, STAGE_STEP_SIZE };

typedef struct sph_state {
    bool collapsed, adaptive;
    sph_params P;
    mz_walls_arg walls;
    mz_frame_arg frame; /* the domain's frame at this step's start */
    cl_int penalty;
    cl_program program;
    cl_program split_program; /* sph_density_split.cl, where `split` */
    bool split; /* the continuity density as two kernels (sph_split_density), chosen at init */
    cl_kernel k_density, k_forces, k_collapsed, k_max;
    cl_kernel k_walk, k_listed; /* the continuity density as two kernels (sph_run_density) */
    mz_grid grid;
    bool grid_made;
    boundary_set bound; /* wall and collider particles */
    sph_loads loads;    /* forces on walls and colliders, when the scene measures them */
    mz_slabs slabs; /* a distributed run's (sim->slabs) */
    bool slabs_made;
    cl_mem vel_out, rho, p, a2;
    cl_mem rho_next; /* WCSPH by the continuity equation: the new densities, then swapped */
    cl_mem rho_prev, drho, drho_prev; /* collapsed SPH: last step's density and its rate */
    cl_mem kgc; /* WCSPH: each particle's gradient correction (P.kgc), else a stand-in */
    double lag; /* seconds since the densities were last updated (the last step's dt) */
    sph_step_size step_size; /* the adaptive step's |v|max and |a|max */
    sph_lists lists;     /* WCSPH's neighbour lists, when `listed` */
    bool listed;
    cl_int listed_i;     /* listed, as the kernels take it */
    double next_dt;
    float v2, a2_max;    /* the largest |v|² and |a|² choose_dt saw last */
    long warn_steps;  /* steps in one frame that earn a warning (adaptive; 0: not yet set) */
} sph_state;

/* The kernels' list arguments (kernels/sph/sph.cl, MZ_SPH_LISTS_OUT/IN); without lists, any
 * buffer stands in for them (the kernels do not touch them). */
#define LIST_ARG(st, m) A(*((st)->listed ? &(st)->lists.m : &(st)->a2))
#define LIST_ARGS_IN(st)                                                                       \
    A((st)->listed_i), A((st)->lists.stride), A((st)->lists.cap), A((st)->lists.windows),      \
        A((st)->lists.fluid_stride), LIST_ARG(st, fluid), LIST_ARG(st, fluid_count),           \
        LIST_ARG(st, wall), LIST_ARG(st, wall_count)
#define LIST_ARGS_OUT(st) LIST_ARGS_IN(st), LIST_ARG(st, overflow)

static inline void swap_mem(cl_mem *a, cl_mem *b)
{
    cl_mem t = *a;
    *a = *b;
    *b = t;
}

/* A particle's gradient correction (mz_kgc): a symmetric 2×2 in a float4, a 3×3 in a float8. */
static inline size_t kgc_bytes(const mz_scene *s) { return s->sim.dimensions == 2 ? 16 : 32; }

bool sph_split_density(const mz_sim *sim, const sph_state *st);
/* Density and pressure into *rho (*scratch: the continuity density's new values, swapped in). */
bool sph_run_density(mz_sim *sim, sph_state *st, cl_mem *rho, cl_mem *scratch, double lag);
/* The forces pass's buffer for the wall forces' rest, or a stand-in. */
cl_mem *sph_rest_arg(sph_state *st);
bool sph_density_and_forces(mz_sim *sim, sph_state *st, cl_float dt, cl_int rest_out);

#endif
