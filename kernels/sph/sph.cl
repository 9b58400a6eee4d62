/* Weakly compressible SPH and the one-pass "collapsed" SPH. Every kernel runs over particles in
 * the grid's sorted order; neighbour sums visit neighbours in a fixed order (deterministic).
 * Boundary particles, when the scene has them, are a second, static particle set with a grid of
 * its own (gb, bcs, bce, bx) and per-particle masses bm.
 *
 * Neighbour lists (src/solvers/sph/neighbour_list.h), where the solver keeps them (`lists`):
 * the density pass, the step's one grid walk, writes each particle's fluid and wall neighbours
 * into them, in the grid's order; the forces pass reads them, and walks the grid itself for a
 * particle whose list ran short. The same neighbours in the same order: the same sums. */

#include "common/common.clh"
#include "grid/grid.clh"
#include "grid/neighbour_list.clh"
#include "common/walls.clh"
#include "sph/sph_kernels.clh"
#include "sph/step_size.clh"
#include "sph/sph_lanes.clh"
#include "sph/sph_density.clh"

/* For the forces on walls (sph_wall_loads), walls other than no-slip: what mz_sph_wall_accel
 * added to i's acceleration beyond the pairs' sum (a, its result), and in w the sum of the
 * pairs' Laplacian shares, by which the loads spread it over the boundary particles. */
inline void mz_sph_wall_rest(global float4 *rest, uint i, float4 a, const mz_wall_sum *w)
{
    float4 r = a - w->a;
    r.w = w->lap;
    rest[i] = r;
}

/* Symplectic Euler: v += dt·a, x += dt·v; walls, the acceleration cap, gravity, and the domain
 * clamp behind it all (a clamped axis loses its velocity). Also |a|² for the adaptive step. */
inline void mz_sph_integrate(const mz_sph *P, float dt, float4 gravity, const mz_walls *w,
                             int penalty, float4 xi, float4 vi, float4 a, global float4 *x_out,
                             global float4 *v_out, global float *a2_out, uint i)
{
    if (penalty)
        a = a + mz_wall_accel(xi, vi, w);
    if (P->limit_accel)
        a = mz_limit_accel(a, P->accel_limit);
    a = mz_planar(a + gravity);
    a.w = 0.0f;
    float4 v = mz_planar(vi + dt * a);
    v.w = 0.0f;
    float a2 = a.x * a.x + a.y * a.y + a.z * a.z;
    if (!isfinite(a2) || !isfinite(v.x + v.y + v.z)) {
        /* Blown up: keep the particle where it was and say so through |a|² (the step-size
         * reduction stops the run), rather than letting the clamp park a NaN in a corner. */
        x_out[i] = xi;
        v_out[i] = v;
        a2_out[i] = INFINITY;
        return;
    }
    float4 x = xi + dt * v;
    float4 xc = mz_clamp_box(x, w->min, w->max);
    v = select(v, (float4)(0.0f), isnotequal(xc, x));
    x_out[i] = xc;
    v_out[i] = v;
    a2_out[i] = a2;
}

/* This step's density and pressure into rho_out, p. Summation: ρ from the neighbours.
 * Continuity: ρ carried from the last step, ρ += lag · Dρ/Dt with lag the last step's dt and
 * the rate from the velocities that step produced (the ones that moved the particles here: the
 * density update pairs with the position update, symplectic like the rest). */
#if MZ_LANES && !MZ_SLABS
/* Summation density for the particles lo .. hi − 1 of one cell (a dense grid's), eight at a
 * time (mz_cell_poly6_sums): the fluid's sums, and the walls' where the eight lie in one cell of
 * the wall grid too (the grids share their cell lines, so nearly always: rounding may put one
 * across a line; else one particle at a time). The same bits as mz_sph_density_at. */
