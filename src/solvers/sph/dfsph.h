/* DFSPH's pressure solves as a run went (src/solvers/sph/dfsph.c), for the summary and tests. */
#ifndef MZ_DFSPH_H
#define MZ_DFSPH_H
#include "solvers/sim.h"

typedef struct mz_dfsph_stats {
    long steps;                 /* steps taken since the solver started (this process) */
    long density_iterations;    /* iterations of the constant-density solves, all steps */
    long divergence_iterations; /* of the divergence-free solves */
    long capped;                /* solves that stopped at the iteration limit above tolerance */
    long solves_shortened;      /* steps the solves' step control shortened below the CFL's */
    long by_speed, by_accel, by_viscosity; /* steps the CFL's speed, acceleration or viscous
                                            * bound set (the rest: the solves' cap, frame ends) */
    long by_start;              /* steps the start's ramp set (dfsph.c, start_ramp) */
    double fastest, largest_accel;         /* the largest |v|max and |a|max a step saw */
    double worst_density_error; /* the largest average density error a solve ended with, of ρ0 */
    unsigned list_cap;          /* the neighbour lists' entries a particle now */
    long lists_grown;           /* steps that found them short and built them again, longer */
} mz_dfsph_stats;

/* The stats of a DFSPH simulation: 0, or -1 when sim is not one. */
int dfsph_stats(const mz_sim *sim, mz_dfsph_stats *out);

/* Give the neighbour lists room for cap neighbours a particle from now on (for tests: lists
 * too short must grow at the next step and change nothing). 0, or -1 when sim is not DFSPH or
 * the lists cannot be made. */
int dfsph_set_list_cap(mz_sim *sim, unsigned cap);

#endif
