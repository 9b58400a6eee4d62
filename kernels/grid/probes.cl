/* Probes and gauges (src/solvers/observe.h): the fluid at given points, by kernel
 * interpolation over the particles near them, between two steps.
 *
 * The grid is the one the solver built at the start of the step just taken; the particles have
 * moved since, by less than a grid cell (every solver's CFL condition keeps a step's motion
 * under its support radius, which is at most a cell). Searching two cells around a point
 * (5 × 5 × 5) therefore finds every particle now within the interpolation radius kh ≤ one cell
 * of it, exactly once, in a fixed order: deterministic sums.
 *
 * The weight is Wendland C2's shape, (1 − q)^4 (1 + 4q) with q = r / kh, unnormalised: the
 * fields divide by the summed weights (Shepard), and the fluid fraction by the sum the fluid's
 * rest lattice gives on average (inv_rest), so that still water reads 1. */
#include "common/common.clh"
#include "grid/grid.clh"

#if MZ_DIM == 2
#define MZ_PROBE_DZ 0
#define MZ_PROBE_GROUP 32 /* a work-item per cell of the 5 × 5 around a point */
#else
#define MZ_PROBE_DZ 2
#define MZ_PROBE_GROUP 128 /* 5 × 5 × 5 */
#endif
#define MZ_PROBE_CELLS (25 * (2 * MZ_PROBE_DZ + 1))

inline float mz_probe_weight(float r2, float kh)
{
    float q = sqrt(r2) / kh;
    if (!(q < 1.0f))
        return 0.0f;
    float a = (1.0f - q) * (1.0f - q);
    return a * a * (1.0f + 4.0f * q);
}

/* One work-group per point: each work-item sums one cell of the point's 5 × 5 (× 5) (a
 * point's hundred-odd cells walked by one work-item were a latency chain on GPUs), then a fixed
 * tree adds the cells' sums: the same order every run. The sums over the fluid's particles
 * (body < fluid_bodies) within kh of the point are (Σ w, Σ w p, Σ w rho, Σ w v). Slot k of a
 * cell is particle k, or with by_vals particle vals[k] (a solver that sorts a copy).
 *
 * Points 0 .. n_probes − 1 are the probes: each writes its row of the sample (fraction,
 * pressure, density, velocity; where the fraction is below 0.05 the point is in air or a solid
 * and the fields read 0, no fluid, rather than a ratio of a few stray weights or NaN). The
 * gauges' points follow: their sums go to gauge_sums for gauge_level. A launch may cover the
 * probes, the gauges' points or both (its global offset says where it starts). */
