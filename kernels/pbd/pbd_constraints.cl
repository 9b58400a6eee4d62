/* Position-based constraint projection, one Jacobi sweep per launch pair, no atomics:
 *
 *   distance_solve   per constraint: XPBD multiplier step Δλ, the correction along the
 *                    constraint, λ += Δλ
 *   distance_apply   per particle: gather the corrections of its incident constraints
 *   sort_positions   per slot: the predicted positions in grid order (a snapshot for contacts)
 *   collide          per particle: contacts with the particles within contact distance (from
 *                    the snapshot), with position-based friction
 *   colliders        per particle: static solids by signed distance, with friction
 *
 * Jacobi with relaxed mass splitting: a particle with n incident constraints counts as
 * w·max(1, n/ω) in each constraint's effective inverse mass, so the corrections summed at a
 * particle do not overshoot (by more than the relaxation ω asks for), an isolated constraint is
 * solved exactly (n = 1), and the multiplier λ each constraint accumulates is the one its
 * correction applied. So at convergence C = −α̃λ holds exactly, and where α̃ = α/dt² dominates
 * the splitting (small steps) a single iteration already gives it: compliance means the same at
 * any iteration count. (Scaling Δλ by ω instead would make one iteration's stretch α/ω.) */
#include "common/common.clh"
#include "grid/grid.clh"
#include "common/colliders.clh"
#include "common/loads.clh"

/* One XPBD step of a distance constraint between a (at xa, inverse mass wa, degree na) and b:
 * the correction along the constraint (∇_a C = d/|d|; particle a moves w_a·corr, b moves
 * −w_b·corr), *l (its λ) stepped. distance_solve and a distributed rank's distance_gather both
 * take it from here, so that they give the same bits. params: rest length, compliance α (m/N),
 * PBD stiffness k, unused. inv_dt2 = 1/dt². */
inline float4 mz_distance_step(float4 xa, float4 xb, float wa, float wb, uint na, uint nb,
                               float4 prm, float inv_dt2, float omega, float *l)
{
    float4 d = mz_vec(xa - xb);
    float len = mz_len(d);
    wa = wa * fmax(1.0f, (float)na / omega);
    wb = wb * fmax(1.0f, (float)nb / omega);
    float alpha = prm.y * inv_dt2;
    float denom = wa + wb + alpha;
    if (!(len > 0.0f) || !(denom > 0.0f))
        return (float4)(0.0f);
    float dl = prm.z * (-(len - prm.x) - alpha * *l) / denom;
    *l = *l + dl;
    return d * (dl / len);
}

kernel void distance_solve(uint nc, float inv_dt2, float omega, global const uint2 *ends,
                           global const float4 *params, global const float4 *xp,
                           global const float *inv_mass, global const uint *degree,
                           global float *lambda, global float4 *corr)
{
    uint c = get_global_id(0);
    if (c >= nc)
        return;
    uint2 e = ends[c];
    float l = lambda[c];
    corr[c] = mz_distance_step(xp[e.x], xp[e.y], inv_mass[e.x], inv_mass[e.y], degree[e.x],
                               degree[e.y], params[c], inv_dt2, omega, &l);
    lambda[c] = l;
}

/* adj[adj_start[i] .. adj_start[i+1]): 2·constraint + (i is its second end). */
kernel void distance_apply(uint n, global const uint *adj_start, global const uint *adj,
                           global const float4 *corr, global const float *inv_mass,
                           global float4 *xp)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float w = inv_mass[i];
    if (w == 0.0f)
        return;
    float4 s = (float4)(0.0f);
    uint end = adj_start[i + 1];
    for (uint k = adj_start[i]; k < end; k++) {
        uint a = adj[k];
        float4 q = corr[a >> 1];
        s = (a & 1u) ? s - q : s + q;
    }
    xp[i] = xp[i] + w * s;
}

/* A distributed rank (src/solvers/pbd/cloth_dist.c): distance_solve and distance_apply at once
 * for the owned particles [get_global_offset(0), n), by a gather over each one's constraints in
 * adjacency order (tables by particle id). The partner's slot in the window comes from slot_of
 * (by id; stale entries fail the id check and are reported through missing, the id + 1). Each
 * end keeps its own λ per adjacency entry (first: 0): both ends step it from the same bits. The
 * positions go to out: the pass reads its partners' xp. */
kernel void distance_gather(uint n, uint window, float inv_dt2, float omega, int first,
                            global const uint *id, global const uint *slot_of,
                            global const uint2 *ends, global const float4 *params,
                            global const uint *adj_start, global const uint *adj,
                            global const uint *adj_other, global const uint *degree,
                            global const float4 *xp, global const float *inv_mass,
                            global float *lambda, global float4 *out, global uint *missing)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 xi = xp[i];
    float w = inv_mass[i];
    out[i] = xi;
    if (w == 0.0f)
        return;
    uint me = id[i], end = adj_start[me + 1];
    float4 s = (float4)(0.0f);
    for (uint k = adj_start[me]; k < end; k++) {
        uint a = adj[k], other = adj_other[k], j = slot_of[other];
        if (j >= window || id[j] != other) {
            *missing = other + 1u;
            return;
        }
        bool second = (a & 1u) != 0u;
        uint sa = second ? j : i, sb = second ? i : j;
        uint2 e = ends[a >> 1];
        float l = first ? 0.0f : lambda[k];
        float4 q = mz_distance_step(xp[sa], xp[sb], inv_mass[sa], inv_mass[sb], degree[e.x],
                                    degree[e.y], params[a >> 1], inv_dt2, omega, &l);
        lambda[k] = l;
        s = second ? s - q : s + q;
    }
    out[i] = xi + w * s;
}

