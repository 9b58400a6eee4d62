/* The stages every position-based solver starts and ends with (Müller et al. 2006):
 * predict → [constraint projection] → domain → update. Velocities are updated from the
 * correction to the prediction, v ← v + (x* − x_pred)/dt, which equals (x* − x)/dt exactly in
 * real arithmetic but does not lose the velocity to round-off when |x| ≫ |v|·dt. */
#include "common/common.clh"
#include "common/walls.clh"

/* v = keep·(v + dt·(g + a_walls)); x* = x + dt·v. keep = exp(−damping·dt) (1: none).
 * g: the domain's frame (gravity, and the frame's own acceleration when the domain moves).
 * Pinned particles (w = 0) stay put. With the forces on the walls measured (loads), the penalty
 * walls' push as the displacement it makes over the substep, a_walls dt², into wall_corr (the
 * domain walls' corrections of this substep, per axis: src/solvers/pbd/loads.c). */
kernel void predict(uint n, float dt, float keep, mz_frame frame, mz_walls walls, int penalty,
                    global const float4 *x, global float4 *v, global float4 *xp,
                    global const float *inv_mass, int loads, global float4 *wall_corr)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 xi = x[i];
    if (inv_mass[i] == 0.0f) {
        v[i] = (float4)(0.0f);
        xp[i] = xi;
        return;
    }
    float4 vi = v[i];
    float4 a = penalty ? mz_limit_accel(mz_wall_accel(xi, vi, &walls), walls.accel_limit)
                       : (float4)(0.0f);
    if (loads)
        wall_corr[i] = (dt * dt) * mz_vec(a);
    vi = mz_planar((vi + dt * (mz_frame_accel(&frame, xi, vi) + a)) * keep);
    vi.w = 0.0f;
    v[i] = vi;
    xp[i] = xi + dt * vi;
}

/* Keep predicted positions inside [lo, hi]: the domain itself for penalty walls (a safety net:
 * no particle ever leaves), the domain shrunk by each particle's radius for clamp walls and for
 * rigid bodies (penalty forces on single particles do not reach a rigid's motion, which comes
 * from shape matching). bodies[b].flags: MZ_BODY_RIGID (8) in src/solvers/pbd/pbd.c. */
kernel void domain(uint n, float4 lo, float4 hi, int by_radius, global const float *inv_mass,
                   global const uint *body, global const uint4 *bodies, global float4 *xp,
                   int loads, global float4 *wall_corr)
{
    uint i = get_global_id(0);
    if (i >= n || inv_mass[i] == 0.0f) /* pinned particles stay where they were put */
        return;
    float4 p = xp[i];
    float r = by_radius || (bodies[body[i]].z & 8u) ? p.w : 0.0f;
    float4 c = mz_clamp_box(p, lo + r, hi - r);
    xp[i] = c;
    if (loads)
        wall_corr[i] += mz_vec(c - p);
}

/* v += (x* − x_pred)/dt with x_pred = x + dt·v recomputed exactly as predict did; x = x*. */
kernel void update(uint n, float dt, global float4 *x, global float4 *v,
                   global const float4 *xp)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 xi = x[i], vi = v[i], ps = xp[i];
    float4 pred = xi + dt * vi;
    vi = vi + (ps - pred) / dt;
    vi.w = 0.0f;
    v[i] = vi;
    x[i] = ps;
}