inline void mz_sph_density_cell(const mz_sph *P, uint lo, uint hi, const mz_grid_desc *g,
                                global const uint *cs, global const uint *ce,
                                global const float4 *x, mz_grid_desc gb, global const uint *bcs,
                                global const uint *bce, global const float4 *bx,
                                global const float *bm, int nb, global float *rho_out,
                                global float *p, MZ_SPH_LISTS_OUT)
{
    for (uint s = lo; s < hi; s += 8) {
        const uint e = min(hi, s + 8);
        MZ_LANES_OF(s, e, x, self, slot, X, Y, Z)
        const int8 valid = as_int8(self < (uint8)e);
        float sums[8], bsums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        uint counts[8], bcounts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        mz_cell_poly6_sums(P, X, Y, Z, valid, e - s, mz_p0, s, g, cs, ce, x, NULL, lists,
                           stride, cap, nl, sums, counts);
        bool walls_together = nb > 0 && !gb.hashed;
        const uint key0 = mz_cell_key(&gb, mz_cell_coord(&gb, mz_p0));
        for (uint i = s + 1; walls_together && i < e; i++)
            walls_together = mz_cell_key(&gb, mz_cell_coord(&gb, x[i])) == key0;
        if (walls_together)
            mz_cell_poly6_sums(P, X, Y, Z, valid, e - s, mz_p0, s, &gb, bcs, bce, bx, bm, lists,
                               stride, cap, bl, bsums, bcounts);
        for (uint i = s; i < e; i++) {
            const uint l = i - s;
            if (nb > 0 && !walls_together) {
                const float4 xi = x[i];
                MZ_NEIGHBOURS_BEGIN(gb, bcs, bce, bx, xi, b, r2)
                    if (lists)
                        mz_list_put(bl, cap, stride, i, &bcounts[l], b);
                    bsums[l] += bm[b] * mz_poly6_unscaled(P, r2);
                MZ_NEIGHBOURS_END
            }
            if (lists) {
                mz_list_close(nc, cap, overflow, i, counts[l]);
                mz_list_close(bc, cap, overflow, i, bcounts[l]);
            }
            float r = P->mass * P->poly6 * sums[l];
            if (nb > 0)
                r += P->poly6 * bsums[l];
            rho_out[i] = r;
            p[i] = mz_tait(P, r);
        }
    }
}
#endif

kernel void sph_density(MZ_SPH_DENSITY_IN)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    /* a cell at a time, by its first particle */
    if (!P.continuity && !MZ_KGC_ON(P) && !g.hashed && !windows) {
        const uint hi = mz_cell_lead(&g, cs, ce, x, i, n);
        if (hi)
            mz_sph_density_cell(&P, i, hi, &g, cs, ce, x, gb, bcs, bce, bx, bm, nb, rho_out, p,
                                lists, stride, cap, windows, fstride, nl, nc, bl, bc,
                                overflow);
        return;
    }
#endif
    float4 gravity = mz_frame_accel(&frame, x[i], v[i]);
    mz_kgc S = (mz_kgc)(0.0f);
    float r = P.continuity
                  ? rho[i] + lag * mz_sph_density_rate(&P, i, x[i], v[i], rho[i], gravity, g,
                                                       cs, ce, x, v, rho, gb, bcs, bce, bx, bm,
                                                       nb, moving, bv, ba, &S, lists, stride,
                                                       cap, windows, fstride, nl, nc, bl, bc,
                                                       overflow, MZ_SUMS_ALL)
                  : mz_sph_density_at(&P, i, x[i], g, cs, ce, x, gb, bcs, bce, bx, bm, nb, &S,
                                      lists, stride, cap, windows, fstride, nl, nc, bl, bc,
                                      overflow);
    rho_out[i] = r;
    p[i] = mz_tait(&P, r);
    if (MZ_KGC_ON(P))
        kgc[i] = mz_kgc_from(&P, S, r);
}

/* Forces from this step's ρ and p, then the update into x_out, v_out. */
#define MZ_SPH_FORCES_IN                                                                       \
    uint n, float dt, mz_sph P, mz_frame frame, mz_walls walls, int penalty, mz_grid_desc g,   \
        global const uint *cs, global const uint *ce, global const float4 *x,                  \
        global const float4 *v, global const float *rho, global const float *p,               \
        mz_grid_desc gb, global const uint *bcs, global const uint *bce,                       \
        global const float4 *bx, global const float *bm, int nb, MZ_WALL_MOTION,               \
        global float4 *x_out, global float4 *v_out, global float *a2_out, int rest_out,        \
        global float4 *wall_rest, global const mz_kgc *kgc, MZ_SPH_LISTS_IN
