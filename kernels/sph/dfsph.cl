/* Divergence-free SPH (Bender & Koschier 2015, 2017) on the shared neighbour grid and the SPH
 * boundary particles. A step (src/solvers/sph/dfsph.c):
 *
 *   grid → density, stiffness factor α and neighbour lists → divergence-free solve (Dρ/Dt → 0;
 *   its last pass also viscosity, gravity: dfsph_forces_error) → step size → v += dt a
 *   → constant-density solve (ρ* → ρ0) → x += dt v
 *
 * Only dfsph_density_alpha walks the grid's 27 cells (some 216 candidates in 3D); it writes each
 * particle's neighbours within h, fluid and wall, into lists that the dozen passes after it read
 * (about 33 each): the step took 3.4× less device time on the peer's dam break than when every
 * pass walked the grid, with bit-identical results (same neighbours, same order).
 *
 * Both solves are the same two kernels: dfsph_error predicts each particle's error (its density
 * change rate, or its density at the end of the step) and the stiffness k that would undo it
 * alone, and sums the errors per work-group; dfsph_apply changes the velocities by the pressure
 * accelerations of those stiffnesses, −Σ_j m (k_i/ρ_i + k_j/ρ_j) ∇W_ij − Σ_b m_b (k_i/ρ_i) ∇W_ib
 * (times 1/dt for the density solve). Every sum runs over neighbours in the grid's fixed order
 * and the error sums are of integers: deterministic, and the same however the particles are
 * split. Boundary particles (mass m_b, at
 * rest) enter the density, the factor and the rates. They are the fluid lattice continued into
 * the walls, so they push as fluid at the particle's own pressure would (k_b/ρ_b = k_i/ρ_i, as
 * the mirror of Adami et al. 2012): 2 m_b (k_i/ρ_i) ∇W_ib. With Akinci's one-sided factor 1 a
 * particle against a wall pushed its fluid neighbours twice as hard as the wall pushed it, and
 * a tank at rest bounced itself apart. The walls' terms in the solves come from the sum the
 * density pass makes for α, G_b,i = Σ_b m_b ∇W_ib (kept a step): the rate's Σ_b m_b v_i·∇W_ib
 * = v_i·G_b,i (resting walls; moving ones are summed pair by pair, with their velocities) and
 * the apply's 2 (k_i/ρ_i) G_b,i, one dot product where each pass walked the wall list (other
 * round-off, the same sums). Helpers: dfsph.clh; the passes on CPU devices, eight particles at
 * a time: dfsph_lanes.clh. */
#include "common/common.clh"
#include "grid/grid.clh"
#include "grid/neighbour_list.clh"
#include "common/walls.clh"
#include "sph/sph_kernels.clh"
#include "sph/step_size.clh"
#include "sph/sph_lanes.clh"
#include "sph/dfsph.clh"
#include "sph/dfsph_lanes.clh"

/* Particle i's error pass after its fluid pairs' rate: the walls' rate, its error (returned),
 * its stiffness into k_out and k/ρ into kq_out. */
inline float mz_dfsph_error_end(uint i, float4 xi, float4 vi, float rate, int density, float dt,
                                float warm, float dt_last, float dt_before, const mz_sph *P,
                                global const float *rho, global const float *alpha,
                                uint stride, global const uint *bl, global const uint *bc,
                                global const float4 *bx, global const float *bm,
                                global const float *K, global float *kprev,
                                global float *k_out, MZ_WALL_MOTION, global float *kq_out,
                                global const float4 *gw)
{
    if (moving) {
        MZ_LIST_BEGIN(bl, bc, stride, i, bx, xi, b, r2)
            rate += bm[b] *
                    mz_dot3(vi - MZ_WALL_V(b), mz_dfsph_grad(P, mz_vec(xi - bx[b]), r2));
        MZ_LIST_END
    } else { /* resting walls: Σ_b m_b v_i·∇W_ib = v_i·G_i */
        rate += mz_dot3(vi, gw[i]);
    }
    float a = alpha[i], k, e, kappa;
    MZ_DFSPH_STIFFNESS_(float, density, dt, warm, dt_last, dt_before, P, rate, a, rho[i], K[i],
                        kprev[i], e, k, kappa)
    if (warm > 0.0f && density)
        kprev[i] = kappa;
    k_out[i] = k;
    kq_out[i] = k / rho[i];
    return e;
}

