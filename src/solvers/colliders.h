/* The scene's colliders as the kernels take them (kernels/common/colliders.clh), for the
 * position-based solver and FLIP: shapes at rest, and each moving one's slot in a step's law
 * values. */
#ifndef MZ_COLLIDERS_H
#define MZ_COLLIDERS_H
#include "solvers/sim.h"

/* Layout of mz_collider_dev. */
typedef struct collider_dev {
    cl_float4 a, b;
    cl_float radius, friction, static_friction;
    cl_int type;
    cl_float4 unit, center;
    cl_int mover, rotation, pad0, pad1;
} collider_dev;

/* Layout of mz_motion_now: per moving collider (s, ds/dt, d²s/dt², 0). */
typedef struct motion_now {
    cl_float4 s[MZ_MAX_MOVING];
} motion_now;

/* The table of the scene's colliders (malloc'd, n_colliders + 1 entries) and, into
 * mover_collider[0 .. *n_movers), the collider of each moving slot. */
collider_dev *colliders_table(const mz_scene *s, int mover_collider[MZ_MAX_MOVING],
                              int *n_movers);
/* The moving colliders' laws at time t. */
motion_now colliders_now(const mz_scene *s, const int *mover_collider, int n_movers, double t);

#endif
