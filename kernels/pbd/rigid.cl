/* Rigid bodies by shape matching (Müller et al. 2005) with a rigid-body predictor:
 *
 *   rigid_predict   per body: v += dt g, L += dt τ (a turning domain's), ω = I_w⁻¹ L,
 *                   c* = c + dt v, q* = exp(ω dt) q
 *   rigid_place     per rigid particle: x* = c* + R(q*) r0 (the prediction of a rigid motion,
 *                   not x + dt v: a spinning body keeps its shape and its angular momentum)
 *   rigid_match     one work-group per body, each iteration after the other constraints:
 *                   c = mean of x*, A = Σ (x* − c) r0ᵀ, R = the rotation of A's polar
 *                   decomposition (Müller et al. 2016, warm-started from q*), then x* = c + R r0
 *   rigid_update    per body: v = (c* − c)/dt, ω from the rotation q* q⁻¹ (its exact angle,
 *                   not the first-order 2 vec(Δq)/dt that loses spin), L = I_w ω with the
 *                   inertia of the step's start, the same one rigid_predict used, so that in
 *                   free flight L is conserved to round-off
 *   rigid_velocity  per rigid particle: v = v_b + ω × R r0
 *
 * A body's particles all weigh the same, so the mass-weighted sums are plain means. Reductions
 * are fixed trees in local memory: deterministic. */
#include "common/common.clh"

typedef struct {
    float4 c, q;           /* pose at the step's start: centre of mass, quaternion (x,y,z,w) */
    float4 c_pred, q_pred; /* the step's solution so far */
    float4 v, L, omega;    /* velocity, angular momentum (world), angular velocity */
    float4 inv_ia, inv_ib; /* body-frame inverse inertia: xx, yy, zz | xy, xz, yz */
    float4 ia, ib;         /* body-frame inertia, same order */
    uint first, count;     /* particle ids first .. first + count − 1 */
    uint pad0, pad1;
} mz_rigid;

inline float4 mz_qmul(float4 a, float4 b)
{
    return (float4)(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                    a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                    a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
                    a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}

inline float4 mz_qnormalize(float4 q)
{
    float l = sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    return l > 0.0f ? q / l : (float4)(0.0f, 0.0f, 0.0f, 1.0f);
}

/* exp of a rotation vector: the quaternion turning by |a| about a/|a|. */
inline float4 mz_qexp(float4 a)
{
    float t = sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
    if (!(t > 0.0f))
        return (float4)(0.0f, 0.0f, 0.0f, 1.0f);
    float s = sin(0.5f * t) / t;
    return (float4)(a.x * s, a.y * s, a.z * s, cos(0.5f * t));
}

/* Columns of R(q). */
inline void mz_qmat(float4 q, float4 *c0, float4 *c1, float4 *c2)
{
    float x = q.x, y = q.y, z = q.z, w = q.w;
    *c0 = (float4)(1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y + w * z), 2.0f * (x * z - w * y), 0.0f);
    *c1 = (float4)(2.0f * (x * y - w * z), 1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z + w * x), 0.0f);
    *c2 = (float4)(2.0f * (x * z + w * y), 2.0f * (y * z - w * x), 1.0f - 2.0f * (x * x + y * y), 0.0f);
}

inline float4 mz_rotate(float4 q, float4 r)
{
    float4 c0, c1, c2;
    mz_qmat(q, &c0, &c1, &c2);
    return r.x * c0 + r.y * c1 + r.z * c2;
}

inline float4 mz_rotate_inv(float4 q, float4 r)
{
    return mz_rotate((float4)(-q.x, -q.y, -q.z, q.w), r);
}

/* S a (S symmetric, given as diagonal d and off-diagonal o = xy, xz, yz). */
inline float4 mz_sym_mul(float4 d, float4 o, float4 a)
{
    return (float4)(d.x * a.x + o.x * a.y + o.y * a.z, o.x * a.x + d.y * a.y + o.z * a.z,
                    o.y * a.x + o.z * a.y + d.z * a.z, 0.0f);
}