#if MZ_LANES && !MZ_SLABS
/* The rest of an error pass for the eight particles i .. e − 1 that work-item i leads (CPU
 * lanes), after their fluid rates: a whole eight with resting walls in lanes too
 * (mz_dfsph_error8), else a particle at a time; their errors' fixed-point sum. */
inline ulong2 mz_dfsph_errors_eight(uint i, uint e, const float *rates, int density, float dt,
                                    float warm, float dt_last, float dt_before, float unit,
                                    const mz_sph *P, global const float4 *x,
                                    global const float4 *v, global const float *rho,
                                    global const float *alpha, uint stride,
                                    global const uint *bl, global const uint *bc,
                                    global const float4 *bx, global const float *bm,
                                    global const float *K, global float *kprev,
                                    global float *k_out, MZ_WALL_MOTION, global float *kq_out,
                                    global const float4 *gw)
{
    if (e == i + 8u && !moving)
        return mz_dfsph_error8(i, vload8(0, rates), density, dt, warm, dt_last, dt_before, unit,
                               P, v, rho, alpha, K, kprev, k_out, kq_out, gw);
    ulong2 fixed = (ulong2)(0);
    for (uint q = i; q < e; q++)
        fixed += mz_dfsph_fixed(mz_dfsph_error_end(q, x[q], v[q], rates[q - i], density, dt,
                                                   warm, dt_last, dt_before, P, rho, alpha,
                                                   stride, bl, bc, bx, bm, K, kprev, k_out,
                                                   moving, bv, ba, kq_out, gw),
                                unit);
    return fixed;
}
#endif

/* ρ_i by summation and the stiffness factor α_i = ρ_i / ((G + 2 G_b)·(G + G_b) + Σ_j |m ∇W_ij|²),
 * G = Σ_j m ∇W_ij, G_b = Σ_b m_b ∇W_ib: the k_i = α_i × (error) that undoes particle i's error
 * when it alone pushes (its neighbours and the walls). A particle with fewer than
 * min_neighbours neighbours (a splash, the edge of a sheet) gets −α_i: the divergence solve
 * leaves it alone (its rate says nothing about compression).
 * warm > 0 (where the error pass runs a particle a work-item and computes its gradients): also
 * the divergence solve's warm error pass (dfsph_error's with this warm and dt_last) from v and
 * that solve's last total Kv into k_out and kq_out, its fluid rate summed pair by pair in the
 * walk (the same pairs in the same order: the same bits). On an H100 at 10^7 this pass took
 * 1.14 ms more a step and saved the 1.70 ms error pass (docs/benchmarks.md, session 30). */
kernel void dfsph_density_alpha(uint n, mz_sph P, int min_neighbours, mz_grid_desc g,
                                global const uint *cs, global const uint *ce,
                                global const float4 *x, MZ_BOUNDARY_PARAMS, uint stride,
                                uint cap, global uint *nl, global uint *nc, global uint *bl,
                                global uint *bc, global uint *overflow, global float *rho_out,
                                global float *alpha_out, global float4 *gw, float warm,
                                float dt_last, global const float4 *v, global const float *Kv,
                                global float *k_out, global float *kq_out, MZ_WALL_MOTION)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    if (!g.hashed) { /* a cell at a time, by its first particle */
        const uint hi = mz_cell_lead(&g, cs, ce, x, i, n);
        if (hi)
            mz_dfsph_density_cell(&P, min_neighbours, i, hi, &g, cs, ce, x, gb, bcs, bce, bx,
                                  bm, nb, stride, cap, nl, nc, bl, bc, overflow, rho_out,
                                  alpha_out, gw);
        return;
    }