/* slot_of[id[i]] = i over the window after its build (cloth_dist.c). */
kernel void slot_map(uint n, global const uint *id, global uint *slot_of)
{
    uint i = get_global_id(0);
    if (i < n)
        slot_of[id[i]] = i;
}

kernel void sort_positions(uint n, global const uint *slot, global const float4 *xp,
                           global float4 *sorted)
{
    uint j = get_global_id(0);
    if (j < n)
        sorted[j] = xp[slot[j]];
}

/* Per body: contact friction and whether the body collides (with others, with itself). */
typedef struct {
    float friction, static_friction;
    uint flags, pad;
} mz_body_info;
#define MZ_BODY_COLLIDES 1u
#define MZ_BODY_SELF 2u
#define MZ_BODY_FLUID 4u /* PBF: fluid meets fluid through the density constraint */

/* Position-based friction (Macklin et al. 2014): the tangential part t of the relative
 * displacement over the substep is cancelled while it is below μs·penetration (sticking),
 * else reduced by μk·penetration (sliding). */
inline float4 mz_friction(float4 rel, float4 nrm, float pen, float mu_s, float mu_k)
{
    float4 t = rel - nrm * (rel.x * nrm.x + rel.y * nrm.y + rel.z * nrm.z);
    float lt = mz_len(t);
    if (lt < mu_s * pen)
        return t;
    return lt > 0.0f ? t * fmin(mu_k * pen / lt, 1.0f) : (float4)(0.0f);
}

/* Whether a constraint joins i to j: i's partners (adj_other, in adjacency order), the first
 * MZ_JOINED_CACHE of them held in private memory for the whole neighbour loop. */
#define MZ_JOINED_CACHE 24
inline bool mz_joined(uint j, const uint *cache, uint n_cached, uint start, uint end,
                      global const uint *adj_other)
{
    for (uint k = 0; k < n_cached; k++)
        if (cache[k] == j)
            return true;
    for (uint k = start + n_cached; k < end; k++)
        if (adj_other[k] == j)
            return true;
    return false;
}

/* Contacts: every particle j closer than r_i + r_j is pushed apart along the line between
 * them, shared by inverse mass, unless the two do not collide (body flags) or a constraint
 * joins them (the adjacency is by particle id: id[i] is i in one process, not on a rank of a
 * distributed run). Corrections are averaged over the contacts and relaxed by ω. Reads
 * neighbours from the snapshot, so writing xp in place is safe. */
kernel void collide(uint n, mz_grid_desc g, global const uint *cell_words,
                    global const uint *cell_first, global const float4 *sorted,
                    global const uint *slot, global const float4 *x,
                    global const float *inv_mass, global const uint *body,
                    global const mz_body_info *bodies, global const uint *adj_start,
                    global const uint *adj_other, float omega, global float4 *xp,
                    global const uint *id)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float wi = inv_mass[i];
    uint bi = body[i];
    mz_body_info info = bodies[bi];
    if (wi == 0.0f || !(info.flags & MZ_BODY_COLLIDES))
        return;
    float4 xi = xp[i], di = xi - x[i];
    float4 sum = (float4)(0.0f);
    int count = 0;
    uint start = adj_start[id[i]], end = adj_start[id[i] + 1];
    uint cache[MZ_JOINED_CACHE], n_cached = min(end - start, (uint)MZ_JOINED_CACHE);
    for (uint k = 0; k < n_cached; k++)
        cache[k] = adj_other[start + k];
    MZ_NEIGHBOURS_BEGIN(g, cell_words, cell_first, sorted, xi, J, r2)
        uint j = slot[J];
        float4 xj = sorted[J];
        float reach = xi.w + xj.w;
        if (j == i || !(r2 < reach * reach) || !(r2 > 0.0f))
            continue;
        uint bj = body[j];
        mz_body_info other = bodies[bj];
        if (!(other.flags & MZ_BODY_COLLIDES) || (bi == bj && !(info.flags & MZ_BODY_SELF)) ||
            (info.flags & other.flags & MZ_BODY_FLUID))
            continue;
        float wj = inv_mass[j];
        if (mz_joined(id[j], cache, n_cached, start, end, adj_other))
            continue;
        float dist = sqrt(r2), pen = reach - dist, share = wi / (wi + wj);
        float4 nrm = mz_vec(xi - xj) / dist;
        float4 rel = mz_vec(di - (xj - x[j]));
        /* a fluid has no friction: its viscosity acts through XSPH */
        bool wet = (info.flags | other.flags) & MZ_BODY_FLUID;
        float mu_s = wet ? 0.0f : 0.5f * (info.static_friction + other.static_friction);
        float mu_k = wet ? 0.0f : 0.5f * (info.friction + other.friction);
        sum += share * (pen * nrm - mz_friction(rel, nrm, pen, mu_s, mu_k));
        count++;
    MZ_NEIGHBOURS_END
    if (count > 0)
        xp[i] = xi + mz_vec(sum) * (omega / (float)count);
}