/* The world-frame tensor applied to a: R S Rᵀ a. */
inline float4 mz_world_mul(float4 q, float4 d, float4 o, float4 a)
{
    return mz_rotate(q, mz_sym_mul(d, o, mz_rotate_inv(q, a)));
}

/* The torque about the centre of mass of a turning frame's terms (Euler, centrifugal,
 * Coriolis) on a body spinning at w relative to the frame, L = I w: Σ m ρ × a over its
 * particles, in closed form with the world-frame inertia I (for the rotation Ω, Ω̇):
 *   −I Ω̇ − Ω × I (w + Ω) − w × I Ω + I (w × Ω).
 * dL/dt = τ + this is the frame's view of the inertial I (w + Ω) turning with neither: a free
 * body keeps its spin in the world, so counter-rotates in the frame (−Ω when at rest there). */
inline float4 mz_frame_torque(const mz_frame *f, float4 q, float4 ia, float4 ib, float4 L,
                              float4 w)
{
    float4 W = (float4)(f->w.xyz, 0.0f), dW = (float4)(f->dw.xyz, 0.0f); /* axial: z in 2D */
    float4 IW = mz_world_mul(q, ia, ib, W);
    float4 t = -mz_world_mul(q, ia, ib, dW) - cross(W, L + IW) - cross(w, IW) +
               mz_world_mul(q, ia, ib, cross(w, W));
    t.w = 0.0f;
    return t;
}

/* A body's centre of mass feels the domain's frame where it is (the frame's acceleration is
 * linear in x and v, so its mean over the particles is its value at the centre); a turning
 * frame also turns its angular momentum (mz_frame_torque). */
kernel void rigid_predict(uint nb, float dt, float keep, mz_frame frame, global mz_rigid *rb)
{
    uint b = get_global_id(0);
    if (b >= nb)
        return;
    mz_rigid B = rb[b];
    float4 v = mz_vec((B.v + dt * mz_frame_accel(&frame, B.c, B.v)) * keep);
#ifdef MZ_SPIN
    float4 w0 = mz_world_mul(B.q, B.inv_ia, B.inv_ib, B.L);
    w0.w = 0.0f;
#if MZ_DIM == 2
    w0.x = w0.y = 0.0f;
#endif
    float4 L = (B.L + dt * mz_frame_torque(&frame, B.q, B.ia, B.ib, B.L, w0)) * keep;
#else
    float4 L = B.L * keep;
#endif
    float4 w = mz_world_mul(B.q, B.inv_ia, B.inv_ib, L);
#if MZ_DIM == 2
    w.x = w.y = 0.0f;
#endif
    w.w = 0.0f;
    rb[b].v = v;
    rb[b].L = L;
    rb[b].omega = w;
    rb[b].c_pred = B.c + dt * v;
    rb[b].q_pred = mz_qnormalize(mz_qmul(mz_qexp(dt * w), B.q));
}

/* A rigid particle's predicted position: its body's predicted pose applied to its rest offset
 * r0 (w, the contact radius, kept). One function for one process's kernel and a rank's. */
inline float4 mz_rigid_place(const mz_rigid *B, float4 r0, float w)
{
    float4 x = B->c_pred + mz_rotate(B->q_pred, r0);
    x.w = w;
    return mz_planar(x);
}

/* Rigid particles are ids first_rigid .. first_rigid + n − 1; owner[k] is k's body. */
kernel void rigid_place(uint n, uint first_rigid, global const uint *owner,
                        global const float4 *r0, global const mz_rigid *rb, global float4 *xp)
{
    uint k = get_global_id(0);
    if (k >= n)
        return;
    mz_rigid B = rb[owner[k]];
    uint i = first_rigid + k;
    xp[i] = mz_rigid_place(&B, r0[k], xp[i].w);
}

#define MZ_RIGID_GROUP 128

