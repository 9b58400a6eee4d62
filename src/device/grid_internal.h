/* What grid.c shares with grid_slabs.c (the distributed runs' kernels of the grid) and
 * grid_sizes.c (its sizes and the host's reading of its tables): not for the grid's users. */
#ifndef MZ_GRID_INTERNAL_H
#define MZ_GRID_INTERNAL_H
#include "device/grid.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sort_geometry {
    size_t gs, items; /* work-group size, consecutive elements per work-item */
    int bits;         /* key bits per pass */
} sort_geometry;

/* PoCL on CPUs runs each work-group as a loop on one core, so one work-item per group with a
 * long run is the classic sequential counting sort per block: no local scan, no barriers, and
 * 8-bit digits (256 counters stay in L1) need half the passes of 4-bit ones. tests/bench_grid,
 * 10^6 particles, 18 key bits, 2-core EPYC, PoCL 3.1, rebuild ms: 1×4096×8: 13–19;
 * 1×2048..65536×8: 14–15; 1×4096×4: 24; 16×256×4: 25; 32×64×8: 33; 256×8×4: 48. */
static const sort_geometry cpu_geometry = {1, 4096, 8};
/* GPUs: 256-wide groups, 8 elements per work-item, 4-bit digits; barely tuned. H100, NVIDIA
 * OpenCL, 10^7 particles (21 key bits), rebuild ms: 256×8×4: 3.9; 512×8×4: 3.6 (512-wide groups
 * are not portable); 256×4×4 and 256×16×4: 5.1; 64×16×6: 10.7; 32×32×8: 40 (radix_scan, one
 * work-group, then dominates). Since then (H200, the same bench): the scatter shuffles each
 * group's pairs in local memory and writes digit runs contiguously, and the histograms' scan is
 * spread over groups: 3.51 → 2.71 ms (scatter 1.52 → 1.11, scan 0.51 → 0.10 ms a build). */
static const sort_geometry gpu_geometry = {256, 8, 4};

/* Dense grids: at most 2^24 cells per axis (the kernels clamp cell coordinates as floats, exact
 * up to 2^24) and 2^32 in all (32-bit keys). */
#define MAX_AXIS_CELLS 16777216.0
#define MAX_DENSE_CELLS 4294967296.0

/* Hashed tables: a power of two at least twice the particle count, and at least this. */
#define MIN_TABLE 1024u

/* A launch of `global` work-items in groups of `local` (0: the driver's choice), timed with the
 * build when the queue profiles. */
bool grid_launch(mz_grid *g, cl_kernel k, size_t global, size_t local, const char *name);
/* A device copy of `bytes` from src to dst, timed likewise. */
bool grid_copy(mz_grid *g, cl_mem src, cl_mem dst, size_t bytes, const char *name);

/* Radix passes for keys of `bits` bits. */
int grid_radix_passes(int bits, int radix_bits);
/* Stable LSD radix passes over n (key, value) pairs by the low `bits` bits of the keys,
 * ping-ponging between (keys, vals) and (keys2, vals2): an odd pass count ends in the second
 * pair. */
bool grid_radix_sort(mz_grid *g, cl_mem keys, cl_mem vals, cl_mem keys2, cl_mem vals2,
                     size_t n, int bits);
/* The sort's copies of keys and values (made on first use where nobody lends them). */
bool grid_sort_copies(mz_grid *g, cl_mem *keys2, cl_mem *vals2);
/* The handle of the reorder scratch that registered buffers of elem bytes share. */
cl_mem *grid_spare_of(mz_grid *g, size_t elem);

/* The resort (grid_resort.c): whether this build takes it, and the sort it does, leaving the
 * sorted keys in g->keys and their slots in g->vals as the full sort would. */
bool grid_resort_chosen(mz_grid *g, cl_mem key_source);
bool grid_resort(mz_grid *g, cl_mem key_source);
/* MIZU_GRID_RESORT's mode (mz_grid.resort_mode; 1 unset); false after reporting a bad value. */
bool grid_resort_mode(int *mode);

/* An element-wise kernel over n items, the device's usual work-group size, timed with the
 * build when the queue profiles; nothing for n = 0 (OpenCL rejects an empty launch). */
bool grid_launch_n(mz_grid *g, cl_kernel k, size_t n, const char *name);

/* With profiling, where the next launch's event goes (kept by grid_keep_event once enqueued),
 * for grid_collect_profile; else NULL. */
cl_event *grid_next_event(mz_grid *g);
void grid_keep_event(mz_grid *g, cl_event *ev, const char *name);
/* The kept events released (a build's, if nobody collected them). */
void grid_release_events(mz_grid *g);

/* The non-empty cells with a key up to and including key, from the words of the cell tables
 * (mz_cells_through_ in grid.clh, on the host). */
cl_uint grid_cells_through(const cl_uint *words, cl_uint key);

#endif
