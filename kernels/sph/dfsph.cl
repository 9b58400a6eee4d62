/* Divergence-free SPH (Bender & Koschier 2015, 2017) on the shared neighbour grid and the SPH
 * boundary particles. A step (src/solvers/sph/dfsph.c):
 *
 *   grid → density, stiffness factor α and neighbour lists → divergence-free solve (Dρ/Dt → 0)
 *   → viscosity, gravity → step size → v += dt a → constant-density solve (ρ* → ρ0) → x += dt v
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
 * a tank at rest bounced itself apart. */
#include "common/common.clh"
#include "grid/grid.clh"
#include "grid/neighbour_list.clh"
#include "common/walls.clh"
#include "sph/sph_kernels.clh"
#include "sph/step_size.clh"
#include "sph/sph_lanes.clh"

#define MZ_BOUNDARY_PARAMS                                                                     \
    mz_grid_desc gb, global const uint *bcs, global const uint *bce, global const float4 *bx, \
        global const float *bm, int nb

/* The step's neighbour lists (grid/neighbour_list.clh), fluid (nl, nc) and wall particles (bl,
 * bc), one stride; then the wall particles' positions and masses. */
#define MZ_LIST_PARAMS                                                                         \
    uint stride, global const uint *nl, global const uint *nc, global const uint *bl,          \
        global const uint *bc, global const float4 *bx, global const float *bm

/* ∇_i W_ij for dx = x_i − x_j (w and, in 2D, z zero): the renormalised spiky gradient. */
inline float4 mz_dfsph_grad(const mz_sph *P, float4 dx, float r2)
{
    float r = sqrt(r2);
    if (r <= P->r_min)
        return (float4)(0.0f);
    float hr = P->h - r;
    return (P->spiky_grad * hr * hr / r) * dx;
}

/* The list's gradients (DFSPH_GRADS in src/solvers/sph/dfsph.c): ∇W_ij of entry `at` of the
 * fluid list, each component a plane of the list's shape. The density pass writes them, the
 * solves read them instead of computing them again: the same floats. */
inline void mz_dfsph_grad_put(global float *grad, uint plane, uint at, float4 w)
{
    grad[at] = w.x;
    grad[plane + at] = w.y;
    grad[2 * plane + at] = w.z;
}

inline float4 mz_dfsph_grad_at(global const float *grad, uint plane, uint at)
{
    return (float4)(grad[at], grad[plane + at], grad[2 * plane + at], 0.0f);
}

/* The gradient ∇_i W_ij = gf d of eight lanes (mz_dfsph_grad's float operations; gf 0 at
 * r ≤ r_min), for d = x_i − x_j (z 0 in 2D, as mz_vec makes it). */
#define MZ_DFSPH_GRAD8(P, R2, GF)                                                              \
    const float8 mz_r_ = sqrt(R2), mz_hr_ = (P)->h - mz_r_;                                    \
    const float8 GF = select((float8)0.0f, (P)->spiky_grad * mz_hr_ * mz_hr_ / mz_r_,          \
                             mz_r_ > (float8)((P)->r_min));
#if MZ_DIM == 2
#define MZ_DFSPH_DZ8(Z, ZJ) ((float8)0.0f)
#else
#define MZ_DFSPH_DZ8(Z, ZJ) ((Z) - (ZJ))
#endif

/* An error e ≥ 0 in fixed point for the solves' sums: q = e · unit (unit a power of two near
 * 2^40 / ρ0, so the product is exact), at most 2^56 − 1 (also for +inf), as the halves
 * (q >> 24, q mod 2^24): each under 2^32, so 2^32 particles' add up in 64 bits. Integer
 * sums do not depend on their order: a distributed run's ranks add theirs (MPI_Allreduce) and
 * get the sum of one process, bit for bit. */
inline ulong2 mz_dfsph_fixed(float e, float unit)
{
    float r = e * unit;
    ulong q = r < 72057594037927936.0f ? convert_ulong(r) : 72057594037927935UL;
    return (ulong2)(q >> 24, q & 0xFFFFFFUL);
}

/* Particle i's wall sums and its results: ρ_i, α_i (see dfsph_density_alpha), the wall list.
 * walls: the wall sums given (bsum, grad_wall, bcount: a cell's lanes, mz_dfsph_walls_cell,
 * the list written), else walked here. */
