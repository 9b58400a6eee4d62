/* The forces on walls and colliders in the position-based solver (scene_load_ref): in a substep
 * sim_loads_due marks, every particle keeps the corrections the domain walls (penalty push,
 * PBF's wall density term, the clamp) and the colliders (projections, PBF's collider density
 * term) made to it, and pbd_load_sums adds −m Δ / dt² per solid, with moments
 * (kernels/pbd/pbd_constraints.cl), into sim->loads.sums. */
#ifndef MZ_PBD_LOADS_H
#define MZ_PBD_LOADS_H
#include "solvers/sim.h"

typedef struct pbd_loads {
    bool on;
    cl_int keep; /* this substep's corrections are kept (the kernels' `loads` argument) */
    cl_kernel k; /* pbd_load_sums */
    cl_mem touch, wall_corr, owner, about;
    size_t n_loads;
} pbd_loads;

/* Buffers and the kernel (of the constraints' program); stand-ins when the scene measures no
 * forces. 0, or -1 after reporting. */
int pbd_loads_init(pbd_loads *l, mz_sim *sim, cl_program program);
/* Before a substep of dt: whether its forces are due (keep), and the accumulators cleared
 * (a distributed rank's touch slots after its exchange instead: pbd_loads_clear_touch). */
bool pbd_loads_begin(pbd_loads *l, mz_sim *sim, double dt);
/* The colliders' touch slots of the sim->n particles cleared, when the forces are kept. */
bool pbd_loads_clear_touch(pbd_loads *l, mz_sim *sim);
/* After the substep's iterations, when kept: the sums (a rank's: of its owned particles; rank
 * 0 adds the ranks', solvers/observe_dist.h). */
bool pbd_loads_sum(pbd_loads *l, mz_sim *sim, double dt);
/* Device memory for n particles. */
size_t pbd_loads_bytes(const mz_scene *s, size_t n);
void pbd_loads_release(pbd_loads *l);

#endif
