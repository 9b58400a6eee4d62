/* Boundary particles: the domain's walls and the colliders as a particle set with a neighbour
 * grid of its own, shared by the SPH solvers (sph/sph.c, sph/dfsph.c) and PBF (pbd/fluid.c),
 * whichever runs with domain.boundary.type "particles". Static, sorted once;
 * with moving colliders (colliders[].motion), put where their laws have them and sorted again
 * before every step (boundary_move). */
#ifndef MZ_SOLVER_BOUNDARY_H
#define MZ_SOLVER_BOUNDARY_H
#include "device/grid.h"
#include "solvers/sim.h"

typedef struct boundary_set {
    mz_grid grid;
    bool made; /* the scene has particle walls: grid, pos and mass exist */
    cl_mem pos, mass;
    cl_mem dummy; /* a stand-in for every buffer argument when there are none */
    cl_uint nb;
    int *owner;   /* per particle in the builder's order: its wall or MZ_OWNER_COLLIDER + c */
    /* Where each particle (builder's order) sits in the grid's order: for the forces on
     * solids (loads.c); made by boundary_track. */
    cl_mem id, slot_of;
    /* Moving colliders: the particles at rest in the builder's order, their velocities and
     * accelerations (grid order), the colliders' motions, and which collider each law value of
     * a step belongs to. */
    bool moving;
    cl_int moving_i;
    cl_program program;
    cl_kernel k_pose, k_slots;
    cl_mem rest, rest_mass, vel, acc, movers;
    int mover_collider[MZ_MAX_MOVING];
    int n_movers;
} boundary_set;

/* What the kernels take: the boundary set, or a harmless stand-in (nb 0) when there is none;
 * moving 0 and stand-ins for vel and acc when it does not move. */
typedef struct boundary_args {
    mz_grid_desc desc;
    cl_mem words, first, pos, mass; /* words, first: its grid's cell tables */
    cl_int nb;
    cl_int moving;
    cl_mem vel, acc;
} boundary_args;

/* The walls and colliders of the scene at the fluid's spacing, each particle of `mass`, on a
 * grid of cells h in the mode of the fluid's; only the stand-in when the scene's boundary is not
 * particles. on_fluid_lines: the grid's cells on the fluid grid's lines (over the domain, cells
 * h), for passes that walk one fluid cell's walls together (WCSPH's density on a CPU); else
 * where they always were, since moving them changes the order of the wall terms. 0, or -1
 * after reporting. */
int boundary_init(boundary_set *b, mz_sim *sim, float mass, double h, mz_grid_mode mode,
                  bool on_fluid_lines);
/* Keep slot_of current (the forces on solids need it): made now, and after every sort. */
int boundary_track(boundary_set *b, mz_sim *sim);
/* Moving colliders at time t (the step's start) and the grid sorted again; nothing when none
 * move. 0, or -1 after reporting. */
int boundary_move(boundary_set *b, mz_sim *sim, double t);
boundary_args boundary_of(const boundary_set *b, mz_grid_desc fluid);
/* Device memory boundary_init leaves held for the scene, in bytes, beside a fluid grid of n
 * particles and cells h (whose kind, dense or hashed, the wall grid takes); *peak: the most it
 * holds while it sorts them. */
size_t boundary_device_bytes(const mz_scene *s, size_t n, double h, bool on_fluid_lines,
                             size_t *peak);
void boundary_release(boundary_set *b);

#endif