inline void mz_dfsph_finish(const mz_sph *P, uint i, float4 xi, int min_neighbours, float sum,
                            float4 grad_sum, float grad2, uint count, MZ_BOUNDARY_PARAMS,
                            uint stride, uint cap, global uint *nc, global uint *bl,
                            global uint *bc, global uint *overflow, global float *rho_out,
                            global float *alpha_out, bool walls, float bsum_given,
                            float4 grad_wall_given, uint bcount_given)
{
    float4 grad_wall = (float4)(0.0f);
    uint bcount = 0;
    float rho = P->mass * P->poly6 * sum;
    if (walls) {
        grad_wall = grad_wall_given;
        bcount = bcount_given;
        rho += P->poly6 * bsum_given;
    } else if (nb > 0) {
        float bsum = 0.0f;
        MZ_NEIGHBOURS_BEGIN(gb, bcs, bce, bx, xi, b, r2)
            bsum += bm[b] * mz_poly6_unscaled(P, r2);
            grad_wall += bm[b] * mz_dfsph_grad(P, mz_vec(xi - bx[b]), r2);
            mz_list_put(bl, cap, stride, i, &bcount, b);
        MZ_NEIGHBOURS_END
        rho += P->poly6 * bsum;
    }
    mz_list_close(nc, cap, overflow, i, count);
    mz_list_close(bc, cap, overflow, i, bcount);
    float denom = mz_dot3(grad_sum + 2.0f * grad_wall, grad_sum + grad_wall) + grad2;
    float alpha = denom > 0.0f ? rho / denom : 0.0f;
    rho_out[i] = rho;
    alpha_out[i] = (int)(count + bcount) >= min_neighbours ? alpha : -alpha;
}

#if MZ_LANES && !MZ_SLABS
/* The density pass's gradient terms of a cell walk's records (candidates j[k] within h of the
 * lanes of bits m[k], themselves left out), in record order, which is each lane's walk order:
 * ∇W_ij = gf d into w0, w1, w2 (8 k + l: lane l) for the lists, m ∇W_ij summed into gs and its
 * square into g2. Only here, for the ~40% of candidates some lane reaches, the square root and
 * the quotient. R2 as the walk computes it, so the same bits. */
inline void mz_dfsph_records_grads(const mz_sph *P, float8 X, float8 Y, float8 Z,
                                   global const float4 *x, const uint *j, const uchar *m,
                                   uint nrec, float *w0, float *w1, float *w2, float8 *gsx,
                                   float8 *gsy, float8 *gsz, float8 *g2)
{
    for (uint k = 0; k < nrec; k++) {
        const float4 xj = x[j[k]];
        const float8 r2 = MZ_LANES_DIST2_(xj.x - X, xj.y - Y, xj.z - Z);
        const int8 other = ((int8)(m[k]) >> (int8)(0, 1, 2, 3, 4, 5, 6, 7) & 1) != 0;
        MZ_DFSPH_GRAD8(P, r2, gf)
        /* the gradient ∇W_ij = gf d, d = x_i − x_j (z 0 in 2D), kept for the solves */
        const float8 wx = gf * (X - xj.x), wy = gf * (Y - xj.y), wz = gf * MZ_DFSPH_DZ8(Z, xj.z);
        const float8 gx = P->mass * wx, gy = P->mass * wy, gz = P->mass * wz;
        *gsx += select((float8)0.0f, gx, other);
        *gsy += select((float8)0.0f, gy, other);
        *gsz += select((float8)0.0f, gz, other);
        *g2 += select((float8)0.0f, gx * gx + gy * gy + gz * gz, other);
        vstore8(wx, k, w0);
        vstore8(wy, k, w1);
        vstore8(wz, k, w2);
    }
}

/* The wall terms m_b ∇W_ib of a wall walk's records (mz_dfsph_walls_cell), summed into a* in
 * record order, each lane's walk order. */