#endif
    float4 xi = x[i], grad_sum = (float4)(0.0f), vi = warm > 0.0f ? v[i] : (float4)(0.0f);
    float sum = 0.0f, grad2 = 0.0f, rate = 0.0f;
    uint count = 0;
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xi, j, r2)
        sum += mz_poly6_unscaled(&P, r2);
        if (j == i)
            continue;
        float4 w = mz_dfsph_grad(&P, mz_vec(xi - x[j]), r2), gw = P.mass * w;
        grad_sum += gw;
        grad2 += mz_dot3(gw, gw);
        if (warm > 0.0f) /* the divergence solve's warm pass: its rate, pair by pair */
            rate += P.mass * mz_dot3(vi - v[j], w);
        mz_list_put(nl, cap, stride, i, &count, j);
    MZ_NEIGHBOURS_END
    mz_dfsph_finish(&P, i, xi, min_neighbours, sum, grad_sum, grad2, count, gb, bcs, bce, bx, bm,
                    nb, stride, cap, nc, bl, bc, overflow, rho_out, alpha_out, false, 0.0f,
                    (float4)(0.0f), 0u, gw);
    if (warm > 0.0f) /* (the divergence solve reads no κ before last: k_out stands in) */
        mz_dfsph_error_end(i, xi, vi, rate, 0, dt_last, warm, dt_last, dt_last, &P, rho_out,
                           alpha_out, stride, bl, bc, bx, bm, Kv, k_out, k_out, moving, bv, ba,
                           kq_out, gw);
}

#define MZ_DFSPH_FORCES_IN                                                                     \
    uint n, float dt_last, mz_sph P, mz_frame frame, mz_walls walls, int penalty,              \
        global const float4 *x, global const float4 *v, global const float *rho,               \
        MZ_LIST_PARAMS, global float4 *acc, global float *a2, int rest_out,                    \
        global float4 *wall_rest, MZ_WALL_MOTION
#define MZ_DFSPH_FORCES_ARGS                                                                   \
    n, dt_last, P, frame, walls, penalty, x, v, rho, stride, nl, nc, bl, bc, bx, bm, acc, a2,  \
        rest_out, wall_rest, moving, bv, ba

/* Particle i's accelerations but pressure after its fluid pairs' sum a (walls_in: with its
 * walls' pairs, which no-slip walls leave as they are summed): viscosity (the fluid's and
 * Monaghan's artificial one, as WCSPH has them), the walls' friction and the penalty walls,
 * gravity, into acc, |a|² into a2 (+inf when not finite). dt_last: the last step's, for the
 * wall function's cap. */
inline void mz_dfsph_forces_at(uint i, float4 a, int walls_in, MZ_DFSPH_FORCES_IN)
{
    float4 xi = x[i], vi = v[i];
    float rho_i = rho[i];
    if (bc[i] > 0 && !walls_in) {
        /* Pressure 0, no gravity and no repulsion (P.wall_d 0): the walls' push is the
         * solves'; friction stays. */
        mz_wall_sum ws = mz_wall_sum_zero();
        ws.a = a;
        MZ_LIST_BEGIN(bl, bc, stride, i, bx, xi, b, r2)
            mz_sph_boundary(&P, &ws, mz_vec(xi - bx[b]), r2, bm[b], 0.0f, rho_i,
                            (float4)(0.0f), vi, MZ_WALL_V(b), (float4)(0.0f), mz_kgc_identity());
        MZ_LIST_END
        float4 pairs = ws.a;
        a = mz_sph_wall_accel(&P, &ws, vi, dt_last);
        if (rest_out) { /* for the forces on walls (dfsph_wall_loads) */
            float4 r = a - pairs;
            r.w = ws.lap;
            wall_rest[i] = r;
        }
    }
    if (penalty)
        a += mz_wall_accel(xi, vi, &walls);
    if (P.limit_accel)
        a = mz_limit_accel(a, P.accel_limit);
    a = mz_planar(a + mz_frame_accel(&frame, xi, vi));
    a.w = 0.0f;
    float aa = mz_dot3(a, a);
    acc[i] = a;
    a2[i] = isfinite(aa) ? aa : INFINITY;
}

#if MZ_LANES && !MZ_SLABS
/* The forces and fluid rates of the eight particles i .. e − 1 that work-item i leads (count:
 * their list lengths), their fluid pairs in lanes (mz_dfsph_forces8). */
inline void mz_dfsph_forces_eight(uint i, uint e, const uint *count, global const float *grad,
                                  uint plane, float *rates, MZ_DFSPH_FORCES_IN)
{
    /* resting no-slip walls (what mz_sph_wall_accel leaves as summed) in the lanes too */
    const int in_lanes =
        !moving && MZ_FRICTION_OF(P) == MZ_FRICTION_NO_SLIP && !MZ_KGC_ON(P) && !rest_out;
    uint bcount[8];
    mz_lanes_lead(i, n, bc, bcount); /* the same eight's wall list lengths */
    float4 fluid[8];
    mz_dfsph_forces8(&P, i, e, count, nl, stride, x, v, rho, in_lanes, bcount, bl, bx, bm,
                     fluid, grad, plane, rates);
    for (uint q = i; q < e; q++)
        mz_dfsph_forces_at(q, fluid[q - i], in_lanes, MZ_DFSPH_FORCES_ARGS);
}
#endif