kernel __attribute__((reqd_work_group_size(MZ_PROBE_GROUP, 1, 1)))
void probe_sums(mz_grid_desc g, global const uint *cs, global const uint *ce,
                global const uint *vals, int by_vals, global const float4 *pos,
                global const float4 *vel, global const float *rho, int has_rho,
                global const float *p, int has_p, global const uint *body, uint fluid_bodies,
                float kh, float inv_rest, global const float4 *points, uint n_probes,
                global float *rows, uint row_base, global float8 *gauge_sums)
{
    local uint keys[MZ_PROBE_GROUP];
    local float8 part[MZ_PROBE_GROUP];
    const uint pt = get_global_id(0) / MZ_PROBE_GROUP, c = get_local_id(0);
    const float4 x = points[pt];
    const int4 cell = mz_cell_coord(&g, x);
    uint key = 0xffffffffu;
    if (c < MZ_PROBE_CELLS) {
        int4 d = (int4)((int)(c % 5) - 2, (int)(c / 5 % 5) - 2, (int)(c / 25) - MZ_PROBE_DZ, 0);
        uint none[1];
        int nnone = 0;
        if (g.hashed)
            key = mz_cell_key(&g, cell + d);
        else if (!mz_grid_visit_cell_(&g, cell + d, none, &nnone, &key))
            key = 0xffffffffu;
    }
    keys[c] = key;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Hashed: cells that share a bucket scan it once, the first of them. */
    bool scan = key != 0xffffffffu;
    for (uint k = 0; scan && g.hashed && k < c; k++)
        if (keys[k] == key)
            scan = false;
    float8 s = (float8)(0.0f);
    const float kh2 = kh * kh;
    if (scan) {
        const uint end = ce[key];
        for (uint k = cs[key]; k < end; k++) {
            const uint j = by_vals ? vals[k] : k;
            if (body[j] >= fluid_bodies)
                continue;
            const float r2 = mz_grid_dist2_(pos[j] - x);
            if (!(r2 < kh2))
                continue;
            const float w = mz_probe_weight(r2, kh);
            const float4 v = mz_vec(vel[j]);
            s.s0 += w;
            if (has_p)
                s.s1 += w * p[j];
            if (has_rho)
                s.s2 += w * rho[j];
            s.s3 += w * v.x;
            s.s4 += w * v.y;
            s.s5 += w * v.z;
        }
    }
    part[c] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_PROBE_GROUP / 2; stride > 0; stride >>= 1) {
        if (c < stride)
            part[c] += part[c + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (c != 0)
        return;
    s = part[0];
    if (pt >= n_probes) {
        gauge_sums[pt - n_probes] = s;
        return;
    }
    float fraction = s.s0 * inv_rest;
    float inv = fraction >= 0.05f ? 1.0f / s.s0 : 0.0f;
    global float *row = rows + row_base + 6 * pt;
    row[0] = fraction;
    row[1] = s.s1 * inv;
    row[2] = s.s2 * inv;
    row[3] = s.s3 * inv;
    row[4] = s.s4 * inv;
    row[5] = s.s5 * inv;
}

#define MZ_GAUGE_GROUP 256
#define MZ_FRACTION(k) (sums[first[i] + (k)].s0 * inv_rest)

/* The smallest of the work-group's v (every work-item gets it). */
inline uint mz_group_min(local uint *best, uint v)
{
    const uint t = get_local_id(0);
    best[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_GAUGE_GROUP / 2; stride > 0; stride >>= 1) {
        if (t < stride)
            best[t] = min(best[t], best[t + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    v = best[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return v;
}

/* One work-group per gauge, each work-item a stretch of its points (one work-item walking a
 * thousand points was a chain of memory latencies on GPUs): the first wet point, then the
 * first dry one after it, by minimum over the stretches. */
kernel __attribute__((reqd_work_group_size(MZ_GAUGE_GROUP, 1, 1)))
void gauge_level(global const uint *first, global const uint *count, global const float *ds,
                 global const float8 *sums, float inv_rest, global float *rows, uint row_base)
{
    local uint best[MZ_GAUGE_GROUP];
    const uint i = get_group_id(0), t = get_local_id(0), m = count[i];
    const uint chunk = (m + MZ_GAUGE_GROUP - 1) / MZ_GAUGE_GROUP;
    const uint lo = min(t * chunk, m), hi = min(lo + chunk, m);
    uint wet = m;
    for (uint k = lo; k < hi && wet == m; k++)
        if (MZ_FRACTION(k) >= 0.5f)
            wet = k;
    wet = mz_group_min(best, wet);
    uint dry = m;
    for (uint k = max(lo, wet + 1); wet < m && k < hi && dry == m; k++)
        if (!(MZ_FRACTION(k) >= 0.5f))
            dry = k;
    dry = mz_group_min(best, dry);
    if (t != 0)
        return;
    float level = 0.0f;
    if (wet < m) {
        level = (float)(m - 1) * ds[i];
        if (dry < m) {
            float a = MZ_FRACTION(dry - 1), b = MZ_FRACTION(dry);
            level = ((float)(dry - 1) + (a - 0.5f) / (a - b)) * ds[i];
        }
    }
    rows[row_base + i] = level;
}