inline void mz_dfsph_walls_records(const mz_sph *P, float8 X, float8 Y, float8 Z,
                                   global const float4 *bx, global const float *bm,
                                   const uint *j, const uchar *m, uint nrec, float8 *ax,
                                   float8 *ay, float8 *az)
{
    for (uint k = 0; k < nrec; k++) {
        const float4 xb = bx[j[k]];
        const float8 r2 = MZ_LANES_DIST2_(xb.x - X, xb.y - Y, xb.z - Z);
        const int8 in = ((int8)(m[k]) >> (int8)(0, 1, 2, 3, 4, 5, 6, 7) & 1) != 0;
        MZ_DFSPH_GRAD8(P, r2, gf)
        const float mb = bm[j[k]];
        *ax += select((float8)0.0f, mb * (gf * (X - xb.x)), in);
        *ay += select((float8)0.0f, mb * (gf * (Y - xb.y)), in);
        *az += select((float8)0.0f, mb * (gf * MZ_DFSPH_DZ8(Z, xb.z)), in);
    }
}

/* The wall sums of lanes X, Y, Z (particles s .. s + lanes − 1 of one fluid cell) over a dense
 * wall grid gb: Σ_b m_b (h² − r²)³ into bsum, Σ_b m_b ∇W_ib into gw*, the wall lists (bl,
 * counts into bcount), each lane in its own walk's order (MZ_CELLS_UNION_BEGIN over the wall
 * cells its particles lie in): mz_dfsph_finish's float operations, so the same bits. */
inline void mz_dfsph_walls_cell(const mz_sph *P, float8 X, float8 Y, float8 Z, int8 valid,
                                uint s, uint lanes, global const float4 *x, MZ_BOUNDARY_PARAMS,
                                uint stride, uint cap, global uint *bl, float *bsum, float *gwx,
                                float *gwy, float *gwz, uint *bcount)
{
    int4 lo = (int4)(INT_MAX), hi = (int4)(INT_MIN);
    for (uint l = 0; l < lanes; l++) {
        const int4 c = mz_cell_rel(&gb, mz_cell_coord(&gb, x[s + l]));
        lo = min(lo, c);
        hi = max(hi, c);
    }
    float8 acc = 0.0f, ax = 0.0f, ay = 0.0f, az = 0.0f;
    uint rec_j[MZ_CELL_RECORDS];
    uchar rec_m[MZ_CELL_RECORDS];
    uint nrec = 0;
    for (uint l = 0; l < 8; l++)
        bcount[l] = 0;
    MZ_CELLS_UNION_BEGIN(&gb, bcs, bce, bx, lo, hi, X, Y, Z, valid, b, xb, r2, in)
        const float8 q = P->h2 - r2;
        acc += select((float8)0.0f, bm[b] * (q * q * q), in);
        const uint bits = mz_lanes_bits(in);
        rec_j[nrec] = b;
        rec_m[nrec] = (uchar)bits;
        nrec += bits != 0u;
        if (nrec == MZ_CELL_RECORDS) {
            mz_dfsph_walls_records(P, X, Y, Z, bx, bm, rec_j, rec_m, nrec, &ax, &ay, &az);
            mz_cell_records_put(rec_j, rec_m, nrec, lanes, s, stride, cap, bl, bcount, NULL,
                                NULL, NULL, NULL, 0);
            nrec = 0;
        }
    MZ_CELL_LANES_END
    mz_dfsph_walls_records(P, X, Y, Z, bx, bm, rec_j, rec_m, nrec, &ax, &ay, &az);
    mz_cell_records_put(rec_j, rec_m, nrec, lanes, s, stride, cap, bl, bcount, NULL, NULL, NULL,
                        NULL, 0);
    vstore8(acc, 0, bsum);
    vstore8(ax, 0, gwx);
    vstore8(ay, 0, gwy);
    vstore8(az, 0, gwz);
}

/* dfsph_density_alpha for the particles lo .. hi − 1 of one cell of a dense grid on a CPU device,
 * eight at a time against each fluid candidate (as mz_cell_poly6_sums, sph_lanes.clh): each lane
 * does its particle's float operations in its own walk's order, so the same bits. */
