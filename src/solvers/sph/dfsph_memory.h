/* Inside solvers/sph/: DFSPH's device memory (dfsph_memory.c), for mz_solver_dfsph's fit check. */
#ifndef MZ_DFSPH_MEMORY_H
#define MZ_DFSPH_MEMORY_H
#include "solvers/sim.h"

/* Room for the error sums' partials of n particles: one a work-group of at least eight, or on
 * CPUs (dfsph_error's lanes) one for each eight particles. */
size_t dfsph_error_partials(size_t n);
/* mz_solver.device_bytes: the most DFSPH holds for n particles, and *held once init is done. */
size_t dfsph_device_bytes(const mz_scene *s, size_t n, size_t *held);
/* mz_solver.largest_buffer: its neighbour lists, one buffer each. */
size_t dfsph_largest_buffer(const mz_scene *s, size_t n, const char **what);

#endif
