/* Boundary particles that move (src/solvers/boundary.c): each step, every boundary
 * particle is put where its collider's law has it, in the builder's order, before the boundary
 * grid sorts them; and after a sort, where each one went. */
#include "common/common.clh"

/* colliders[].motion as the kernel takes it: per collider, its slot in the step's law values
 * (−1: static), translation or rotation, the unit direction or axis, the rotation's centre. */
typedef struct {
    float4 unit, center;
    int slot, type, pad0, pad1;
} mz_mover;

#define MZ_MAX_MOVING 16           /* scene.h */
#define MZ_OWNER_COLLIDER 6        /* scene.h: a collider particle's owner is 6 + its index */
#define MZ_MOTION_TRANSLATION 0

/* The law at the step's time per moving collider: (s, ds/dt, d²s/dt², 0), m or rad. */
typedef struct {
    float4 s[MZ_MAX_MOVING];
} mz_motion_now;

/* Particle k (builder's order) at rest is rest[k] (owner in w): moved by its collider's law,
 * with the velocity and acceleration of that motion, into pos, mass, vel, acc and id (k). */
kernel void boundary_pose(uint nb, global const float4 *rest, global const float *rest_mass,
                          global const mz_mover *movers, uint n_colliders, mz_motion_now now,
                          global float4 *pos, global float *mass, global float4 *vel,
                          global float4 *acc, global uint *id)
{
    uint k = get_global_id(0);
    if (k >= nb)
        return;
    float4 r = rest[k], x = r, v = (float4)(0.0f), a = (float4)(0.0f);
    int c = (int)r.w - MZ_OWNER_COLLIDER;
    if (c >= 0 && c < (int)n_colliders && movers[c].slot >= 0) {
        const mz_mover m = movers[c];
        const float4 s = now.s[m.slot], u = m.unit;
        if (m.type == MZ_MOTION_TRANSLATION) {
            x = r + s.x * u;
            v = s.y * u;
            a = s.z * u;
        } else {
            /* Rodrigues: p turned by s.x about u; ω = s' u, α = s'' u. */
            float4 p = mz_vec(r - m.center);
            float cs = cos(s.x), sn = sin(s.x);
            float4 q = cs * p + sn * cross(u, p) + (1.0f - cs) * mz_dot3(u, p) * u;
            float4 w = s.y * u, al = s.z * u;
            x = m.center + q;
            v = cross(w, q);
            a = cross(al, q) + cross(w, cross(w, q));
        }
        x.w = r.w;
        v.w = a.w = 0.0f;
    }
    pos[k] = x;
    mass[k] = rest_mass[k];
    vel[k] = v;
    acc[k] = a;
    id[k] = k;
}

/* After the grid's sort: slot_of[id[s]] = s (each id once: no two work-items write one place). */
kernel void boundary_slots(uint nb, global const uint *id, global uint *slot_of)
{
    uint s = get_global_id(0);
    if (s < nb)
        slot_of[id[s]] = s;
}