#define MZ_SPH_FORCES_ARGS                                                                     \
    n, dt, P, frame, walls, penalty, g, cs, ce, x, v, rho, p, gb, bcs, bce, bx, bm, nb, moving, \
        bv, ba, x_out, v_out, a2_out, rest_out, wall_rest, kgc, lists, stride, cap, windows,    \
        fstride, nl, nc, bl, bc

/* Particle i's forces and update. fluid: its fluid pairs' sum when the caller made it already
 * (sph_lanes.clh), else NULL. */
inline void mz_sph_forces_at(uint i, const float4 *fluid, MZ_SPH_FORCES_IN)
{
    float4 xi = x[i], vi = v[i];
    float4 gravity = mz_frame_accel(&frame, xi, vi);
    float rho_i = rho[i];
    const mz_kgc Ci = MZ_KGC_ON(P) ? kgc[i] : mz_kgc_identity();
    float pr_i = p[i] / (rho_i * rho_i);
    float4 a = (float4)(0.0f);
    /* One neighbour's terms, from the list or the grid (the same neighbours, in one order). */
#define MZ_SPH_FLUID_TERM(J, R2)                                                               \
    if (J != i) {                                                                              \
        float4 dx = xi - x[J], vij = vi - v[J];                                                \
        dx.w = 0.0f;                                                                           \
        vij.w = 0.0f;                                                                          \
        a = a + mz_sph_pair(&P, dx, R2, vij, rho_i, rho[J], pr_i, p[J],                        \
                            MZ_KGC_ON(P) ? 0.5f * (Ci + kgc[J]) : Ci);                         \
    }
#define MZ_SPH_WALL_TERM(B, R2)                                                                \
    {                                                                                          \
        float4 dx = xi - bx[B];                                                                \
        dx.w = 0.0f;                                                                           \
        mz_sph_boundary(&P, &ws, dx, R2, bm[B], p[i], rho_i, gravity, vi, MZ_WALL_V(B),        \
                        MZ_WALL_A(B), Ci);                                                     \
    }
    const bool listed = lists && mz_list_holds(nc[i], cap, windows) && (nb == 0 || bc[i] <= cap);
    if (fluid) {
        a = *fluid;
    } else if (listed && windows) {
        MZ_MASK_LIST_BEGIN(nl, fstride, windows, nc[i], i, x, xi, j, r2)
            MZ_SPH_FLUID_TERM(j, r2)
        MZ_MASK_LIST_END
    } else if (listed) {
        MZ_LIST_BEGIN(nl, nc, stride, i, x, xi, j, r2)
            MZ_SPH_FLUID_TERM(j, r2)
        MZ_LIST_END
    } else {
        MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xi, j, r2)
            MZ_SPH_FLUID_TERM(j, r2)
        MZ_NEIGHBOURS_END
    }
    if (nb > 0) {
        mz_wall_sum ws = mz_wall_sum_zero();
        ws.a = a; /* the fluid's sum first, then each boundary particle's: the order as ever */
        if (listed) {
            MZ_LIST_BEGIN(bl, bc, stride, i, bx, xi, b, r2)
                MZ_SPH_WALL_TERM(b, r2)
            MZ_LIST_END
        } else {
            MZ_NEIGHBOURS_BEGIN(gb, bcs, bce, bx, xi, b, r2)
                MZ_SPH_WALL_TERM(b, r2)
            MZ_NEIGHBOURS_END
        }
        a = mz_sph_wall_accel(&P, &ws, vi, dt);
        if (rest_out)
            mz_sph_wall_rest(wall_rest, i, a, &ws);
    }
#undef MZ_SPH_FLUID_TERM
#undef MZ_SPH_WALL_TERM
    mz_sph_integrate(&P, dt, gravity, &walls, penalty, xi, vi, a, x_out, v_out, a2_out, i);
}

/* Forces from this step's ρ and p, then the update into x_out, v_out. On CPU devices with lists
 * (MZ_LANES, kgc off) work-item 8m takes particles 8m .. 8m + 7, their fluid pairs eight at
 * a time (mz_lanes_fluid_forces: the same bits); a particle whose list ran short walks the grid
 * alone. */