/* Tree sum of MZ_RIGID_GROUP float4 in s (all items call it). */
inline float4 mz_group_sum(local float4 *s, float4 mine)
{
    uint l = get_local_id(0);
    s[l] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_RIGID_GROUP / 2; stride > 0; stride >>= 1) {
        if (l < stride)
            s[l] = s[l] + s[l + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float4 total = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

inline float4 mz_group_max(local float4 *s, float4 mine)
{
    uint l = get_local_id(0);
    s[l] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_RIGID_GROUP / 2; stride > 0; stride >>= 1) {
        if (l < stride)
            s[l] = fmax(s[l], s[l + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float4 total = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* The rotation nearest to A (columns a0, a1, a2), from q (Müller et al. 2016). */
inline float4 mz_polar_rotation(float4 a0, float4 a1, float4 a2, float4 q)
{
    for (int it = 0; it < 16; it++) {
        float4 r0, r1, r2;
        mz_qmat(q, &r0, &r1, &r2);
        float4 num = cross(r0, a0) + cross(r1, a1) + cross(r2, a2);
        float den = fabs(mz_dot3(r0, a0) + mz_dot3(r1, a1) + mz_dot3(r2, a2)) + 1.0e-30f;
        float4 w = num / den;
        w.w = 0.0f;
        float t = sqrt(w.x * w.x + w.y * w.y + w.z * w.z);
        if (!(t > 1.0e-7f))
            break;
        q = mz_qnormalize(mz_qmul(mz_qexp(w), q));
    }
    return q;
}

/* xp[i] is the particle of id at + i: one process's buffer (at 0), or a rank's copy of the rigid
 * particles alone (at first_rigid, src/solvers/pbd/rigid_dist.c). */
kernel void rigid_match(uint first_rigid, float4 lo, float4 hi, global const float4 *r0,
                        global mz_rigid *rb, global float4 *xp, uint at)
{
    local float4 scratch[MZ_RIGID_GROUP];
    uint b = get_group_id(0), l = get_local_id(0);
    uint base = rb[b].first - first_rigid, count = rb[b].count, first = rb[b].first - at;
    float4 s = (float4)(0.0f);
    for (uint k = l; k < count; k += MZ_RIGID_GROUP)
        s += mz_vec(xp[first + k]);
    float4 c = mz_group_sum(scratch, s) / (float)count;
    float4 a0 = (float4)(0.0f), a1 = (float4)(0.0f), a2 = (float4)(0.0f);
    for (uint k = l; k < count; k += MZ_RIGID_GROUP) {
        float4 d = mz_vec(xp[first + k] - c), r = r0[base + k];
        a0 += d * r.x;
        a1 += d * r.y;
        a2 += d * r.z;
    }
    a0 = mz_group_sum(scratch, a0);
    a1 = mz_group_sum(scratch, a1);
    a2 = mz_group_sum(scratch, a2);
    float4 q = mz_polar_rotation(a0, a1, a2, rb[b].q_pred); /* every item alike */
    /* The domain's walls move the body as a whole: shifted by its deepest penetration of each
     * wall (clamping single particles, as for other bodies, would bend it). */
    float4 below = (float4)(0.0f), above = (float4)(0.0f);
    for (uint k = l; k < count; k += MZ_RIGID_GROUP) {
        float4 x = c + mz_rotate(q, r0[base + k]);
        float r = xp[first + k].w;
        below = fmax(below, lo + r - x);
        above = fmax(above, x + r - hi);
    }
    below = mz_group_max(scratch, below);
    above = mz_group_max(scratch, above);
    c = c + mz_vec(select(below - above, (float4)(0.0f), isgreater(below, 0.0f) &
                                                          isgreater(above, 0.0f)));
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (l == 0) {
        rb[b].c_pred = c;
        rb[b].q_pred = q;
    }
    for (uint k = l; k < count; k += MZ_RIGID_GROUP) {
        uint i = first + k;
        float4 x = c + mz_rotate(q, r0[base + k]);
        x.w = xp[i].w;
        xp[i] = mz_planar(x);
    }
}

kernel void rigid_update(uint nb, float dt, global mz_rigid *rb, global float4 *pose)
{
    uint b = get_global_id(0);
    if (b >= nb)
        return;
    mz_rigid B = rb[b];
    float4 v = mz_vec((B.c_pred - B.c) / dt);
    float4 dq = mz_qmul(B.q_pred, (float4)(-B.q.x, -B.q.y, -B.q.z, B.q.w));
    if (dq.w < 0.0f)
        dq = -dq;
    float s = sqrt(dq.x * dq.x + dq.y * dq.y + dq.z * dq.z);
    float4 w = (float4)(0.0f);
    if (s > 0.0f)
        w = (float4)(dq.x, dq.y, dq.z, 0.0f) * (2.0f * atan2(s, dq.w) / (s * dt));
    w.w = 0.0f; /* axial: mz_vec would clear z, the spin of a 2D body */
#if MZ_DIM == 2
    w.x = w.y = 0.0f;
#endif
    rb[b].L = mz_world_mul(B.q, B.ia, B.ib, w);
    rb[b].v = v;
    rb[b].omega = w;
    rb[b].c = B.c_pred;
    rb[b].q = B.q_pred;
    pose[2 * b] = B.c_pred;
    pose[2 * b + 1] = B.q_pred;
}

/* A rigid particle's velocity from its body's (one process's kernel and a rank's). */
inline float4 mz_rigid_velocity(const mz_rigid *B, float4 r0)
{
    /* the angular velocity the next step starts with (the pose is the step's end): the
     * particles then carry exactly the body's angular momentum */
    float4 w = mz_world_mul(B->q, B->inv_ia, B->inv_ib, B->L);
#if MZ_DIM == 2
    w.x = w.y = 0.0f;
#endif
    w.w = 0.0f;
    float4 u = B->v + cross(w, mz_rotate(B->q, r0));
    u.w = 0.0f;
    return mz_planar(u);
}

kernel void rigid_velocity(uint n, uint first_rigid, global const uint *owner,
                           global const float4 *r0, global const mz_rigid *rb, global float4 *v)
{
    uint k = get_global_id(0);
    if (k >= n)
        return;
    mz_rigid B = rb[owner[k]];
    v[first_rigid + k] = mz_rigid_velocity(&B, r0[k]);
}

/* ---- A rank of a distributed run (src/solvers/pbd/rigid_dist.c): its window holds particles
 * in the grid's order, each with its id; the rigid ones are found by id. ---- */

/* k = id − first_rigid of the window's slot i, or n_rigid when it is no rigid particle. */
inline uint mz_rigid_index(global const uint *id, uint i, uint first_rigid, uint n_rigid)
{
    uint k = id[i] - first_rigid; /* wraps past n_rigid below first_rigid */
    return k < n_rigid ? k : n_rigid;
}

kernel void rigid_place_slots(uint n, uint first_rigid, uint n_rigid, global const uint *id,
                              global const uint *owner, global const float4 *r0,
                              global const mz_rigid *rb, global float4 *xp)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint k = mz_rigid_index(id, i, first_rigid, n_rigid);
    if (k == n_rigid)
        return;
    mz_rigid B = rb[owner[k]];
    xp[i] = mz_rigid_place(&B, r0[k], xp[i].w);
}

kernel void rigid_velocity_slots(uint n, uint first_rigid, uint n_rigid, global const uint *id,
                                 global const uint *owner, global const float4 *r0,
                                 global const mz_rigid *rb, global float4 *v)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint k = mz_rigid_index(id, i, first_rigid, n_rigid);
    if (k == n_rigid)
        return;
    mz_rigid B = rb[owner[k]];
    v[i] = mz_rigid_velocity(&B, r0[k]);
}

/* The owned slots [offset, end)'s rigid particles into the copy by id (zeros elsewhere: the
 * ranks' copies are then OR-ed together, each id set by its one owner). */
kernel void rigid_to_ids(uint end, uint first_rigid, uint n_rigid, global const uint *id,
                         global const float4 *xp, global float4 *xr)
{
    uint i = get_global_id(0);
    if (i >= end)
        return;
    uint k = mz_rigid_index(id, i, first_rigid, n_rigid);
    if (k < n_rigid)
        xr[k] = xp[i];
}

/* The matched positions back into every window slot holding a rigid particle. */
kernel void rigid_from_ids(uint n, uint first_rigid, uint n_rigid, global const uint *id,
                           global const float4 *xr, global float4 *xp)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint k = mz_rigid_index(id, i, first_rigid, n_rigid);
    if (k < n_rigid)
        xp[i] = xr[k];
}