/* The forces pass (every acceleration but pressure, mz_dfsph_forces_at) and the divergence
 * solve's error pass (dfsph_error's with density 0, warm 0 and dt_div, its sums in partial) in
 * one pass over the lists: each pair's viscosity and rate from one load of x_j and v_j, the
 * same sums in the same order as two passes made them (the same bits). The solve takes it for
 * each pass whose error decides whether it stops (dfsph_solve.c), so its last pass, after which
 * the velocities do not change, leaves the step's forces. On CPU devices eight particles a
 * work-item (the rates from the kept gradients where grad holds them). */
kernel void dfsph_forces_error(MZ_DFSPH_FORCES_IN, float dt_div, float unit,
                               global const float *alpha, global const float *K,
                               global float *k_out, global float *kq_out,
                               global const float4 *gw, global ulong2 *partial,
                               local ulong2 *scratch, global const float *grad, uint plane)
{
    uint i = get_global_id(0);
#if MZ_LANES && !MZ_SLABS
    uint count[8];
    const uint e_ = i < n ? mz_lanes_lead(i, n, nc, count) : 0u;
    (void)scratch;
    if (e_) {
        float rates[8];
        mz_dfsph_forces_eight(i, e_, count, grad, plane, rates, MZ_DFSPH_FORCES_ARGS);
        /* (the divergence solve reads no κ before last: k_out stands in) */
        partial[i >> 3] =
            mz_dfsph_errors_eight(i, e_, rates, 0, dt_div, 0.0f, dt_div, dt_div, unit, &P, x, v,
                                  rho, alpha, stride, bl, bc, bx, bm, K, k_out, k_out, moving,
                                  bv, ba, kq_out, gw);
    }
#else
    (void)grad;
    (void)plane;
    float e = 0.0f;
    if (i < n) {
        const float4 xi = x[i], vi = v[i];
        const float rho_i = rho[i];
        float4 a = (float4)(0.0f);
        float rate = 0.0f;
        MZ_LIST_BEGIN(nl, nc, stride, i, x, xi, j, r2)
            const float4 xj = x[j], vj = v[j];
            a += mz_sph_pair(&P, mz_vec(xi - xj), r2, mz_vec(vi - vj), rho_i, rho[j], 0.0f, 0.0f,
                             mz_kgc_identity());
            const float4 w = mz_dfsph_grad(&P, mz_vec(xi - xj), r2);
            rate += P.mass * mz_dot3(vi - vj, w);
        MZ_LIST_END
        mz_dfsph_forces_at(i, a, 0, MZ_DFSPH_FORCES_ARGS);
        /* (the divergence solve reads no κ before last: k_out stands in) */
        e = mz_dfsph_error_end(i, xi, vi, rate, 0, dt_div, 0.0f, dt_div, dt_div, &P, rho, alpha,
                               stride, bl, bc, bx, bm, K, k_out, k_out, moving, bv, ba, kq_out,
                               gw);
    }
    mz_dfsph_group_sum(e, unit, scratch, partial);
#endif
}

/* v += dt a. */
kernel void dfsph_predict(uint n, float dt, global const float4 *acc, global float4 *v)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 vi = mz_planar(v[i] + dt * acc[i]);
    vi.w = 0.0f;
    v[i] = vi;
}

/* One pass of a solve: each particle's rate Dρ_i/Dt = Σ_j m (v_i − v_j)·∇W_ij + Σ_b m_b
 * v_i·∇W_ib, and from it the error e_i and stiffness k_i:
 *   divergence (density == 0): e_i = dt max(Dρ_i/Dt, 0), k_i = α_i max(Dρ_i/Dt, 0), and 0 for
 *     a particle with too few neighbours;
 *   density (density == 1): e_i = max(ρ_i + dt Dρ_i/Dt − ρ0, 0), k_i = |α_i| e_i.
 * Only compression is corrected: a free surface may expand. A warm pass (warm > 0) starts from
 * the last steps' stiffness instead, where the particle is compressed (or its density rising)
 * now: the divergence solve from warm × K_i, the total its last solve applied; the density
 * solve from warm × min(κ_i min(dt, dt_last)², κ'_i min(dt, dt_before)²), κ_i = K_i/dt_last²
 * the pressure over ρ its last solve applied and κ'_i the one before (kprev, which it then
 * takes κ_i): a one-step spike (the correction of a compression left over, a short step's) is
 * not carried on, nor scaled up when the step grows. Per work-group sums of e_i into partial
 * (the kernel runs over whole groups of local size; items past n add 0), in fixed point
 * (mz_dfsph_fixed) so that any split of the particles, over ranks or groups, gives the same
 * sum. With grad (the lists' gradients kept) the pass reads them, or with fill (the step's
 * first pass) computes them and writes them there. */