kernel void sph_forces(MZ_SPH_FORCES_IN)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    if (!MZ_KGC_ON(P) && lists && !windows) {
        uint count[8];
        const uint e = mz_lanes_lead(i, n, nc, count);
        if (!e)
            return;
        for (uint k = i; k < e; k++) /* a list that ran short: the grid, alone (below) */
            if (!(nc[k] <= cap && (nb == 0 || bc[k] <= cap)))
                count[k - i] = 0u;
        float4 fluid[8];
        mz_lanes_fluid_forces(&P, i, e, count, nl, stride, x, v, rho, p, fluid);
        for (uint k = i; k < e; k++) {
            const bool listed = nc[k] <= cap && (nb == 0 || bc[k] <= cap);
            mz_sph_forces_at(k, listed ? &fluid[k - i] : NULL, MZ_SPH_FORCES_ARGS);
        }
        return;
    }
#endif
    mz_sph_forces_at(i, NULL, MZ_SPH_FORCES_ARGS);
}

#include "sph/csph.clh"

/* Collapsed SPH's step: this step's density and the forces from last step's carried forward, in
 * one pass over the grid (sph/csph.clh). */
kernel void csph_step(uint n, float dt, float lag, mz_sph P, mz_frame frame, mz_walls walls,
                      int penalty, mz_grid_desc g, global const uint *cs, global const uint *ce,
                      global const float4 *x, global const float4 *v,
                      global const float *rho_prev, global const float *drho_prev,
                      mz_grid_desc gb, global const uint *bcs, global const uint *bce,
                      global const float4 *bx, global const float *bm, int nb, MZ_WALL_MOTION,
                      MZ_CSPH_OUT)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    if (!g.hashed) { /* a cell at a time, by its first particle */
        const uint hi = mz_cell_lead(&g, cs, ce, x, i, n);
        if (hi)
            mz_csph_cell(&P, i, hi, dt, lag, frame, &walls, penalty, &g, cs, ce, x, v, rho_prev,
                         drho_prev, gb, bcs, bce, bx, bm, nb, moving, bv, ba, MZ_CSPH_OUT_ARGS);
        return;
    }
#endif
    float4 xi = x[i], vi = v[i];
    float4 gravity = mz_frame_accel(&frame, xi, vi);
    float rho_i = mz_csph_density_now(rho_prev[i], drho_prev[i], lag);
    float p_i = mz_tait(&P, rho_i);
    float pr_i = p_i / (rho_i * rho_i);
    float4 a = (float4)(0.0f);
    float sum = 0.0f, drho = 0.0f;
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xi, j, r2)
        sum += mz_poly6_unscaled(&P, r2);
        if (j == i)
            continue;
        float4 dx = xi - x[j], vij = vi - v[j];
        dx.w = 0.0f;
        vij.w = 0.0f;
        float rho_j = mz_csph_density_now(rho_prev[j], drho_prev[j], lag);
        a = a + mz_sph_pair(&P, dx, r2, vij, rho_i, rho_j, pr_i, mz_tait(&P, rho_j),
                            mz_kgc_identity());
        float r = sqrt(r2);
        if (r > P.r_min) {
            float hr = P.h - r;
            drho += P.mass * (P.spiky_grad * hr * hr / r) *
                    (vij.x * dx.x + vij.y * dx.y + vij.z * dx.z);
        }
    MZ_NEIGHBOURS_END
    mz_csph_finish(&P, i, dt, gravity, &walls, penalty, xi, vi, rho_i, p_i, a, sum, drho, gb, bcs,
                   bce, bx, bm, nb, moving, bv, ba, MZ_CSPH_OUT_ARGS);
}

/* Tests: the kernels at radii r[k] (W, |∇W|, ∇²W), and per-particle lattice sums. */
kernel void sph_probe(uint m, mz_sph P, global const float *r, global float4 *out)
{
    uint k = get_global_id(0);
    if (k >= m)
        return;
    float rk = r[k];
    float hr = P.h - rk;
    float w = rk < P.h ? P.poly6 * mz_poly6_unscaled(&P, rk * rk) : 0.0f;
    float grad = rk < P.h ? -P.spiky_grad * hr * hr : 0.0f;
    float lap = rk < P.h ? P.visc_lap * hr : 0.0f;
    out[k] = (float4)(w, grad, lap, 0.0f);
}

