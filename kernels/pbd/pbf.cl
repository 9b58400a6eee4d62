/* Position Based Fluids (Macklin & Müller 2013) in the unified particle system, one Jacobi
 * sweep per launch pair, every sum a per-particle gather in grid order (no atomics):
 *
 *   pbf_lambda    per slot: density ρ_i by poly6 summation over fluid and solid neighbours,
 *                 C_i = max(ρ_i/ρ0 − 1, 0), λ_i = −C_i / (Σ_k r_k |∇_k C_i|² + ε)
 *   pbf_delta     per slot: Δx_i = r_i V Σ_j (λ_i ψ_j + λ_j ψ_i + s_corr) ∇W_ij, s_corr between
 *                 fluid particles, −k_corr (W(r)/W(dq h))^n with k_corr an argument per launch
 *   pbf_curl      per slot, after the velocity update: the curl ω_i and the XSPH velocity
 *                 change from the fluid neighbours
 *   pbf_confine   per slot: v_i += XSPH + dt ε_v (N × ω_i), N = ∇|ω| / |∇|ω||
 *
 * Units at physical scale. With V = m/ρ0 the rest volume of a fluid particle, ρ_i/ρ0 =
 * V Σ_j ψ_j W_ij and ∇_j C_i = −V ψ_j ∇W_ij, so λ has units of m² and Δx of m whatever the mass:
 * the paper's λ formula leaves the mass out, fine for m = 1 but off by m² at 1 cm spacing
 * (ρ = 1000 kg/m³, m = 1 g), where ε and s_corr, given as plain numbers, then swamp or vanish.
 * Here ε is a fraction of S0 = Σ_k |∇_k C_i|² for a particle inside the rest lattice
 * (src/solvers/pbd/fluid.c), so it means the same at any spacing and mass.
 *
 * s_corr is an artificial pressure p_corr = k ρ0 |g| h (W(r)/W(dq h))^n, a force: the position
 * change it makes in a substep is dt² times its acceleration, −dt² (m/ρ0²) Σ_j p_corr ∇W_ij, i.e.
 * s_corr = −dt² p_corr/ρ0 in λ's units (λ_i = −dt² p_i/ρ0 makes Δx SPH's pressure step). The
 * host passes k_corr = k |g| h dt² / iterations to each iteration's pbf_delta (and 0 to the warm
 * start's), so a substep applies it once whatever the iterations, each share at the current
 * positions. Added in every iteration as a fixed displacement (the paper's form), it acted as a
 * pressure ∝ iterations/dt², far above ρ0 g h and growing with substeps and iterations, and the
 * one-sided constraint, which never pulls, let it spread the free surface: the 3D flume's front
 * ran 12% ahead of the experiment (docs/ARCHITECTURE.md).
 *
 * Coupling: a solid particle (rigid) counts in a fluid particle's density with weight ψ (its
 * volume over a fluid particle's: the fluid sees it as fluid at rest density) and receives the
 * fluid's corrections; r_k = m_fluid/m_k scales every correction by inverse mass (a heavy body
 * moves less), 0 for pinned particles. attr[slot] = (r, ψ, fluid ? 1 : 0, 0); ψ = 0 for
 * particles the density does not see (cloth, which meets the fluid through contacts).
 *
 * The domain's walls and the colliders count in the density as fluid at rest beyond their
 * surfaces (mz_walls, mz_collider_share) and push the fluid with its own λ; with the forces on
 * solids measured, that push is part of each one's force (src/solvers/pbd/loads.c). With
 * domain.boundary.type "particles" (bparts 1, or 2 with colliders) the walls and colliders are
 * boundary particles instead (src/solvers/boundary.c, SPH's), on a grid of their own: each
 * counts as a fluid
 * particle at rest, volume V (ψ = 1: the lattice continued), in ρ_i and ∇_i C_i, and pushes with
 * λ_i alone (Akinci et al. 2012's form; they never move); the tables are not read. */
#include "common/common.clh"
#include "grid/grid.clh"
#include "common/colliders.clh"
#include "common/wall_law.clh"