/* A moving collider is met in its own frame at the substep's end: the point taken back by the
 * law (translated back, or turned back about the axis), the normal carried forward; friction
 * acts on the particle's displacement relative to the solid's surface there (its velocity
 * times dt). */
kernel void colliders(uint n, uint nc, global const mz_collider_dev *cs,
                      global const float4 *x, global const float *inv_mass, global float4 *xp,
                      int loads, global float4 *touch, float dt, mz_motion_now now)
{
    uint i = get_global_id(0);
    if (i >= n || inv_mass[i] == 0.0f)
        return;
    float4 p = xp[i];
    for (uint k = 0; k < nc; k++) {
        mz_collider_dev c = cs[k];
        float4 nrm, vel;
        float pen = p.w - mz_collider_meet(&c, &now, p, &nrm, &vel);
        float4 carried = vel * dt;
        if (!(pen > 0.0f))
            continue;
        float4 before = p;
        p += pen * nrm;
        p -= mz_friction(mz_vec(p - x[i] - carried), nrm, pen, c.static_friction, c.friction);
        if (loads)
            mz_touch(touch, i, k, p - before);
    }
    xp[i] = p;
}

/* The forces on the measured solids (src/solvers/pbd/loads.c): a work-group per load, over
 * the particles [first, n) (all in one process, a rank's owned ones), of −m_i Δ_i / dt² (Δ_i
 * the substep's corrections the solid made, the displacement its push gave the particle) and
 * their moments about about[load] at the particles' positions; a fixed tree. owner[load]: a
 * wall (0 .. 5: x_min, x_max, ...: the corrections along its axis that point away from it) or
 * MZ_OWNER_COLLIDER + the collider's index (its touch slots). Into sums, 6 floats a load:
 * force, torque. */
kernel __attribute__((reqd_work_group_size(MZ_LOAD_GROUP, 1, 1)))
void pbd_load_sums(uint first, uint n, global const int *owner, global const float4 *about,
                   global const float *inv_mass, global const float4 *xp,
                   global const float4 *touch, global const float4 *wall_corr, float inv_dt2,
                   global float *sums)
{
    local float8 part[MZ_LOAD_GROUP];
    const uint l = get_group_id(0), t = get_local_id(0);
    const int o = owner[l];
    const float4 c = about[l];
    float4 f = (float4)(0.0f), m = (float4)(0.0f);
    for (uint i = first + t; i < n; i += MZ_LOAD_GROUP) {
        float w = inv_mass[i];
        if (w == 0.0f)
            continue;
        float4 d = (float4)(0.0f);
        if (o < 6) {
            int axis = o / 2;
            float da = axis == 0 ? wall_corr[i].x : axis == 1 ? wall_corr[i].y : wall_corr[i].z;
            bool away = (o % 2 == 0) ? da > 0.0f : da < 0.0f;
            if (away)
                d = axis == 0 ? (float4)(da, 0.0f, 0.0f, 0.0f)
                    : axis == 1 ? (float4)(0.0f, da, 0.0f, 0.0f) : (float4)(0.0f, 0.0f, da, 0.0f);
        } else {
            float id = (float)(o - 6 + 1);
            float4 t0 = touch[2 * i], t1 = touch[2 * i + 1];
            if (t0.w == id)
                d += mz_vec(t0);
            if (t1.w == id)
                d += mz_vec(t1);
        }
        if (d.x == 0.0f && d.y == 0.0f && d.z == 0.0f)
            continue;
        float4 fi = -(inv_dt2 / w) * d;
        f += fi;
        m += cross(mz_vec(xp[i] - c), fi);
    }
    mz_load_total(part, t, f, m, sums + 6 * l);
}

/* A distributed rank (src/solvers/pbd/pbf_dist.c, pbf_dist_reach): each owned particle's
 * neighbour query, made at its position now, reads the layers c − 1 .. c + 1 of its cell c
 * (within the grid); the window the last build filled holds the layers [wlo, whi). The
 * smallest id of a particle whose query reaches beyond it goes to far[0] (a non-finite
 * position is the health check's). */
kernel void pbd_reach(uint n, mz_grid_desc g, int wlo, int whi, global const float4 *xp,
                      global const uint *id, volatile global uint *far)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 x = xp[i];
#if MZ_DIM == 2
    x.z = 0.0f;
#endif
    if (!isfinite(x.x) || !isfinite(x.y) || !isfinite(x.z))
        return;
    int c = MZ_SLAB_AXIS(mz_cell_coord(&g, x)), layers = MZ_SLAB_AXIS(g.dims);
    if (max(c - 1, 0) < wlo || min(c + 1, layers - 1) >= whi)
        atomic_min(far, id[i]);
}
