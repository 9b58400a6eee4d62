/* What slabs.c lends the exchange (slabs_exchange.c): not for the solvers, which use slabs.h. */
#ifndef MZ_SLABS_INTERNAL_H
#define MZ_SLABS_INTERNAL_H
#include "dist/slabs.h"

/* out[t] = the first index of ascending keys[0..n) at or above targets[t], t < m (waits for
 * the device). 0, or -1 after reporting. */
int slabs_query_bounds(mz_slabs *s, cl_mem keys, size_t n, const cl_uint *targets, size_t m,
                       cl_uint *out);
/* Room for need particles and a quarter more (the solver's buffers, then the exchange's sort
 * buffers, keeping their contents). 0, or -1. */
int slabs_grow_room(mz_slabs *s, size_t need);
/* This rank's window, after a repartition the new one, into the grid's description. */
void slabs_set_window(mz_slabs *s);

#endif