typedef struct {
    float h, h2;
    float poly6;        /* W = poly6 (h² − r²)³ */
    float spiky;        /* ∇_i W = spiky (h − r)² (x_i − x_j)/r, spiky < 0 */
    float volume;       /* V = m/ρ0 */
    float rest_density;
    float epsilon;      /* absolute ε, m⁻² */
    float p_corr;       /* host: s_corr's k |g| h (m²/s²); the kernels get k_corr per launch */
    float inv_w_dq;     /* 1 / (h² − (dq h)²)³ */
    int n_corr;         /* the power by multiplications: powr costs more than the rest */
    float xsph;
    float vorticity;
    float r_min;        /* below this, a pair has no direction */
    float lattice;      /* ρ/ρ0 of the whole rest lattice, V Σ W (1 with the default mass) */
    float wall_nu;      /* walls "wall_function": the fluid's kinematic viscosity; 0: free slip */
    float wall_layer;   /* the layer a wall's shear stress acts on: a spacing */
} mz_pbf;

/* The domain's walls as fluid at rest beyond them (the lattice continued, as boundary particles
 * would be, but summed once on the host): table[k] = (V Σ W, V Σ ∂W/∂d) for a particle at
 * distance d = k·h/(MZ_WALL_TABLE − 1) from a wall, linearly interpolated. Adds the walls' share
 * to ρ_i/ρ0 (*rel) and to ∇_i C_i (*grad, pointing into the walls). Without it a particle at a
 * wall lacks half its neighbours, so it never counts as compressed and the weight of the column
 * rests on the layer above it. */
#define MZ_WALL_TABLE 64
inline void mz_walls(const mz_pbf *P, float4 x, float4 lo, float4 hi,
                     global const float2 *table, float *rel, float4 *grad)
{
    float scale = (float)(MZ_WALL_TABLE - 1) / P->h;
    for (int a = 0; a < MZ_DIM; a++) {
        float xa = a == 0 ? x.x : a == 1 ? x.y : x.z;
        float la = a == 0 ? lo.x : a == 1 ? lo.y : lo.z;
        float ha = a == 0 ? hi.x : a == 1 ? hi.y : hi.z;
        for (int side = 0; side < 2; side++) {
            float d = side ? ha - xa : xa - la;
            if (!(d < P->h))
                continue;
            float t = fmax(d, 0.0f) * scale;
            int k = min((int)t, MZ_WALL_TABLE - 2);
            float f = t - (float)k;
            float2 e = table[k] * (1.0f - f) + table[k + 1] * f;
            *rel += e.x;
            float g = side ? -e.y : e.y; /* ∂/∂x_a of the wall's share */
            if (a == 0)
                grad->x += g;
            else if (a == 1)
                grad->y += g;
            else
                grad->z += g;
        }
    }
}

/* The colliders' table: F(q) = (V Σ W, V ∂(Σ W)/∂q) of the rest lattice beyond a plane at signed
 * distance q from the particle, q = −h + k·h/(MZ_WALL_TABLE − 1) (src/solvers/pbd/fluid.c): the
 * walls' table for q ≥ 0, rising to P->lattice at q = −h, where the plane is behind every
 * neighbour. */
#define MZ_SOLID_TABLE (2 * MZ_WALL_TABLE - 1)
inline float2 mz_solid_share(const mz_pbf *P, global const float2 *table, float q)
{
    float t = clamp(q + P->h, 0.0f, 2.0f * P->h) * ((float)(MZ_WALL_TABLE - 1) / P->h);
    int k = min((int)t, MZ_SOLID_TABLE - 2);
    float f = t - (float)k;
    return table[k] * (1.0f - f) + table[k + 1] * f;
}

/* Collider k's share of ρ_i/ρ0 and its gradient ∂/∂x_i (into the solid), met in its own frame
 * where its law has it now, as the colliders kernel meets it. A box is the product over its
 * axes, F(q_x) F(q_y) F(q_z) / lattice^(d−1), q_a the signed distance past its faces on axis a:
 * exact on a face (the other factors are the whole lattice there), within 1% of ρ0 beside an
 * edge or a corner, where the plane through the nearest point would add up to 8% (the solid
 * fills a quarter or an eighth of the space there, not half). Other shapes by that plane: F of
 * the signed distance, along the normal. False beyond the support radius. */