/* Particle i's error pass (one a work-item): its rate, the error (returned) and stiffness. */
inline float mz_dfsph_error_at(uint i, int density, float dt, float warm,
                               float dt_last, float dt_before, const mz_sph *P,
                               global const float4 *x, global const float4 *v,
                               global const float *rho, global const float *alpha,
                               MZ_LIST_PARAMS, global const float *K, global float *kprev,
                               global float *k_out, MZ_WALL_MOTION, global float *grad,
                               uint plane, int fill, global float *kq_out,
                               global const float4 *gw)
{
    float4 xi = x[i], vi = v[i];
    float rate = 0.0f;
    if (grad && !fill) {
        for (uint k = 0; k < nc[i]; k++) {
            const uint at = MZ_LIST_AT_(k, i, stride), j = nl[at];
            rate += P->mass * mz_dot3(vi - v[j], mz_dfsph_grad_at(grad, plane, at));
        }
    } else {
        /* The next neighbour's position and velocity loaded a pair ahead, while this pair's
         * arithmetic runs: the same sums, an H100's error passes 3.8% faster (the apply's
         * 2.9%; docs/benchmarks.md, session 29). */
        const uint count = nc[i];
        uint jn = count ? nl[MZ_LIST_AT_(0u, i, stride)] : 0u;
        float4 xn = x[jn], vn = v[jn];
        for (uint k = 0; k < count; k++) {
            const uint at = MZ_LIST_AT_(k, i, stride);
            const float4 xj = xn, vj = vn;
            if (k + 1u < count) {
                jn = nl[MZ_LIST_AT_(k + 1u, i, stride)];
                xn = x[jn];
                vn = v[jn];
            }
            const float4 w = mz_dfsph_grad(P, mz_vec(xi - xj), mz_grid_dist2_(xj - xi));
            rate += P->mass * mz_dot3(vi - vj, w);
            if (grad) /* kept for the passes after this one */
                mz_dfsph_grad_put(grad, plane, at, w);
        }
    }
    return mz_dfsph_error_end(i, xi, vi, rate, density, dt, warm, dt_last, dt_before, P, rho,
                              alpha, stride, bl, bc, bx, bm, K, kprev, k_out, moving, bv, ba,
                              kq_out, gw);
}

kernel void dfsph_error(uint n, int density, float dt, float warm, float dt_last,
                        float dt_before, float unit, mz_sph P, global const float4 *x,
                        global const float4 *v, global const float *rho,
                        global const float *alpha, MZ_LIST_PARAMS, global const float *K,
                        global float *kprev, global float *k_out, global ulong2 *partial,
                        local ulong2 *scratch, MZ_WALL_MOTION, global float *grad,
                        uint plane, global float *kq_out, global const float4 *gw, int fill)
{
    uint i = get_global_id(0);
#if MZ_LANES && !MZ_SLABS
    /* Work-item 8m takes particles 8m .. 8m + 7 and writes their errors' fixed-point sum to
     * partial[m] (integers: the same total however they are grouped); no group sum, so no
     * barrier (PoCL ran the group's tree a work-item at a time). */
    uint count[8];
    const uint e_ = i < n ? mz_lanes_lead(i, n, nc, count) : 0u;
    (void)scratch;
    if (e_) {
        float rates[8];
        mz_dfsph_rates8(&P, i, e_, count, nl, stride, x, v, grad, plane, fill, rates);
        partial[i >> 3] = mz_dfsph_errors_eight(i, e_, rates, density, dt, warm, dt_last,
                                                dt_before, unit, &P, x, v, rho, alpha, stride,
                                                bl, bc, bx, bm, K, kprev, k_out, moving, bv, ba,
                                                kq_out, gw);
    }
#else
    float e = 0.0f;
    if (i < n)
        e = mz_dfsph_error_at(i, density, dt, warm, dt_last, dt_before, &P, x, v, rho,
                              alpha, stride, nl, nc, bl, bc, bx, bm, K, kprev, k_out, moving, bv,
                              ba, grad, plane, fill, kq_out, gw);
    mz_dfsph_group_sum(e, unit, scratch, partial);
#endif
}

