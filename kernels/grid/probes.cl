/* Probes and gauges (src/solvers/observe.h): the fluid at given points, by kernel
 * interpolation over the particles near them, between two steps; and the loads' sums, the
 * forces on solids the solver measured in the step.
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
#include "common/loads.clh"

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

/* The tree over a point's per-cell sums (part[], one per work-item c) and the point's result:
 * a probe's row (fraction, pressure, density, velocity; where the fraction is below 0.05 the
 * point is in air or a solid and the fields read 0, no fluid, rather than a ratio of a few
 * stray weights or NaN), or a gauge's point's sums into gauge_sums for gauge_level. A fixed
 * tree: the same order every run, and the same in probe_sums and probe_finish. Every
 * work-item calls it. */
inline void mz_probe_total(local float8 *part, uint c, uint pt, uint n_probes, float inv_rest,
                           global float *rows, uint row_base, global float8 *gauge_sums)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_PROBE_GROUP / 2; stride > 0; stride >>= 1) {
        if (c < stride)
            part[c] += part[c + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (c != 0)
        return;
    const float8 s = part[0];
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

/* One work-group per point: each work-item sums one cell of the point's 5 × 5 (× 5) (a
 * point's hundred-odd cells walked by one work-item were a latency chain on GPUs), then
 * mz_probe_total adds the cells' sums. The sums over the fluid's particles (body <
 * fluid_bodies) within kh of the point are (Σ w, Σ w p, Σ w rho, Σ w v). Slot k of a cell is
 * particle k, or with by_vals particle vals[k] (a solver that sorts a copy).
 *
 * Points 0 .. n_probes − 1 are the probes, each writing its row of the sample; the gauges'
 * points follow, their sums going to gauge_sums for gauge_level. A launch may cover the
 * probes, the gauges' points or both (its global offset says where it starts).
 *
 * A rank of a distributed run (MZ_SLABS) sums only the cells of its own layers [own_lo,
 * own_hi): its halo copies were not stepped, their state is the step's start. A point whose
 * five layers (those in the grid) are all its own is finished here, exactly as in one process
 * (the same particles in the same order); any other point's per-cell sums, zero where the
 * layer is another rank's, go to parts (MZ_PROBE_GROUP per point), for the ranks to assemble
 * and probe_finish to add (src/solvers/observe_dist.c). */
kernel __attribute__((reqd_work_group_size(MZ_PROBE_GROUP, 1, 1)))
void probe_sums(mz_grid_desc g, global const uint *cs, global const uint *ce,
                global const uint *vals, int by_vals, global const float4 *pos,
                global const float4 *vel, global const float *rho, int has_rho,
                global const float *p, int has_p, global const uint *body, uint fluid_bodies,
                float kh, float inv_rest, global const float4 *points, uint n_probes,
                global float *rows, uint row_base, global float8 *gauge_sums, int own_lo,
                int own_hi, global float8 *parts)
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
#if MZ_SLABS
        const int layer = MZ_SLAB_AXIS(cell + d);
        if (layer < own_lo || layer >= own_hi)
            key = 0xffffffffu;
#endif
    }
#if MZ_SLABS
    const int at = MZ_SLAB_AXIS(cell), layers = MZ_SLAB_AXIS(g.dims);
    const bool whole = max(at - 2, 0) >= own_lo && min(at + 2, layers - 1) < own_hi;
#endif
    keys[c] = key;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Hashed: cells that share a bucket scan it once, the first of them. */
    bool scan = key != 0xffffffffu;
    for (uint k = 0; scan && g.hashed && k < c; k++)
        if (keys[k] == key)
            scan = false;
    float8 s = (float8)(0.0f);
    const float kh2 = kh * kh;
    /* A gauge's point needs the fraction alone: its work-group reads no velocity, pressure or
     * density (most points are gauges': that traffic was most of the cost). */
    const bool fields = pt < n_probes;
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
            s.s0 += w;
            if (!fields)
                continue;
            const float4 v = mz_vec(vel[j]);
            if (has_p)
                s.s1 += w * p[j];
            if (has_rho)
                s.s2 += w * rho[j];
            s.s3 += w * v.x;
            s.s4 += w * v.y;
            s.s5 += w * v.z;
        }
    }