inline bool mz_collider_share(const mz_pbf *P, global const float2 *table,
                              global const mz_collider_dev *cs, uint k,
                              const mz_motion_now *now, float4 x, float *share, float4 *grad)
{
    mz_collider_dev c = cs[k];
    float4 p = mz_collider_rest(&c, now, x), g;
    if (c.type == MZ_BOX) {
        float4 q = mz_vec(fabs(p - c.a) - c.b);
        if (!(q.x < P->h && q.y < P->h && q.z < P->h))
            return false;
        float4 side = mz_vec(select((float4)(-1.0f), (float4)(1.0f), isgreaterequal(p, c.a)));
        float2 fx = mz_solid_share(P, table, q.x), fy = mz_solid_share(P, table, q.y);
        float inv = 1.0f / P->lattice;
#if MZ_DIM == 3
        float2 fz = mz_solid_share(P, table, q.z);
        inv = inv * inv;
#else
        float2 fz = (float2)(1.0f, 0.0f);
#endif
        *share = fx.x * fy.x * fz.x * inv;
        g = (float4)(fx.y * fy.x * fz.x, fx.x * fy.y * fz.x, fx.x * fy.x * fz.y, 0.0f);
        g = (inv * g) * side;
    } else {
        float4 nrm;
        float d = mz_sdf(&c, p, &nrm);
        if (!(d < P->h))
            return false;
        float2 f = mz_solid_share(P, table, d);
        *share = f.x;
        g = f.y * mz_vec(nrm);
    }
    *grad = mz_collider_out(&c, now, g);
    return true;
}

inline float4 mz_grad(const mz_pbf *P, float4 d, float r)
{
    float hr = P->h - r;
    float4 g = (P->spiky * hr * hr / r) * d;
    g.w = 0.0f;
    return mz_planar(g);
}

#define MZ_OWNER_COLLIDER 6 /* src/scene/scene.h: a collider's boundary particles' owner − c */

/* Whether particle x may have boundary neighbours: bparts 2 (colliders among them: anywhere),
 * or 1 (the domain's walls alone) and within h of a wall (the nearest wall row is half a
 * spacing behind it, so the margin covers the rounding). Skipping the walk elsewhere adds
 * nothing the walk would have. */
inline bool mz_boundary_near(const mz_pbf *P, int bparts, float4 x, float4 lo, float4 hi)
{
    if (bparts != 1)
        return bparts != 0;
    float4 d = fmin(x - lo, hi - x);
#if MZ_DIM == 3
    return d.x < P->h || d.y < P->h || d.z < P->h;
#else
    return d.x < P->h || d.y < P->h;
#endif
}

/* The boundary particles' share of ρ_i/ρ0 (*rel) and of ∇_i C_i (*grad): V Σ_b W_ib and
 * V Σ_b ∇_i W_ib over the wall and collider particles within h, in their grid's order. */
inline void mz_boundary_share(const mz_pbf *P, mz_grid_desc bg, global const uint *bstart,
                              global const uint *bend, global const float4 *bpos, float4 xi,
                              float *rel, float4 *grad)
{
    float sum = 0.0f;
    float4 gb = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(bg, bstart, bend, bpos, xi, B, r2)
        if (!(r2 < P->h2))
            continue;
        float q = P->h2 - r2;
        sum += q * q * q;
        float r = sqrt(r2);
        if (r > P->r_min)
            gb += mz_grad(P, xi - bpos[B], r);
    MZ_NEIGHBOURS_END
    *rel += P->volume * P->poly6 * sum;
    *grad += P->volume * gb;
}

/* The boundary particles' push on fluid slot i, grad = V Σ_b ∇_i W_ib (the λ_i of the push is
 * the caller's). With the forces on solids kept (loads), each solid's part of the push, push_k =
 * scale × V Σ_{b of k} ∇_i W_ib, scale = r_i λ_i: the domain walls' into wall_corr (the walls
 * are planes, each taking the push along its normal, as from the table or the clamp:
 * pbd_load_sums), a collider's into its touch slot, flushed whenever the owner changes (the
 * grid's order groups a solid's particles by cell, not by owner; mz_touch adds). */