inline void mz_dfsph_density_cell(const mz_sph *P, int min_neighbours, uint lo, uint hi,
                                  const mz_grid_desc *g, global const uint *cs,
                                  global const uint *ce, global const float4 *x,
                                  MZ_BOUNDARY_PARAMS, uint stride, uint cap, global uint *nl,
                                  global uint *nc, global uint *bl, global uint *bc,
                                  global uint *overflow, global float *rho_out,
                                  global float *alpha_out, global float *grad, uint plane)
{
    for (uint s = lo; s < hi; s += 8) {
        const uint e = min(hi, s + 8);
        MZ_LANES_OF(s, e, x, self, slot, X, Y, Z)
        const int8 valid = as_int8(self < (uint8)e);
        float8 sum = 0.0f, gsx = 0.0f, gsy = 0.0f, gsz = 0.0f, g2 = 0.0f;
        uint counts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        uint rec_j[MZ_CELL_RECORDS];
        uchar rec_m[MZ_CELL_RECORDS];
        float rec_g0[8 * MZ_CELL_RECORDS], rec_g1[8 * MZ_CELL_RECORDS], rec_g2[8 * MZ_CELL_RECORDS];
        uint nrec = 0;
        MZ_CELL_LANES_ALL_BEGIN(g, cs, ce, x, mz_p0, X, Y, Z, valid, j, xj, r2, in)
            const float8 q = P->h2 - r2;
            sum += select((float8)0.0f, q * q * q, in);
            const uint bits = mz_lanes_bits(in & as_int8(self != (uint8)j));
            rec_j[nrec] = j;
            rec_m[nrec] = (uchar)bits;
            nrec += bits != 0u;
            if (nrec == MZ_CELL_RECORDS) {
                mz_dfsph_records_grads(P, X, Y, Z, x, rec_j, rec_m, nrec, rec_g0, rec_g1, rec_g2,
                                       &gsx, &gsy, &gsz, &g2);
                mz_cell_records_put(rec_j, rec_m, nrec, e - s, s, stride, cap, nl, counts, rec_g0,
                                    rec_g1, rec_g2, grad, plane);
                nrec = 0;
            }
        MZ_CELL_LANES_END
        mz_dfsph_records_grads(P, X, Y, Z, x, rec_j, rec_m, nrec, rec_g0, rec_g1, rec_g2, &gsx,
                               &gsy, &gsz, &g2);
        mz_cell_records_put(rec_j, rec_m, nrec, e - s, s, stride, cap, nl, counts, rec_g0, rec_g1,
                            rec_g2, grad, plane);
        /* the walls for the cell's lanes together (a dense wall grid), else each in finish */
        const bool walls = nb > 0 && !gb.hashed;
        float bsum[8], gwx[8], gwy[8], gwz[8];
        uint bcount[8];
        if (walls)
            mz_dfsph_walls_cell(P, X, Y, Z, valid, s, e - s, x, gb, bcs, bce, bx, bm, nb, stride,
                                cap, bl, bsum, gwx, gwy, gwz, bcount);
        float sums[8], sx[8], sy[8], sz[8], s2[8];
        vstore8(sum, 0, sums);
        vstore8(gsx, 0, sx);
        vstore8(gsy, 0, sy);
        vstore8(gsz, 0, sz);
        vstore8(g2, 0, s2);
        for (uint i = s; i < e; i++) {
            const uint l = i - s;
            mz_dfsph_finish(P, i, x[i], min_neighbours, sums[l],
                            (float4)(sx[l], sy[l], sz[l], 0.0f), s2[l], counts[l], gb, bcs,
                            bce, bx, bm, nb, stride, cap, nc, bl, bc, overflow, rho_out,
                            alpha_out, walls, walls ? bsum[l] : 0.0f,
                            walls ? (float4)(gwx[l], gwy[l], gwz[l], 0.0f) : (float4)(0.0f),
                            walls ? bcount[l] : 0u);
        }
    }
}
#endif

/* ρ_i by summation and the stiffness factor α_i = ρ_i / ((G + 2 G_b)·(G + G_b) + Σ_j |m ∇W_ij|²),
 * G = Σ_j m ∇W_ij, G_b = Σ_b m_b ∇W_ib: the k_i = α_i × (error) that undoes particle i's error
 * when it alone pushes (its neighbours and the walls). A particle with fewer than min_neighbours neighbours (a splash, the edge of a sheet)
 * gets −α_i: the divergence solve leaves it alone (its rate says nothing about compression). */
kernel void dfsph_density_alpha(uint n, mz_sph P, int min_neighbours, mz_grid_desc g,
                                global const uint *cs, global const uint *ce,
                                global const float4 *x, MZ_BOUNDARY_PARAMS, uint stride,
                                uint cap, global uint *nl, global uint *nc, global uint *bl,
                                global uint *bc, global uint *overflow, global float *rho_out,
                                global float *alpha_out, global float *grad, uint plane)
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
                                  alpha_out, grad, plane);
        return;
    }
