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
#else
#define MZ_PROBE_DZ 2
#endif

typedef struct {
    float w, p, rho;
    float4 v;
} mz_probe_sum;

inline float mz_probe_weight(float r2, float kh)
{
    float q = sqrt(r2) / kh;
    if (!(q < 1.0f))
        return 0.0f;
    float a = (1.0f - q) * (1.0f - q);
    return a * a * (1.0f + 4.0f * q);
}

/* The sums over the fluid's particles (body < fluid_bodies) within kh of x. Slot k of a cell
 * is particle k, or with by_vals particle vals[k] (a solver that sorts a copy). */
inline mz_probe_sum mz_probe_gather(float4 x, mz_grid_desc g, global const uint *cs,
                                    global const uint *ce, global const uint *vals, int by_vals,
                                    global const float4 *pos, global const float4 *vel,
                                    global const float *rho, int has_rho,
                                    global const float *p, int has_p,
                                    global const uint *body, uint fluid_bodies, float kh)
{
    mz_probe_sum s = {0.0f, 0.0f, 0.0f, (float4)(0.0f)};
    const int4 c = mz_cell_coord(&g, x);
    const float kh2 = kh * kh;
    uint seen[125];
    int nseen = 0;
    for (int dz = -MZ_PROBE_DZ; dz <= MZ_PROBE_DZ; dz++)
        for (int dy = -2; dy <= 2; dy++)
            for (int dx = -2; dx <= 2; dx++) {
                uint key;
                if (!mz_grid_visit_cell_(&g, c + (int4)(dx, dy, dz, 0), seen, &nseen, &key))
                    continue;
                const uint end = ce[key];
                for (uint k = cs[key]; k < end; k++) {
                    const uint j = by_vals ? vals[k] : k;
                    if (body[j] >= fluid_bodies)
                        continue;
                    const float r2 = mz_grid_dist2_(pos[j] - x);
                    if (!(r2 < kh2))
                        continue;
                    const float w = mz_probe_weight(r2, kh);
                    s.w += w;
                    if (has_p)
                        s.p += w * p[j];
                    if (has_rho)
                        s.rho += w * rho[j];
                    s.v += w * mz_vec(vel[j]);
                }
            }
    return s;
}

/* A probe's row: fraction, pressure, density, velocity x, y, z. Where the fraction is below
 * 0.05 the point is in air or a solid: the fields read 0 (no fluid) rather than a ratio of
 * a few stray weights, or NaN. */
kernel void probe_sample(uint n, mz_grid_desc g, global const uint *cs, global const uint *ce,
                         global const uint *vals, int by_vals, global const float4 *pos,
                         global const float4 *vel, global const float *rho, int has_rho,
                         global const float *p, int has_p, global const uint *body,
                         uint fluid_bodies, float kh, float inv_rest,
                         global const float4 *points, global float *rows, uint row_base)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    mz_probe_sum s = mz_probe_gather(points[i], g, cs, ce, vals, by_vals, pos, vel, rho, has_rho,
                                     p, has_p, body, fluid_bodies, kh);
    float fraction = s.w * inv_rest;
    float inv = fraction >= 0.05f ? 1.0f / s.w : 0.0f;
    global float *row = rows + row_base + 6 * i;
    row[0] = fraction;
    row[1] = s.p * inv;
    row[2] = s.rho * inv;
    row[3] = s.v.x * inv;
    row[4] = s.v.y * inv;
    row[5] = s.v.z * inv;
}

/* The fluid fraction at every point of every gauge. */
kernel void gauge_fraction(uint n, mz_grid_desc g, global const uint *cs, global const uint *ce,
                           global const uint *vals, int by_vals, global const float4 *pos,
                           global const float4 *vel, global const uint *body,
                           uint fluid_bodies, float kh, float inv_rest,
                           global const float4 *points, global float *fraction)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    mz_probe_sum s = mz_probe_gather(points[i], g, cs, ce, vals, by_vals, pos, vel, NULL, 0,
                                     NULL, 0, body, fluid_bodies, kh);
    fraction[i] = s.w * inv_rest;
}

/* A gauge's level: from its start along its points (first .. first + count − 1, ds apart),
 * the distance to where the fraction falls below 0.5 after first reaching it, linear between
 * the two points around the crossing; 0 when no point is wet, the gauge's length when the
 * water reaches its end. A start on the floor reads about 0.5 (half its kernel is in the
 * wall), hence "after first reaching it"; water above the first crossing (spray, a plunging
 * jet) does not count. */
kernel void gauge_level(uint n, global const uint *first, global const uint *count,
                        global const float *ds, global const float *fraction,
                        global float *rows, uint row_base)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    global const float *f = fraction + first[i];
    uint m = count[i], k = 0;
    while (k < m && !(f[k] >= 0.5f))
        k++;
    float level = 0.0f;
    if (k < m) {
        while (k < m && f[k] >= 0.5f)
            k++;
        level = (float)(m - 1) * ds[i];
        if (k < m) {
            float t = (f[k - 1] - 0.5f) / (f[k - 1] - f[k]);
            level = ((float)(k - 1) + t) * ds[i];
        }
    }
    rows[row_base + i] = level;
}