#if MZ_SLABS
    if (!whole) { /* the whole work-group alike */
        parts[pt * MZ_PROBE_GROUP + c] = s;
        return;
    }
#endif
    part[c] = s;
    mz_probe_total(part, c, pt, n_probes, inv_rest, rows, row_base, gauge_sums);
}

/* Distributed: the points probe_sums left to the ranks, which[k] for k of the launch, their
 * cells' sums assembled from every rank in parts (MZ_PROBE_GROUP each): the same tree and
 * result as a point finished in probe_sums. */
kernel __attribute__((reqd_work_group_size(MZ_PROBE_GROUP, 1, 1)))
void probe_finish(global const float8 *parts, global const uint *which, uint n_probes,
                  float inv_rest, global float *rows, uint row_base,
                  global float8 *gauge_sums)
{
    local float8 part[MZ_PROBE_GROUP];
    const uint k = get_group_id(0), c = get_local_id(0);
    part[c] = parts[k * MZ_PROBE_GROUP + c];
    mz_probe_total(part, c, which[k], n_probes, inv_rest, rows, row_base, gauge_sums);
}

/* The layer of each point along the slab axis, as probe_sums finds it (mz_cell_coord): the
 * host's plan of which rank sums which cell (observe_dist.c), once. */
kernel void probe_layers(mz_grid_desc g, global const float4 *points, uint n,
                         global int *layer)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const int4 c = mz_cell_coord(&g, points[i]);
    layer[i] = MZ_SLAB_AXIS(c);
}

#define MZ_GAUGE_GROUP 256
#define MZ_WALL_TABLE 64 /* intervals of the walls' table, over distances 0 .. kh */

/* The part of a point's kernel beyond a wall at distance d (table[k]: at d = k kh / 64,
 * from the host's quadrature: 0.5 on the wall, 0 from kh on). */
inline float mz_wall_part(float d, float kh, global const float *table)
{
    float q = fmax(d / kh, 0.0f) * (float)MZ_WALL_TABLE;
    if (!(q < (float)MZ_WALL_TABLE))
        return 0.0f;
    int k = (int)q;
    return table[k] + (q - (float)k) * (table[k + 1] - table[k]);
}

/* The domain's walls' share of a point's kernel: 1 minus the product of what each wall leaves
 * (exact near one wall, close to it in a corner). */
inline float mz_walls_fraction(float4 x, float4 lo, float4 hi, float kh,
                               global const float *table)
{
    float inside = (1.0f - mz_wall_part(x.x - lo.x, kh, table)) *
                   (1.0f - mz_wall_part(hi.x - x.x, kh, table)) *
                   (1.0f - mz_wall_part(x.y - lo.y, kh, table)) *
                   (1.0f - mz_wall_part(hi.y - x.y, kh, table));
#if MZ_DIM == 3
    inside *= (1.0f - mz_wall_part(x.z - lo.z, kh, table)) *
              (1.0f - mz_wall_part(hi.z - x.z, kh, table));
#endif
    return 1.0f - inside;
}

/* What a gauge sees at its point k: the fluid fraction plus the walls' share, so that the
 * floor under a film of water counts as filled and the film reads its thickness (without it,
 * a film thinner than the kernel's reach never filled half of it and read dry). */
#define MZ_FRACTION(k)                                                                         \
    (sums[first[i] + (k)].s0 * inv_rest +                                                      \
     mz_walls_fraction(points[n_probes + first[i] + (k)], lo, hi, kh, table))

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