#endif
    float4 xi = x[i], grad_sum = (float4)(0.0f);
    float sum = 0.0f, grad2 = 0.0f;
    uint count = 0;
    MZ_NEIGHBOURS_BEGIN(g, cs, ce, x, xi, j, r2)
        sum += mz_poly6_unscaled(&P, r2);
        if (j == i)
            continue;
        float4 w = mz_dfsph_grad(&P, mz_vec(xi - x[j]), r2), gw = P.mass * w;
        grad_sum += gw;
        grad2 += mz_dot3(gw, gw);
        if (grad && count < cap) /* kept for the solves */
            mz_dfsph_grad_put(grad, plane, MZ_LIST_AT_(count, i, stride), w);
        mz_list_put(nl, cap, stride, i, &count, j);
    MZ_NEIGHBOURS_END
    mz_dfsph_finish(&P, i, xi, min_neighbours, sum, grad_sum, grad2, count, gb, bcs, bce, bx, bm,
                    nb, stride, cap, nc, bl, bc, overflow, rho_out, alpha_out, false, 0.0f,
                    (float4)(0.0f), 0u);
}

#define MZ_DFSPH_FORCES_IN                                                                     \
    uint n, float dt_last, mz_sph P, mz_frame frame, mz_walls walls, int penalty,              \
        global const float4 *x, global const float4 *v, global const float *rho,               \
        MZ_LIST_PARAMS, global float4 *acc, global float *a2, int rest_out,                    \
        global float4 *wall_rest, MZ_WALL_MOTION
#define MZ_DFSPH_FORCES_ARGS                                                                   \
    n, dt_last, P, frame, walls, penalty, x, v, rho, stride, nl, nc, bl, bc, bx, bm, acc, a2,  \
        rest_out, wall_rest, moving, bv, ba

/* Particle i's accelerations but pressure (fluid: its fluid pairs' sum, or NULL to sum it
 * here). */
