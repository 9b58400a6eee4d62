/* FLIP/PIC fluid (src/solvers/flip/flip.c, kernels/flip/flip.cl): the grid layout the kernels share with
 * the host, the solver's pressure statistics, and its stages one by one (tests, benchmarks). */
#ifndef MZ_FLIP_H
#define MZ_FLIP_H
#include "solvers/sim.h"

enum { FLIP_AIR, FLIP_FLUID, FLIP_SOLID }; /* cell types, one uchar per node */

/* Layout matches flip_grid in kernels/flip/flip.cl. Every grid array has one entry per node (i, j, k),
 * 0 ≤ i ≤ nx, 0 ≤ j ≤ ny, 0 ≤ k ≤ nz (k = 0 only in 2D), at (k·(ny+1) + j)·(nx+1) + i: the
 * cell (i, j, k)'s centre values and the velocities of its three lower faces. */
typedef struct flip_grid {
    cl_float4 origin, cell, inv_cell, inv_cell2;
    cl_int4 cells, nodes;
    cl_int4 no_slip; /* x: 1 when the walls hold the tangential velocity at 0 (fluids[].walls) */
    cl_float4 wall;  /* x: kinematic viscosity of the wall function (m^2/s), 0: none */
} flip_grid;

typedef struct flip_stats {
    long projections;     /* pressure solves */
    long iterations;      /* sweeps (mgpcg: CG iterations), all solves together */
    long capped;          /* solves that stopped short of the tolerance: at
                           * simulation.pressure_iterations (mgpcg also where round-off stops
                           * it, flip_cg.c) */
    int first_iterations; /* the first solve's (from zero pressure: no warm start) */
    int last_iterations;
    double last_residual; /* last solve: largest divergence left / largest before */
    long fluid_cells;     /* last solve */
} flip_stats;

/* The grid and its buffers as they are now (the stages swap handles). */
typedef struct flip_view {
    flip_grid grid;
    size_t nodes;
    cl_mem face_vel;   /* float4: u, v, w on the cell's lower faces */
    cl_mem face_du;    /* float4: after the projection, the change it and gravity made (FLIP) */
    cl_mem face_adv;   /* float4: after the projection, the velocity particles move with */
    cl_mem face_valid; /* uchar4: which faces hold a velocity (after the projection) */
    cl_mem type, density; /* uchar (FLIP_*), float (1 = the rest lattice) */
    cl_mem pressure;   /* float2: pressure (Pa) and the volume correction's potential */
    cl_mem diag;       /* float: the pressure system's diagonal (after a projection) */
    /* fluids[].transfer "apic": per particle in device order, float4 each, ∇u, ∇v, ∇w (1/s;
     * apic_c[2] only in 3D); NULL otherwise */
    cl_mem apic_c[3];
} flip_view;

flip_view flip_get_view(const mz_sim *sim);
const flip_stats *flip_get_stats(const mz_sim *sim);

/* One step is these four, in order. */
int flip_p2g(mz_sim *sim, double dt);     /* sort, particles to grid, gravity, solid faces */
int flip_project(mz_sim *sim, double dt); /* divergence, pressure solve, gradient */
int flip_extrapolate(mz_sim *sim);        /* velocities into the air next to the fluid */
int flip_g2p(mz_sim *sim, double dt);     /* FLIP/PIC blend (or APIC), RK2 move, push-out */

/* pressure_solver "mgpcg" (tests): z = the multigrid V-cycle applied to b (float2 per node, read
 * at the fluid cells only) over the last projection's system; 0, or -1 after reporting. */
int flip_mg_apply(mz_sim *sim, cl_mem b, cl_mem z);

#endif
