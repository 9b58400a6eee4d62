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
 * particles by segment of the layer axis, then each destination's range gathered into one
 * buffer); the host copies that buffer and the received one, through pinned memory. */
#ifndef MZ_SLABS_H
#define MZ_SLABS_H
#include "build/build.h"
#include "device/grid.h"

#include <stdint.h>

#define MZ_SLABS_MAX_HALO 8

/* The slabs, planned on the host before any particle is built, so that each rank builds and
 * uploads only its share: the grid the solver will build (dense), each rank's owned layers from
 * a count of every particle's layer, and the room this rank's buffers start with. */
typedef struct mz_slab_plan {
    mz_grid_desc desc;
    int ranks, rank, layers, halo;
    int *lo, *hi;       /* each rank's owned layers [lo, hi) */
    size_t share;       /* particles this rank builds: its window and one layer either side */
    size_t cap;         /* the room its buffers start with */
} mz_slab_plan;

/* Plan the slabs of a scene whose solver's grid has cells of h and needs `halo` layers: counts
 * the particles the scene makes by layer (every rank alike, no particle kept). 0, or -1 after
 * reporting (more ranks than layers; a domain too big for a dense grid). */
int slabs_plan(mz_slab_plan *pl, const mz_scene *s, double h, int halo);
/* This rank's share of the particles (build_particles_where with the plan). */
void slabs_plan_build(const mz_slab_plan *pl, const mz_scene *s, mz_particles *p);
void slabs_plan_release(mz_slab_plan *pl);

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
    /* After each build, for each rank r: the slots [give[2r], give[2r + 1]) of this rank's
     * owned layers that r's window holds, and [take[2r], take[2r + 1]) of r's owned layers this
     * window holds (empty for r itself); the owned slots [inner_begin, inner_end) of the layers
     * no halo layer touches. */
    size_t *give, *take;
    size_t inner_begin, inner_end;
    cl_mem keys, vals, targets, bounds; /* the exchange's sort and its range queries */
    size_t keys_cap;
    /* Called when an exchange brings more particles than the grid has room for: give every
     * per-particle buffer room for cap (grid_reserve for the registered ones). 0, or -1. */
    int (*grow)(void *ctx, size_t cap);
    void *grow_ctx;
    /* The layer axis cut at every window's edges: each layer's segment (host and device). */
    cl_uint *segment_of_layer;
    cl_mem segments;
    /* The records to send, packed on the device, and the host's pinned copies of what goes
     * and comes (mz_cl_pinned: a holder, or NULL for plain memory). */
    cl_mem pack;
    size_t pack_cap;
    unsigned char *send, *recv;
    cl_mem send_pin, recv_pin;
    size_t send_cap, recv_cap;
    /* slabs_share's pinned buffers, and the event of its copy to the host. */
    unsigned char *share_out, *share_in;
    cl_mem share_out_pin, share_in_pin;
    size_t share_out_cap, share_in_cap;
    cl_event share_read;
    double share_s;  /* seconds in slabs_share (host side, MPI included) */
    /* Measured: seconds in exchanges (device packing, transfers, MPI), of them in MPI's
     * all-to-all of records (waiting for the other ranks included), particles sent to other
     * ranks, exchanges, repartitions, times the buffers grew. */
    double exchange_s, mpi_s;
    uint64_t sent, exchanges, repartitions, grows;
} mz_slabs;

/* From this rank's share of the particles (slabs_plan_build), in id order, in the grid's
 * registered buffers (positions in pos): the buffers keep this rank's window of the planned
 * slabs (grid count and description set). The grid must be the plan's. 0, or -1 after
 * reporting. */
int slabs_create(mz_slabs *s, mz_grid *grid, const mz_slab_plan *plan, cl_mem pos);
void slabs_release(mz_slabs *s);
/* Layers [wlo, whi) of rank r's window (owned ± halo, within the grid). */
void slabs_window(const mz_slabs *s, int r, int *wlo, int *whi);
/* After grid_build: ring_begin / ring_end from the sorted keys (waits for the device). */
int slabs_after_build(mz_slabs *s);
/* Send owned particles (ring 0, by the positions in pos) to the windows their layers are in
 * now; afterwards the grid's registered buffers hold this rank's new window, unsorted, and the
 * grid's count is its size. When the window outgrows the room, grow() first gives a quarter
 * more than it needs. Collective. 0, or -1 after reporting. */
int slabs_exchange(mz_slabs *s, cl_mem pos);
/* Values a pass computed on the owned particles that other windows hold as halo (the density
 * pass's densities and pressures, which the forces of the particles beside them read): each
 * rank sends the slots `give` of its buffers and writes what it receives into the slots `take`
 * — the same particles in the same order on both sides, since each window sorts a layer's
 * particles into the single process's order. _begin starts the copy to the host after the
 * passes enqueued so far, without waiting; _end waits for it, exchanges the values through MPI
 * and enqueues their writes. Between the two the device may go on with the inner particles.
 * n buffers of elem[i] bytes a particle (multiples of 4). Collective. 0, or -1 after reporting. */
int slabs_share_begin(mz_slabs *s, const cl_mem *bufs, const size_t *elem, int n);
int slabs_share_end(mz_slabs *s, const cl_mem *bufs, const size_t *elem, int n);
/* A begun share whose values turned out not to be needed: waits for its copy to the host and
 * sends nothing. Every rank must drop the same share (nothing collective happens). */
void slabs_share_drop(mz_slabs *s);
/* Room for need particles (grow, as an exchange does when it needs more). 0, or -1. */
int slabs_reserve(mz_slabs *s, size_t need);
/* After a resume wrote a stretch of n particles into the buffers: all of them are this rank's
 * owned ones, and the next exchange sends each to the windows of its layer. 0, or -1. */
int slabs_own_all(mz_slabs *s, size_t n);
/* At a frame boundary: new slabs when a rank owns more than 10% above the mean (the next
 * exchange moves the particles). Collective. Whether it repartitioned. */
bool slabs_rebalance(mz_slabs *s);

#endif