inline void mz_boundary_push(const mz_pbf *P, mz_grid_desc bg, global const uint *bstart,
                             global const uint *bend, global const float4 *bpos, float4 xi,
                             float scale, int loads, uint i, global float4 *wall_corr,
                             global float4 *touch, float4 *grad)
{
    float4 gb = (float4)(0.0f), gwall = (float4)(0.0f), gk = (float4)(0.0f);
    int owner = -1;
    loads = loads && scale != 0.0f; /* no push: no touch slot taken */
    MZ_NEIGHBOURS_BEGIN(bg, bstart, bend, bpos, xi, B, r2)
        if (!(r2 < P->h2))
            continue;
        float r = sqrt(r2);
        if (!(r > P->r_min))
            continue;
        float4 xb = bpos[B];
        float4 g = mz_grad(P, xi - xb, r);
        gb += g;
        if (loads) {
            int o = (int)xb.w;
            if (o < MZ_OWNER_COLLIDER) {
                gwall += g;
            } else {
                if (o != owner && owner >= 0)
                    mz_touch(touch, i, (uint)(owner - MZ_OWNER_COLLIDER),
                             (scale * P->volume) * gk);
                if (o != owner)
                    gk = (float4)(0.0f);
                owner = o;
                gk += g;
            }
        }
    MZ_NEIGHBOURS_END
    if (loads) {
        if (owner >= 0)
            mz_touch(touch, i, (uint)(owner - MZ_OWNER_COLLIDER), (scale * P->volume) * gk);
        wall_corr[i] += mz_vec((scale * P->volume) * gwall);
    }
    *grad = P->volume * gb;
}

/* A distributed rank's attributes (src/solvers/pbd/fluid.c): its window changes with every
 * exchange, so attr is made after every build from each particle's body, as the host made one
 * process's (table[b]: an unpinned particle of body b; a pinned one has r = 0). A fluid alone
 * (by_body 0) is table[0] throughout: its halo holds no bodies or inverse masses. */
kernel void pbf_attributes(uint n, uint by_body, global const uint *body,
                           global const float *inv_mass, global const float4 *table,
                           global float4 *attr)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 a = table[by_body ? body[i] : 0];
    if (by_body && inv_mass[i] == 0.0f)
        a.x = 0.0f;
    attr[i] = a;
}

/* Warm start: each substep begins by applying the multipliers the last one ended with (into
 * dlambda in grid order, then pbf_delta). */
kernel void pbf_warm(uint n, float warm, global const float4 *attr, global const uint *slot,
                     global float *lambda, global float *dlambda)
{
    uint J = get_global_id(0);
    if (J >= n)
        return;
    uint i = slot[J];
    float l = attr[J].z != 0.0f ? warm * lambda[i] : 0.0f;
    lambda[i] = l;
    dlambda[J] = l;
}

/* λ accumulates over the iterations and substeps (in id order, `lambda`), kept ≤ 0 (a fluid
 * pushes, never pulls); dlambda (grid order) receives this iteration's change for pbf_delta. */
kernel void pbf_lambda(uint n, mz_pbf P, mz_grid_desc g, global const uint *cell_words,
                       global const uint *cell_first, global const float4 *sorted,
                       global const float4 *attr, global const uint *slot, float4 lo, float4 hi,
                       global const float2 *walls, uint nc,
                       global const mz_collider_dev *cs, mz_motion_now now,
                       global const float2 *solid, global float *lambda,
                       global float *dlambda, global float *density, int bparts,
                       mz_grid_desc bg, global const uint *bstart, global const uint *bend,
                       global const float4 *bpos)
{
    uint J = get_global_id(0);
    if (J >= n)
        return;
    float4 ai = attr[J];
    if (ai.z == 0.0f) {
        dlambda[J] = 0.0f;
        return;
    }
    float4 xi = sorted[J];
    float sum = 0.0f, s2 = 0.0f;
    float4 gi = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cell_words, cell_first, sorted, xi, K, r2)
        if (!(r2 < P.h2))
            continue;
        float4 aj = attr[K];
        if (aj.y == 0.0f)
            continue;
        float q = P.h2 - r2;
        sum += aj.y * (q * q * q);
        float r = sqrt(r2);
        if (K == J || !(r > P.r_min))
            continue;
        float4 grad = aj.y * mz_grad(&P, xi - sorted[K], r);
        gi += grad;
        s2 += aj.x * mz_dot3(grad, grad);
    MZ_NEIGHBOURS_END
    float rel = P.volume * P.poly6 * sum; /* ρ_i / ρ0 */
    gi = P.volume * gi;
    if (bparts) {
        if (mz_boundary_near(&P, bparts, xi, lo, hi))
            mz_boundary_share(&P, bg, bstart, bend, bpos, xi, &rel, &gi);
    } else {
        mz_walls(&P, xi, lo, hi, walls, &rel, &gi);
    }
    for (uint k = 0; !bparts && k < nc; k++) {
        float share;
        float4 gk;
        if (mz_collider_share(&P, solid, cs, k, &now, xi, &share, &gk)) {
            rel += share;
            gi += gk;
        }
    }
    float s = P.volume * P.volume * s2 + ai.x * mz_dot3(gi, gi);
    uint i = slot[J];
    float l = -fmax(rel - 1.0f, 0.0f) / (s + P.epsilon);
    lambda[i] += l;
    dlambda[J] = l;
    density[i] = P.rest_density * rel;
}

