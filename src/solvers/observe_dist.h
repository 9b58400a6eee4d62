/* Probes, gauges and forces on solids under mpirun (docs/distributed.md): each sample is
 * assembled from every rank into rank 0's sample row, which then goes the way one process's
 * does (read back in batches, written by frames.c).
 *
 * Probes and gauges. A point's sum runs over the cells of its 3 × 3 (× 3) neighbourhood on the
 * next step's grid (after its exchange and build: WCSPH, collapsed SPH), or its 5 × 5 (× 5) on
 * the grid of the step just taken (PBF), 3 or 5 layers along the slab axis. Only a rank's own
 * particles hold the state sampled (its halo copies are stepped by their owners, or copied
 * from them, without the buffers the probes read), so each rank sums only the cells of its own
 * layers (kernels/grid/probes.cl, probe_near and probe_sums). A point whose layers all lie in one rank's slab
 * is finished there, the same particles in the same order as in one process; a point across a
 * slab boundary has each cell summed by the one rank that owns its layer, the cells' sums
 * gathered on rank 0 and put through the same tree (probe_finish*). Either way the value is
 * bit-identical to one process's. The gauges' levels are then found on rank 0 from the
 * assembled points (gauge_level), as in one process.
 *
 * Forces on solids. Each rank's gather takes the pairs of the fluid particles it owns
 * (sph_wall_loads), so every pair is counted once; each rank sums its elements as one process
 * does (load_sums) and rank 0 adds the ranks' totals in rank order. The pairs' terms are one
 * process's bits, their grouping is not: the force differs from one process's by float
 * rounding (a few 1e-7 of its size), and the same number of ranks gives the same bits.
 *
 * All of it once a sample, synchronously: the device's results read back, one gather to rank 0
 * (dist_gather_bytes), rank 0's device given the assembled values. */
#ifndef MZ_OBSERVE_DIST_H
#define MZ_OBSERVE_DIST_H
#include "solvers/observe.h"

/* Under mpirun with slabs (sim->slabs): o->dist for the samples' assembly (every rank). 0, or
 * -1 after reporting. Nothing in one process. */
int observe_dist_create(mz_observers *o, mz_sim *sim);
/* probe_sums' arguments for this rank: its own layers and where the points it cannot finish
 * leave their cells' sums (in one process: no layers, a stand-in buffer). */
void observe_dist_args(const mz_observers *o, const mz_sim *sim, cl_int *own_lo,
                       cl_int *own_hi, cl_mem *parts);
/* After probe_sums, or probe_near when `near` (the points due: probes, gauges), and load_sums
 * (loads) wrote this rank's part of the sample into device row `slot`: rank 0's row and gauge
 * sums (the first half of gauge_sums) completed from every rank's. Collective: every rank
 * calls it for every sample. A device failure ends every rank (dist_abort): the others would
 * wait in the gather. */
void observe_dist_assemble(mz_observers *o, mz_sim *sim, size_t slot, bool probes, bool gauges,
                           bool loads, bool near);
/* (Waits for the device: rank 0's last writes come from the host buffers it frees.) */
void observe_dist_release(mz_observers *o, mz_cl *cl);

#endif
