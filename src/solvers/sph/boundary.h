/* SPH boundary particles: the domain's walls and the colliders as a static particle set with a
 * neighbour grid of its own, shared by the SPH solvers (sph.c, dfsph.c). */
#ifndef MZ_SPH_BOUNDARY_H
#define MZ_SPH_BOUNDARY_H
#include "device/grid.h"
#include "solvers/sim.h"

typedef struct sph_boundary {
    mz_grid grid;
    bool made; /* the scene has particle walls: grid, pos and mass exist */
    cl_mem pos, mass;
    cl_mem dummy; /* a stand-in for every buffer argument when there are none */
    cl_uint nb;
} sph_boundary;

/* What the kernels take: the boundary set, or a harmless stand-in (nb 0) when there is none. */
typedef struct sph_boundary_args {
    mz_grid_desc desc;
    cl_mem start, end, pos, mass;
    cl_int nb;
} sph_boundary_args;

/* The walls and colliders of the scene at the fluid's spacing, each particle of `mass`, on a
 * grid of cells h in the mode of the fluid's; only the stand-in when the scene's boundary is not
 * particles. 0, or -1 after reporting. */
int sph_boundary_init(sph_boundary *b, mz_sim *sim, float mass, double h, mz_grid_mode mode);
sph_boundary_args sph_boundary_of(const sph_boundary *b, mz_grid_desc fluid);
/* Device memory of the boundary particles of the scene, in bytes. */
size_t sph_boundary_bytes(const mz_scene *s);
void sph_boundary_release(sph_boundary *b);

#endif