kernel void pbf_delta(uint n, mz_pbf P, mz_grid_desc g, global const uint *cell_words,
                      global const uint *cell_first, global const float4 *sorted,
                      global const float4 *attr, global const uint *slot, float4 lo, float4 hi,
                      global const float2 *walls, uint nc,
                      global const mz_collider_dev *cs, mz_motion_now now,
                      global const float2 *solid, global const float *lambda,
                      global float4 *xp, int loads, global float4 *wall_corr,
                      global float4 *touch, float k_corr, int bparts, mz_grid_desc bg,
                      global const uint *bstart, global const uint *bend,
                      global const float4 *bpos)
{
    uint J = get_global_id(0);
    if (J >= n)
        return;
    float4 ai = attr[J];
    if (ai.x == 0.0f || ai.y == 0.0f)
        return;
    float4 xi = sorted[J];
    float li = lambda[J];
    float4 d = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cell_words, cell_first, sorted, xi, K, r2)
        if (!(r2 < P.h2) || K == J)
            continue;
        float4 aj = attr[K];
        float r = sqrt(r2);
        if (aj.y == 0.0f || !(r > P.r_min))
            continue;
        float coef = li * aj.y + lambda[K] * ai.y;
        if (ai.z != 0.0f && aj.z != 0.0f && k_corr > 0.0f) {
            float q = P.h2 - r2, base = q * q * q * P.inv_w_dq, s = base;
            for (int k = 1; k < P.n_corr; k++)
                s *= base;
            coef -= k_corr * s;
        }
        d += coef * mz_grad(&P, xi - sorted[K], r);
    MZ_NEIGHBOURS_END
    float4 gw = (float4)(0.0f);
    float unused = 0.0f;
    uint i = slot[J];
    if (bparts) {
        if (ai.z != 0.0f && mz_boundary_near(&P, bparts, xi, lo, hi))
            mz_boundary_push(&P, bg, bstart, bend, bpos, xi, ai.x * li, loads, i, wall_corr,
                             touch, &gw);
        xp[i] = xp[i] + ai.x * (P.volume * d + li * gw);
        return;
    }
    if (ai.z != 0.0f) /* the walls push fluid with its own λ (they have none) */
        mz_walls(&P, xi, lo, hi, walls, &unused, &gw);
    float4 dx = ai.x * (P.volume * d + li * gw);
    if (loads) /* the walls' push, for the forces on them (src/solvers/pbd/loads.c) */
        wall_corr[i] += mz_vec(ai.x * li * gw);
    for (uint k = 0; ai.z != 0.0f && k < nc; k++) { /* the colliders push as the walls do */
        float share;
        float4 gk;
        if (!mz_collider_share(&P, solid, cs, k, &now, xi, &share, &gk))
            continue;
        float4 push = ai.x * li * gk;
        dx += push;
        if (loads)
            mz_touch(touch, i, k, push);
    }
    xp[i] = xp[i] + dx;
}