/* The sum of partial[0 .. groups) by one work-group (integers: exact in any order). */
kernel void dfsph_sum(uint groups, global const ulong2 *partial, global ulong2 *total,
                      local ulong2 *scratch)
{
    uint lid = get_local_id(0), size = get_local_size(0);
    ulong2 s = (ulong2)(0);
    for (uint k = lid; k < groups; k += size)
        s += partial[k];
    scratch[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = size / 2; h > 0; h /= 2) {
        if (lid < h)
            scratch[lid] += scratch[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        total[0] = scratch[0];
}

/* The velocity change of the stiffnesses k (scale: 1/dt for the density solve, 1 for the
 * divergence solve), and their running total K (first: the total starts here). With forces on
 * walls measured (keep_s), S_i sums weight × k_i over the step's applies (s_first: the step's
 * first), weight = scale over the step the impulse belongs to (the divergence solve's to the
 * last step, which it ends; the density solve's to this one): the walls' pressure force on i is
 * −2 m_b (S_i/ρ_i) ∇W_ib. */
/* Particle i's apply after its fluid sum dv (fluid: NULL to sum it here). */
inline void mz_dfsph_apply_at(uint i, const float4 *fluid, float scale, int first,
                              const mz_sph *P, global const float4 *x, global const float *kq,
                              global const float *k, MZ_LIST_PARAMS, global float *K,
                              global float4 *v, int keep_s, int s_first, float weight,
                              global float *S, global const float *grad, uint plane,
                              global const float4 *gw)
{
    float4 xi = x[i], dv = (float4)(0.0f);
    float ki = kq[i];
    if (fluid) {
        dv = *fluid;
    } else if (grad) {
        for (uint q = 0; q < nc[i]; q++) {
            const uint at = MZ_LIST_AT_(q, i, stride), j = nl[at];
            dv += (P->mass * (ki + kq[j])) * mz_dfsph_grad_at(grad, plane, at);
        }
    } else { /* as the error pass: the next neighbour's position and k/ρ a pair ahead */
        const uint count = nc[i];
        uint jn = count ? nl[MZ_LIST_AT_(0u, i, stride)] : 0u;
        float4 xn = x[jn];
        float qn = kq[jn];
        for (uint q = 0; q < count; q++) {
            const float4 xj = xn;
            const float qj = qn;
            if (q + 1u < count) {
                jn = nl[MZ_LIST_AT_(q + 1u, i, stride)];
                xn = x[jn];
                qn = kq[jn];
            }
            dv += (P->mass * (ki + qj)) *
                  mz_dfsph_grad(P, mz_vec(xi - xj), mz_grid_dist2_(xj - xi));
        }
    }
    dv += (2.0f * ki) * gw[i]; /* Σ_b 2 m_b (k_i/ρ_i) ∇W_ib */
    v[i] -= scale * dv;
    K[i] = first ? k[i] : K[i] + k[i];
    if (keep_s)
        S[i] = (s_first ? 0.0f : S[i]) + weight * k[i];
}

kernel void dfsph_apply(uint n, float scale, int first, mz_sph P, global const float4 *x,
                        global const float *kq, global const float *k, MZ_LIST_PARAMS,
                        global float *K, global float4 *v, int keep_s, int s_first,
                        float weight, global float *S, global const float *grad, uint plane,
                        global const float4 *gw)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    uint count[8];
    const uint e = mz_lanes_lead(i, n, nc, count);
    if (!e)
        return;
    float4 dv[8];
    mz_dfsph_apply8(&P, i, e, count, nl, stride, x, kq, grad, plane, dv);
    for (uint q = i; q < e; q++)
        mz_dfsph_apply_at(q, &dv[q - i], scale, first, &P, x, kq, k, stride, nl, nc, bl, bc, bx,
                          bm, K, v, keep_s, s_first, weight, S, grad, plane, gw);
#else
    mz_dfsph_apply_at(i, NULL, scale, first, &P, x, kq, k, stride, nl, nc, bl, bc, bx, bm, K, v,
                      keep_s, s_first, weight, S, grad, plane, gw);
#endif
}

/* The fluid's force on each boundary particle of the measured solids (src/solvers/sph/
 * loads.c), element e being boundary particle elem[e], now in slot slot_of[elem[e]]. Pass 0,
 * after the forces pass (its velocities): minus what the walls' pairs gave the fluid there
 * (mz_sph_wall_pair with no pressure, as the forces pass takes them, plus b's share of the
 * non-pairwise rest by the viscous Laplacian). Pass 1, after the density solve, before the
 * positions move: plus the solves' pressure force on b, Σ_i m 2 m_b (S_i/ρ_i) ∇_i W_ib (S: the
 * impulses over the steps they belong to, dfsph_apply). Over steps of one length the solids'
 * forces add up to minus the walls' share of the fluid's change of momentum, over dt. A rank
 * of a distributed run takes the pairs of the fluid particles it owns (own_begin .. own_end − 1),
 * whose S and rest are its own; the ranks' sums add up to the force. */
kernel void dfsph_wall_loads(uint n_elems, int pass, float dt, mz_sph P, mz_grid_desc g,
                             global const uint *cs, global const uint *ce,
                             global const float4 *x, global const float4 *v,
                             global const float *rho, global const float4 *bx,
                             global const float *bm, global const uint *elem,
                             global const uint *slot_of, int rest_on,
                             global const float4 *rest, global const float *S,
                             global float4 *at, global float4 *force, MZ_WALL_MOTION,
                             uint own_begin, uint own_end)
{
    uint e = get_global_id(0);
    if (e >= n_elems)
        return;
    uint b = slot_of[elem[e]];
    float4 xb = bx[b];
    float m_b = bm[b];
    float4 f = pass ? force[e] : (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xb, i, r2)
#if MZ_SLABS
        if (i < own_begin || i >= own_end) /* a rank's own pairs (as sph_wall_loads) */
            continue;
#endif
        float r = sqrt(r2);
        if (r > P.r_min) {
            float4 dx = mz_vec(x[i] - xb);
            if (pass) {
                f += (P.mass * 2.0f * m_b * S[i] / rho[i]) * mz_dfsph_grad(&P, dx, r2);
            } else {
                mz_wall_pair q = mz_sph_wall_pair(&P, dx, r2, r, m_b, 0.0f, rho[i],
                                                  (float4)(0.0f), v[i], MZ_WALL_V(b),
                                                  (float4)(0.0f), mz_kgc_identity());
                f = f - P.mass * mz_wall_load_accel(&q, rest_on, rest, i);
            }
        }
    MZ_NEIGHBOURS_END
    f.w = 0.0f;
    at[e] = (float4)(xb.x, xb.y, xb.z, 0.0f);
    force[e] = f;
}

/* x += dt v, the domain clamp behind the walls (a clamped axis loses its velocity), and the
 * pressure the density solve applied, from its total stiffness K = κ dt²: κ ρ (the pressure
 * that gives the same acceleration in WCSPH's symmetric form, p/ρ² = κ/ρ), as its mean over the
 * frame's steps so far, each weighted by its length: p_sum = Σ κ ρ dt (from 0 at the frame's
 * first step), p = p_sum / frame_time. A step's κ is where its solve stopped (in a still tank
 * 4 iterations at one step, 40 at the next: the average error's stop leaves compression for the
 * next), the frame's mean the pressure the water stood on (docs/scene.md, DFSPH). */
kernel void dfsph_advect(uint n, float dt, mz_walls walls, global const float *rho,
                         global const float *K, global float4 *x, global float4 *v,
                         global float *p, global float *p_sum, int frame_first,
                         float frame_time)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 xi = x[i], vi = v[i];
    float4 xn = xi + dt * vi;
    xn.w = xi.w;
    float4 xc = mz_clamp_box(xn, walls.min, walls.max);
    v[i] = select(vi, (float4)(0.0f), isnotequal(xc, xn));
    x[i] = xc;
    const float sum = (frame_first ? 0.0f : p_sum[i]) + K[i] * rho[i] / dt;
    p_sum[i] = sum;
    p[i] = sum / frame_time;
}