/* Σ_j V W_ij and Σ_j V ∇W_ij (V = m/ρ0): 1 and 0 inside a uniform lattice. */
kernel void sph_sums(uint n, mz_sph P, mz_grid_desc g, global const uint *cs,
                     global const uint *ce, global const float4 *x, global float4 *out)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 xi = x[i];
    float vol = P.mass / P.rest_density, sum = 0.0f;
    float4 grad = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xi, j, r2)
        sum += mz_poly6_unscaled(&P, r2);
        float r = sqrt(r2);
        if (r > P.r_min) {
            float4 dx = xi - x[j];
            dx.w = 0.0f;
            float hr = P.h - r;
            grad = grad + (vol * P.spiky_grad * hr * hr / r) * dx;
        }
    MZ_NEIGHBOURS_END
    grad.w = vol * P.poly6 * sum;
    out[i] = grad;
}

/* The fluid's force on each boundary particle of the solids whose forces are measured
 * (src/solvers/sph/loads.c): element e is boundary particle elem[e] (in the builder's order),
 * now in slot slot_of[elem[e]] of the boundary grid's order, and its force is
 * −Σ_i m (a_ib + rest_i lap_ib / lap_i) over the fluid particles i within h: a_ib the pair's
 * terms the forces pass added to i's acceleration (mz_sph_wall_pair) and, for walls other than
 * no-slip, b's share by the viscous Laplacian of what mz_sph_wall_accel made of i's pairs beyond
 * their sum (rest_i, lap_i in its w; rest_on 0: no-slip, none). So the forces on all solids sum
 * to minus what the walls gave the fluid. Run after the step's forces pass, on the state it
 * read (x, v, and ρ, p; collapsed SPH: ρ carried forward by lag as its pass did).
 *
 * A rank of a distributed run (MZ_SLABS) takes only the pairs of the fluid particles it owns
 * (slots own_begin .. own_end − 1): every pair is then counted by one rank, whose particle's
 * rest is its own, and the ranks' sums add up to the force (src/solvers/observe_dist.c). */
kernel void sph_wall_loads(uint n_elems, mz_sph P, mz_frame frame, int collapsed, float lag,
                           mz_grid_desc g, global const uint *cs, global const uint *ce,
                           global const float4 *x, global const float4 *v,
                           global const float *rho, global const float *drho,
                           global const float *p, global const float4 *bx,
                           global const float *bm, MZ_WALL_MOTION, global const uint *elem,
                           global const uint *slot_of, int rest_on, global const float4 *rest,
                           global const mz_kgc *kgc, global float4 *at, global float4 *force,
                           uint own_begin, uint own_end)
{
    uint e = get_global_id(0);
    if (e >= n_elems)
        return;
    uint b = slot_of[elem[e]];
    float4 xb = bx[b], vb = MZ_WALL_V(b), ab = MZ_WALL_A(b);
    float m_b = bm[b];
    float4 f = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xb, i, r2)
#if MZ_SLABS
        if (i < own_begin || i >= own_end)
            continue;
#endif
        float r = sqrt(r2);
        if (r > P.r_min) {
            float rho_i = collapsed ? mz_csph_density_now(rho[i], drho[i], lag) : rho[i];
            float p_i = collapsed ? mz_tait(&P, rho_i) : p[i];
            float4 dx = x[i] - xb, vi = v[i];
            float4 gravity = mz_frame_accel(&frame, x[i], vi);
            dx.w = 0.0f;
            vi.w = 0.0f;
            const mz_kgc C_i = MZ_KGC_ON(P) && !collapsed ? kgc[i] : mz_kgc_identity();
            mz_wall_pair q =
                mz_sph_wall_pair(&P, dx, r2, r, m_b, p_i, rho_i, gravity, vi, vb, ab, C_i);
            f = f - P.mass * mz_wall_load_accel(&q, rest_on, rest, i);
        }
    MZ_NEIGHBOURS_END
    f.w = 0.0f;
    at[e] = (float4)(xb.x, xb.y, xb.z, 0.0f);
    force[e] = f;
}