/* After the update: curl and XSPH from the fluid neighbours (v in grid order). */
kernel void pbf_curl(uint n, mz_pbf P, mz_grid_desc g, global const uint *cell_words,
                     global const uint *cell_first, global const float4 *sorted,
                     global const float4 *attr, global const float4 *vs,
                     global float4 *omega, global float4 *dv)
{
    uint J = get_global_id(0);
    if (J >= n)
        return;
    if (attr[J].z == 0.0f) {
        omega[J] = (float4)(0.0f);
        dv[J] = (float4)(0.0f);
        return;
    }
    float4 xi = sorted[J], vi = vs[J];
    float4 w = (float4)(0.0f), x = (float4)(0.0f);
    MZ_NEIGHBOURS_BEGIN(g, cell_words, cell_first, sorted, xi, K, r2)
        if (!(r2 < P.h2) || K == J || attr[K].z == 0.0f)
            continue;
        float4 vij = vs[K] - vi;
        vij.w = 0.0f;
        float q = P.h2 - r2;
        x += (q * q * q) * vij;
        float r = sqrt(r2);
        if (r > P.r_min)
            w += cross(mz_grad(&P, xi - sorted[K], r), vij); /* (v_j − v_i) × ∇_j W_ij */
    MZ_NEIGHBOURS_END
    omega[J] = P.volume * w;
    dv[J] = mz_planar((P.xsph * P.volume * P.poly6) * x);
}

/* The new velocity: XSPH's share, vorticity confinement, and with walls "wall_function" a
 * smooth wall's shear stress on the particles within a spacing of a domain wall: the layer
 * one particle thick loses u_tau^2 / spacing · dt of its speed along the wall (never more than
 * stops it), u_tau from the log law at the particle's distance (at least half a spacing: where
 * the clamp holds it). The drag per area of wall is the law's at any spacing, as FLIP's. */
kernel void pbf_confine(uint n, float dt, mz_pbf P, mz_grid_desc g,
                        global const uint *cell_words, global const uint *cell_first,
                        global const float4 *sorted, global const float4 *attr,
                        global const uint *slot, global const float4 *vs,
                        global const float4 *omega, global const float4 *dv, global float4 *v,
                        float4 lo, float4 hi)
{
    uint J = get_global_id(0);
    if (J >= n || attr[J].z == 0.0f)
        return;
    float4 vi = vs[J] + dv[J];
    if (P.vorticity > 0.0f) {
        float4 xi = sorted[J], wi = omega[J];
        float wl = length(wi.xyz);
        float4 eta = (float4)(0.0f);
        MZ_NEIGHBOURS_BEGIN(g, cell_words, cell_first, sorted, xi, K, r2)
            if (!(r2 < P.h2) || K == J || attr[K].z == 0.0f)
                continue;
            float r = sqrt(r2);
            if (r > P.r_min) /* ∇|ω| ≈ Σ V (|ω_j| − |ω_i|) ∇_j W_ij */
                eta -= (length(omega[K].xyz) - wl) * mz_grad(&P, xi - sorted[K], r);
        MZ_NEIGHBOURS_END
        float el = length(eta.xyz);
        if (el > 0.0f) {
            float4 f = cross(eta / el, wi);
            vi += (dt * P.vorticity) * mz_planar(f);
        }
    }
    if (P.wall_nu > 0.0f) {
        float xi[3] = {sorted[J].x, sorted[J].y, sorted[J].z};
        float l[3] = {lo.x, lo.y, lo.z}, h[3] = {hi.x, hi.y, hi.z};
        for (int a = 0; a < MZ_DIM; a++)
            for (int side = 0; side < 2; side++) {
                float y = side ? h[a] - xi[a] : xi[a] - l[a];
                if (!(y < P.wall_layer))
                    continue;
                float4 ut = vi;
                ut.w = 0.0f;
                if (a == 0)
                    ut.x = 0.0f;
                else if (a == 1)
                    ut.y = 0.0f;
                else
                    ut.z = 0.0f;
                float u = length(ut.xyz);
                if (u > 0.0f) {
                    float drop = wall_stress(u, fmax(y, 0.5f * P.wall_layer), P.wall_nu) /
                                 P.wall_layer * dt;
                    vi -= ut * (fmin(drop, u) / u);
                }
            }
    }
    vi.w = 0.0f;
    v[slot[J]] = vi;
}