inline void mz_dfsph_forces_at(uint i, const float4 *fluid, MZ_DFSPH_FORCES_IN)
{
    float4 xi = x[i], vi = v[i];
    float rho_i = rho[i];
    float4 a = (float4)(0.0f);
    if (fluid) {
        a = *fluid;
    } else {
        MZ_LIST_BEGIN(nl, nc, stride, i, x, xi, j, r2)
            a += mz_sph_pair(&P, mz_vec(xi - x[j]), r2, mz_vec(vi - v[j]), rho_i, rho[j], 0.0f,
                             0.0f, mz_kgc_identity());
        MZ_LIST_END
    }
    if (bc[i] > 0) {
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
/* The fluid pairs' viscous accelerations of particles s .. e − 1 (mz_sph_pair with no
 * pressure), eight lanes over their lists, each in its own order: the same bits. */
inline void mz_dfsph_forces8(const mz_sph *P, uint s, uint e, const uint *count,
                             global const uint *nl, uint stride, global const float4 *x,
                             global const float4 *v, global const float *rho, float4 *out)
{
    MZ_LANES_OF(s, e, x, self, slot, X, Y, Z)
    MZ_LANES_GATHER3(v, slot, VX, VY, VZ)
    const float8 rho_i = mz_gather8(rho, slot);
    float8 ax = 0.0f, ay = 0.0f, az = 0.0f;
    MZ_LANES_LIST_BEGIN(nl, stride, s, e, slot, count, x, X, Y, Z, j, active, XJ, YJ, ZJ, r2)
        const int8 pair = active & (sqrt(r2) > (float8)(P->r_min));
        MZ_LANES_GATHER3(v, j, UX, UY, UZ)
        const float8 dx = X - XJ, dy = Y - YJ, dz = MZ_DFSPH_DZ8(Z, ZJ);
        const float8 ux = VX - UX, uy = VY - UY, uz = MZ_DFSPH_DZ8(VZ, UZ);
        float8 px, py, pz;
        MZ_LANES_PAIR(float8, P, dx, dy, dz, ux, uy, uz, r2, mz_gather8(rho, j), 0.0f, rho_i,
                      0.0f, px, py, pz)
        ax += select((float8)0.0f, px, pair);
        ay += select((float8)0.0f, py, pair);
        az += select((float8)0.0f, pz, pair);
    MZ_LANES_LIST_END
    (void)self;
    mz_lanes_out3(ax, ay, az, e - s, out);
}
#endif

/* Viscosity (the fluid's and Monaghan's artificial one, as WCSPH has them), the walls' friction
 * and the penalty walls, gravity: every acceleration but pressure, into acc, |a|² into a2
 * (+inf when not finite). dt_last: the last step's, for the wall function's cap. */
kernel void dfsph_forces(MZ_DFSPH_FORCES_IN)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#if MZ_LANES && !MZ_SLABS
    uint count[8];
    const uint e = mz_lanes_lead(i, n, nc, count);
    if (!e)
        return;
    float4 fluid[8];
    mz_dfsph_forces8(&P, i, e, count, nl, stride, x, v, rho, fluid);
    for (uint q = i; q < e; q++)
        mz_dfsph_forces_at(q, &fluid[q - i], MZ_DFSPH_FORCES_ARGS);
#else
    mz_dfsph_forces_at(i, NULL, MZ_DFSPH_FORCES_ARGS);
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
 * sum. */
/* Particle i's error pass after its fluid rate (fluid: NULL to sum it here): the walls' rate,
 * its error (returned) and stiffness. */
inline float mz_dfsph_error_at(uint i, const float *fluid, int density, float dt, float warm,
                               float dt_last, float dt_before, const mz_sph *P,
                               global const float4 *x, global const float4 *v,
                               global const float *rho, global const float *alpha,
                               MZ_LIST_PARAMS, global const float *K, global float *kprev,
                               global float *k_out, MZ_WALL_MOTION, global const float *grad,
                               uint plane)
{
    float4 xi = x[i], vi = v[i];
    float rate = 0.0f;
    if (fluid) {
        rate = *fluid;
    } else if (grad) {
        for (uint k = 0; k < nc[i]; k++) {
            const uint at = MZ_LIST_AT_(k, i, stride), j = nl[at];
            rate += P->mass * mz_dot3(vi - v[j], mz_dfsph_grad_at(grad, plane, at));
        }
    } else {
        MZ_LIST_BEGIN(nl, nc, stride, i, x, xi, j, r2)
            rate += P->mass * mz_dot3(vi - v[j], mz_dfsph_grad(P, mz_vec(xi - x[j]), r2));
        MZ_LIST_END
    }
    MZ_LIST_BEGIN(bl, bc, stride, i, bx, xi, b, r2)
        rate += bm[b] * mz_dot3(vi - MZ_WALL_V(b), mz_dfsph_grad(P, mz_vec(xi - bx[b]), r2));
    MZ_LIST_END
    float a = alpha[i], k, e;
    if (density) {
        e = fmax(rho[i] + dt * rate - P->rest_density, 0.0f);
        k = fabs(a) * e;
    } else {
        float r = a < 0.0f ? 0.0f : fmax(rate, 0.0f);
        e = dt * r;
        k = a * r;
    }
    if (warm > 0.0f) {
        float carried = K[i];
        if (density) {
            float kappa = K[i] / (dt_last * dt_last);
            float d1 = fmin(dt, dt_last), d2 = fmin(dt, dt_before);
            carried = fmin(kappa * d1 * d1, kprev[i] * d2 * d2);
            kprev[i] = kappa;
        }
        k = e > 0.0f ? warm * carried : 0.0f;
    }
    k_out[i] = k;
    return e;
}

#if MZ_LANES && !MZ_SLABS
/* The fluid rates Σ_j m (v_i − v_j)·∇W_ij of particles s .. e − 1, eight lanes over their lists
 * (sph_lanes.clh), each in its own list's order: out[l], the same bits as the one-particle
 * loop. */
inline void mz_dfsph_rates8(const mz_sph *P, uint s, uint e, const uint *count,
                            global const uint *nl, uint stride, global const float4 *x,
                            global const float4 *v, global const float *grad, uint plane,
                            float *out)
{
    MZ_LANES_OF(s, e, x, self, slot, X, Y, Z)
    MZ_LANES_GATHER3(v, slot, VX, VY, VZ)
    float8 rate = 0.0f;
    if (grad) { /* the density pass's gradients */
        MZ_LANES_ENTRIES_BEGIN(nl, stride, s, e, slot, count, j, active, k)
            MZ_LANES_GATHER3(v, j, UX, UY, UZ)
            const float8 gx = mz_lanes_entry_value(grad, stride, s, e, slot, k),
                         gy = mz_lanes_entry_value(grad + plane, stride, s, e, slot, k),
                         gz = mz_lanes_entry_value(grad + 2 * plane, stride, s, e, slot, k);
            const float8 dot = (VX - UX) * gx + (VY - UY) * gy + (VZ - UZ) * gz;
            rate += select((float8)0.0f, P->mass * dot, active);
        MZ_LANES_LIST_END
        (void)self;
        vstore8(rate, 0, out);
        return;
    }
    MZ_LANES_LIST_BEGIN(nl, stride, s, e, slot, count, x, X, Y, Z, j, active, XJ, YJ, ZJ, r2)
        MZ_DFSPH_GRAD8(P, r2, gf)
        MZ_LANES_GATHER3(v, j, UX, UY, UZ)
        const float8 gx = gf * (X - XJ), gy = gf * (Y - YJ), gz = gf * MZ_DFSPH_DZ8(Z, ZJ);
        const float8 dot = (VX - UX) * gx + (VY - UY) * gy + (VZ - UZ) * gz;
        rate += select((float8)0.0f, P->mass * dot, active);
    MZ_LANES_LIST_END
    (void)self;
    vstore8(rate, 0, out);
}
#endif

kernel void dfsph_error(uint n, int density, float dt, float warm, float dt_last,
                        float dt_before, float unit, mz_sph P, global const float4 *x,
                        global const float4 *v, global const float *rho,
                        global const float *alpha, MZ_LIST_PARAMS, global const float *K,
                        global float *kprev, global float *k_out, global ulong2 *partial,
                        local ulong2 *scratch, MZ_WALL_MOTION, global const float *grad,
                        uint plane)
{
    uint i = get_global_id(0), lid = get_local_id(0);
#if MZ_LANES && !MZ_SLABS
    /* Work-item 8m takes particles 8m .. 8m + 7 and puts their errors' fixed-point sum into the
     * group's sum (integers: the same total); the others add 0. */
    ulong2 fixed = (ulong2)(0);
    uint count[8];
    const uint e_ = i < n ? mz_lanes_lead(i, n, nc, count) : 0u;
    if (e_) {
        float rates[8];
        mz_dfsph_rates8(&P, i, e_, count, nl, stride, x, v, grad, plane, rates);
        for (uint q = i; q < e_; q++)
            fixed += mz_dfsph_fixed(mz_dfsph_error_at(q, &rates[q - i], density, dt, warm,
                                                      dt_last, dt_before, &P, x, v, rho, alpha,
                                                      stride, nl, nc, bl, bc, bx, bm, K, kprev,
                                                      k_out, moving, bv, ba, grad, plane),
                                    unit);
    }
    scratch[lid] = fixed;
#else
    float e = 0.0f;
    if (i < n)
        e = mz_dfsph_error_at(i, NULL, density, dt, warm, dt_last, dt_before, &P, x, v, rho,
                              alpha, stride, nl, nc, bl, bc, bx, bm, K, kprev, k_out, moving, bv,
                              ba, grad, plane);
    scratch[lid] = mz_dfsph_fixed(e, unit);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s /= 2) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
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
                              const mz_sph *P, global const float4 *x, global const float *rho,
                              global const float *k, MZ_LIST_PARAMS, global float *K,
                              global float4 *v, int keep_s, int s_first, float weight,
                              global float *S, global const float *grad, uint plane)
{
    float4 xi = x[i], dv = (float4)(0.0f);
    float ki = k[i] / rho[i];
    if (fluid) {
        dv = *fluid;
    } else if (grad) {
        for (uint q = 0; q < nc[i]; q++) {
            const uint at = MZ_LIST_AT_(q, i, stride), j = nl[at];
            dv += (P->mass * (ki + k[j] / rho[j])) * mz_dfsph_grad_at(grad, plane, at);
        }
    } else {
        MZ_LIST_BEGIN(nl, nc, stride, i, x, xi, j, r2)
            dv += (P->mass * (ki + k[j] / rho[j])) * mz_dfsph_grad(P, mz_vec(xi - x[j]), r2);
        MZ_LIST_END
    }
    if (ki != 0.0f) {
        MZ_LIST_BEGIN(bl, bc, stride, i, bx, xi, b, r2)
            dv += (2.0f * bm[b] * ki) * mz_dfsph_grad(P, mz_vec(xi - bx[b]), r2);
        MZ_LIST_END
    }
    v[i] -= scale * dv;
    K[i] = first ? k[i] : K[i] + k[i];
    if (keep_s)
        S[i] = (s_first ? 0.0f : S[i]) + weight * k[i];
}

#if MZ_LANES && !MZ_SLABS
/* The fluid sums Σ_j m (k_i/ρ_i + k_j/ρ_j) ∇W_ij of particles s .. e − 1, eight lanes over their
 * lists, each in its own order: out[l], the same bits as the one-particle loop. */
inline void mz_dfsph_apply8(const mz_sph *P, uint s, uint e, const uint *count,
                            global const uint *nl, uint stride, global const float4 *x,
                            global const float *rho, global const float *k,
                            global const float *grad, uint plane, float4 *out)
{
    MZ_LANES_OF(s, e, x, self, slot, X, Y, Z)
    const float8 ki = mz_gather8(k, slot) / mz_gather8(rho, slot);
    float8 dx8 = 0.0f, dy8 = 0.0f, dz8 = 0.0f;
    if (grad) { /* the density pass's gradients */
        MZ_LANES_ENTRIES_BEGIN(nl, stride, s, e, slot, count, j, active, q)
            const float8 c = P->mass * (ki + mz_gather8(k, j) / mz_gather8(rho, j));
            dx8 += select((float8)0.0f, c * mz_lanes_entry_value(grad, stride, s, e, slot, q),
                          active);
            dy8 += select((float8)0.0f,
                          c * mz_lanes_entry_value(grad + plane, stride, s, e, slot, q), active);
            dz8 += select((float8)0.0f,
                          c * mz_lanes_entry_value(grad + 2 * plane, stride, s, e, slot, q),
                          active);
        MZ_LANES_LIST_END
        (void)self;
        (void)X;
        (void)Y;
        (void)Z;
        mz_lanes_out3(dx8, dy8, dz8, e - s, out);
        return;
    }
    MZ_LANES_LIST_BEGIN(nl, stride, s, e, slot, count, x, X, Y, Z, j, active, XJ, YJ, ZJ, r2)
        MZ_DFSPH_GRAD8(P, r2, gf)
        const float8 c = P->mass * (ki + mz_gather8(k, j) / mz_gather8(rho, j));
        dx8 += select((float8)0.0f, c * (gf * (X - XJ)), active);
        dy8 += select((float8)0.0f, c * (gf * (Y - YJ)), active);
        dz8 += select((float8)0.0f, c * (gf * MZ_DFSPH_DZ8(Z, ZJ)), active);
    MZ_LANES_LIST_END
    (void)self;
    mz_lanes_out3(dx8, dy8, dz8, e - s, out);
}
#endif

kernel void dfsph_apply(uint n, float scale, int first, mz_sph P, global const float4 *x,
                        global const float *rho, global const float *k, MZ_LIST_PARAMS,
                        global float *K, global float4 *v, int keep_s, int s_first,
                        float weight, global float *S, global const float *grad, uint plane)
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
    mz_dfsph_apply8(&P, i, e, count, nl, stride, x, rho, k, grad, plane, dv);
    for (uint q = i; q < e; q++)
        mz_dfsph_apply_at(q, &dv[q - i], scale, first, &P, x, rho, k, stride, nl, nc, bl, bc, bx,
                          bm, K, v, keep_s, s_first, weight, S, grad, plane);
#else
    mz_dfsph_apply_at(i, NULL, scale, first, &P, x, rho, k, stride, nl, nc, bl, bc, bx, bm, K, v,
                      keep_s, s_first, weight, S, grad, plane);
#endif
}

/* The fluid's force on each boundary particle of the measured solids (src/solvers/sph/
 * loads.c), element e being boundary particle elem[e], now in slot slot_of[elem[e]]. Pass 0,
 * after dfsph_forces (its velocities): minus what the walls' pairs gave the fluid there
 * (mz_sph_wall_pair with no pressure, as dfsph_forces takes them, plus b's share of the
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
 * pressure the density solve applied, from its total stiffness K = κ dt²: p = κ ρ (the pressure that gives the same acceleration in WCSPH's symmetric form,
 * p/ρ² = κ/ρ). */
kernel void dfsph_advect(uint n, float dt, mz_walls walls, global const float *rho,
                         global const float *K, global float4 *x, global float4 *v,
                         global float *p)
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
    p[i] = K[i] * rho[i] / (dt * dt);
}