/* A gauge's level: the distance from its start along its points (first .. first + count − 1
 * of the gauges' points, ds apart; their sums from probe_sums) to where what it sees first
 * falls below 0.5 for a spacing (three points: a hole narrower than that inside unordered
 * water, one in a hundred points of a jittered FLIP tank, is not its surface), linear between
 * the two points around the crossing; 0 when its start is dry, its length when no point is. Water above the first crossing (spray, a plunging jet)
 * does not count. One work-group per gauge, each work-item a stretch of its points (one
 * work-item walking a thousand points was a chain of memory latencies on GPUs), the first dry
 * point by minimum over the stretches. */
kernel __attribute__((reqd_work_group_size(MZ_GAUGE_GROUP, 1, 1)))
void gauge_level(global const uint *first, global const uint *count, global const float *ds,
                 global const float8 *sums, float inv_rest, global const float4 *points,
                 uint n_probes, float4 lo, float4 hi, float kh, global const float *table,
                 global float *rows, uint row_base)
{
    local uint best[MZ_GAUGE_GROUP];
    const uint i = get_group_id(0), t = get_local_id(0), m = count[i];
    const uint chunk = (m + MZ_GAUGE_GROUP - 1) / MZ_GAUGE_GROUP;
    const uint lo_k = min(t * chunk, m), hi_k = min(lo_k + chunk, m);
    uint dry = m;
    for (uint k = lo_k; k < hi_k && dry == m; k++)
        if (!(MZ_FRACTION(k) >= 0.5f) && (k + 1 >= m || !(MZ_FRACTION(k + 1) >= 0.5f)) &&
            (k + 2 >= m || !(MZ_FRACTION(k + 2) >= 0.5f)))
            dry = k;
    dry = mz_group_min(best, dry);
    if (t != 0)
        return;
    float level = (float)(m - 1) * ds[i];
    if (dry == 0) {
        level = 0.0f;
    } else if (dry < m) {
        float a = MZ_FRACTION(dry - 1), b = MZ_FRACTION(dry);
        level = ((float)(dry - 1) + (a - 0.5f) / (a - b)) * ds[i];
    }
    rows[row_base + i] = level;
}

/* A load's force and torque (src/solvers/observe.h): the sum of the forces its elements
 * carry (first[i] .. first[i] + count[i] − 1, filled by the solver in the step) and of their
 * moments (x − about) × f. One work-group per load, each work-item a strided share of the
 * elements, then a fixed tree: the same order every run. */
kernel __attribute__((reqd_work_group_size(MZ_LOAD_GROUP, 1, 1)))
void load_sums(global const float4 *at, global const float4 *force, global const uint *first,
               global const uint *count, global const float4 *about, global float *rows,
               uint row_base)
{
    local float8 part[MZ_LOAD_GROUP];
    const uint i = get_group_id(0), t = get_local_id(0);
    const uint begin = first[i], end = begin + count[i];
    const float4 c = about[i];
    float4 f = (float4)(0.0f), m = (float4)(0.0f);
    for (uint e = begin + t; e < end; e += MZ_LOAD_GROUP) {
        const float4 fe = mz_vec(force[e]);
        f += fe;
        m += cross(mz_vec(at[e] - c), fe);
    }
    mz_load_total(part, t, f, m, rows + row_base + 6 * i);
}

#define MZ_MAX_POSES 17 /* scene.h */

/* The moving colliders' poses at the step's end, computed by the host from their laws:
 * (displacement x, y, z) or (angle, 0, 0) each. */
typedef struct {
    float4 v[MZ_MAX_POSES];
} mz_motion_rows;

/* Copy them into the sample row (the values come as the argument: no buffer to keep alive). */
kernel void motion_rows(mz_motion_rows now, uint n, global float *rows, uint row_base)
{
    uint k = get_global_id(0);
    if (k >= n)
        return;
    global float *row = rows + row_base + 3 * k;
    row[0] = now.v[k].x;
    row[1] = now.v[k].y;
    row[2] = now.v[k].z;
}
