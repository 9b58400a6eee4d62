/* The forces on walls and colliders (scene_load_ref) in the SPH solvers: the fluid's force on
 * each boundary particle of a measured solid, gathered from the fluid particles near it by the
 * pairs the forces pass used (kernels/sph/sph.cl, sph_wall_loads), into sim->loads, whose sums
 * observe.c takes. Only in the steps sim_loads_due marks. */
#ifndef MZ_SPH_LOADS_H
#define MZ_SPH_LOADS_H
#include "solvers/sim.h"
#include "solvers/boundary.h"
#include "solvers/sph/sph.h"

typedef struct sph_loads {
    bool on;        /* the scene measures forces on solids */
    cl_int rest_on; /* walls other than no-slip: the forces pass keeps what rest holds */
    cl_kernel k;    /* sph_wall_loads */
    cl_mem elem;    /* per element: its boundary particle, in the builder's order */
    cl_mem rest;    /* per fluid particle (rest_on), or a stand-in */
} sph_loads;

/* After the boundary's grid is built: the elements of every measured solid (its boundary
 * particles, solid by solid in scene_load_ref order) into sim->loads, the rest buffer for cap
 * fluid particles, and the gather kernel `kernel` of program (sph_wall_loads, or DFSPH's).
 * Nothing when the scene measures no forces. 0, or -1 after reporting. */
int sph_loads_init(sph_loads *l, mz_sim *sim, boundary_set *b, cl_program program,
                   const char *kernel);
/* The gather (after the step's forces pass; see sph_wall_loads for the arguments). */
bool sph_loads_gather(sph_loads *l, mz_sim *sim, const mz_grid *fluid, const boundary_set *b,
                      const sph_params *P, mz_frame_arg frame, cl_int collapsed, cl_float lag,
                      cl_mem rho, cl_mem drho, cl_mem p, cl_mem kgc);
/* Device memory the scene's loads take beyond the boundary: n fluid particles. */
size_t sph_loads_bytes(const mz_scene *s, size_t n);
void sph_loads_release(sph_loads *l);

#endif
