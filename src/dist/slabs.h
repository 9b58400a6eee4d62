/* The domain decomposition of a distributed run: slabs of neighbour-grid layers and the particle
 * exchange between them.
 *
 * Each rank owns the particles whose cell lies in its layers [lo, hi) along the slab axis (the
 * slowest-varying axis of the grid's dense keys: z in 3D, y in 2D) and holds copies of those in
 * `halo` layers on either side: its window. The window's particles are exactly a contiguous
 * stretch of the single-process run's sorted particle order, so a rank's grid build sorts them
 * into that order and every neighbour sum of an owned particle (and of the halo layers a pass
 * needs) is computed over the same particles in the same order as in one process: N ranks give
 * output bit-identical to one (docs/distributed.md says why slabs and not boxes).
 *
 * Each step, before the grid build, slabs_exchange sends every owned particle to each rank
 * whose window holds its new layer, as whole records (every buffer registered with the grid),
 * in its current order; each rank lays out what it receives by source rank, which is the
 * order one process would have had. Packing runs on the device (a stable sort of the owned
 * particles by layer, then contiguous ranges per destination); the host only copies ranges. */
#ifndef MZ_SLABS_H
#define MZ_SLABS_H
#include "device/grid.h"

#include <stdint.h>

#define MZ_SLABS_MAX_HALO 4

typedef struct mz_slabs {
    mz_grid *grid;
    int ranks, rank;
    int layers;           /* cells along the slab axis */
    cl_uint layer_cells;  /* dense cells per layer */
    int halo;             /* layers copied on either side */
    int key_bits;         /* bits of a layer number */
    int *lo, *hi;         /* each rank's owned layers [lo, hi) */
    /* After each build: slots of the layers [lo − k, hi + k) in the sorted window, k ≤ halo
     * (k = 0: the owned particles). */
    size_t ring_begin[MZ_SLABS_MAX_HALO + 1], ring_end[MZ_SLABS_MAX_HALO + 1];
    cl_mem keys, vals, targets, bounds; /* the exchange's sort and its range queries */
    unsigned char *send, *recv;
    size_t send_cap, recv_cap;
    /* Measured: seconds in exchanges (device packing, transfers, MPI), particles sent to other
     * ranks, exchanges, repartitions. */
    double exchange_s;
    uint64_t sent, exchanges, repartitions;
} mz_slabs;

/* From every particle of the run, in id order, in the grid's registered buffers (the same on
 * every rank; positions in pos): balanced slabs by particle count, each at least one layer;
 * the buffers keep this rank's window (grid count and description set). The grid must be
 * dense. 0, or -1 after reporting (more ranks than layers; a hashed grid). */
int slabs_create(mz_slabs *s, mz_grid *grid, int halo, cl_mem pos);
void slabs_release(mz_slabs *s);
/* Layers [wlo, whi) of rank r's window (owned ± halo, within the grid). */
void slabs_window(const mz_slabs *s, int r, int *wlo, int *whi);
/* After grid_build: ring_begin / ring_end from the sorted keys (waits for the device). */
int slabs_after_build(mz_slabs *s);
/* Send owned particles (ring 0, by the positions in pos) to the windows their layers are in
 * now; afterwards the grid's registered buffers hold this rank's new window, unsorted, and the
 * grid's count is its size. Collective. 0, or -1 after reporting. */
int slabs_exchange(mz_slabs *s, cl_mem pos);
/* At a frame boundary: new slabs when a rank owns more than 10% above the mean (the next
 * exchange moves the particles). Collective. Whether it repartitioned. */
bool slabs_rebalance(mz_slabs *s);

#endif
