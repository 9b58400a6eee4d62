/* Inside solvers/sph/: DFSPH under mpirun (dfsph_dist.c, docs/distributed.md "DFSPH"). Slabs of
 * the neighbour grid's layers as WCSPH runs them (dist/slabs.h), one halo layer, and the halo's
 * values that the solves' passes read of their neighbours shared from their owners after every
 * pass that changes them, beside the next pass's inner particles. Without mpirun every function
 * here does nothing (or launches over all particles), so one process runs as before. */
#ifndef MZ_DFSPH_DIST_H
#define MZ_DFSPH_DIST_H
#include "dist/slabs.h"
#include "solvers/sim.h"

/* The most buffers one share sends (ρ, k/ρ; the accelerations). */
enum { DFSPH_DIST_MAX_DUE = 3 };

typedef struct dfsph_dist {
    mz_slabs slabs;
    bool on;
    /* Buffers whose owners' values the next share sends (dfsph_dist_due), and whether that
     * share has begun (its copy to the host enqueued) and not yet ended. */
    cl_mem due[DFSPH_DIST_MAX_DUE];
    size_t due_elem[DFSPH_DIST_MAX_DUE];
    int n_due;
    bool begun;
} dfsph_dist;

/* mz_solver.slab_geometry: the grid's cell (the support radius) and one halo layer. */
void dfsph_slab_geometry(const mz_scene *s, double *h, int *halo);
/* Under mpirun (sim->plan): this rank's window of its share, kept in the grid's registered
 * buffers; grow gives the solver's other buffers room (slabs.h). 0, or -1 after reporting. */
int dfsph_dist_init(dfsph_dist *d, mz_sim *sim, mz_grid *g, int (*grow)(void *ctx, size_t cap));
/* The owned particles to the windows of their layers now (before the grid build). */
int dfsph_dist_exchange(dfsph_dist *d, mz_sim *sim);
/* After a grid build: the window's rings. */
int dfsph_dist_after_build(dfsph_dist *d);
/* Shares in two halves, so that the device computes between them (slabs_share_begin, _end):
 * _due adds buf (elem bytes a particle) to what the next share sends; _begin enqueues the
 * owned values' copy to the host after the passes enqueued so far; _end waits for that copy,
 * exchanges the values with the other ranks and enqueues their writes into this window's halo
 * (collective). Each does nothing where nothing is due or begun, or without mpirun. */
void dfsph_dist_due(dfsph_dist *d, cl_mem buf, size_t elem);
bool dfsph_dist_begin(dfsph_dist *d);
bool dfsph_dist_end(dfsph_dist *d);
/* A begun share not needed after all (a solve stopped): every rank drops it alike. */
void dfsph_dist_drop(dfsph_dist *d);
/* Kernel k over the owned particles, or over [begin, end) of them (its argument 0, the count,
 * set to the range's end); an empty range launches nothing. */
bool dfsph_launch_owned(mz_sim *sim, cl_kernel k, int stage, const char *name);
bool dfsph_launch_range(mz_sim *sim, cl_kernel k, size_t begin, size_t end, int stage,
                        const char *name);
/* The solves' error sums (two 64-bit halves, dfsph.cl's mz_dfsph_fixed) over every rank, in place;
 * then the average error in units of density, for a fixed-point unit of `unit` per density. */
double dfsph_dist_average(mz_sim *sim, uint64_t total[2], double unit);
/* At a frame's end: new slabs when a rank owns more than 10% above the mean. */
void dfsph_dist_rebalance(dfsph_dist *d);
void dfsph_dist_release(dfsph_dist *d, mz_sim *sim);

#endif
