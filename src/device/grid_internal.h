/* What grid.c shares with grid_slabs.c, the distributed runs' kernels of the grid: not for
 * the grid's users. */
#ifndef MZ_GRID_INTERNAL_H
#define MZ_GRID_INTERNAL_H
#include "device/grid.h"

#include <stdbool.h>

/* An element-wise kernel over n items, the device's usual work-group size, timed with the
 * build when the queue profiles; nothing for n = 0 (OpenCL rejects an empty launch). */
bool grid_launch_n(mz_grid *g, cl_kernel k, size_t n, const char *name);

#endif
