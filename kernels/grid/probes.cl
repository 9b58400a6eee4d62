/* Probes and gauges (src/solvers/observe.h): the fluid at given points, by kernel
 * interpolation over the particles near them, between two steps; and the loads' sums, the
 * forces on solids the solver measured in the step.
 *
 * Two searches. probe_near: the grid was built from the positions sampled (the next step's,
 * built before that step moves anything, or only indexed for a sample that cannot wait), so
 * the cell around a point and its neighbours (3 × 3 × 3) hold every particle within the
 * interpolation radius kh ≤ one cell. probe_sums: the grid is the one the solver built at the
 * start of the step just taken (a solver whose next grid is built from other positions, PBF's
 * predicted ones); the particles have moved since, by less than a cell (every solver's CFL
 * condition keeps a step's motion under its support radius, which is at most a cell), so it
 * searches two cells around a point (5 × 5 × 5), 4.6 times the cells. Either way each particle
 * within kh is found exactly once, in a fixed order: deterministic sums.
 *
 * The weight is Wendland C2's shape, (1 − q)^4 (1 + 4q) with q = r / kh, unnormalised: the
 * fields divide by the summed weights (Shepard), and the fluid fraction by the sum the fluid's
 * rest lattice gives on average (inv_rest), so that still water reads 1. */
#include "common/common.clh"
#include "grid/grid.clh"
#include "grid/gauge_level.clh"
#include "common/loads.clh"

#if MZ_DIM == 2
#define MZ_PROBE_DZ 0
#define MZ_PROBE_GROUP 32 /* a work-item per cell of the 5 × 5 around a point */
#define MZ_NEAR_DZ 0
#define MZ_NEAR_LANES 16 /* a work-item per cell of the 3 × 3 */
#else
#define MZ_PROBE_DZ 2
#define MZ_PROBE_GROUP 128 /* 5 × 5 × 5 */
#define MZ_NEAR_DZ 1
#define MZ_NEAR_LANES 32 /* 3 × 3 × 3 */
#endif
#define MZ_PROBE_CELLS (25 * (2 * MZ_PROBE_DZ + 1))
#define MZ_NEAR_CELLS (9 * (2 * MZ_NEAR_DZ + 1))
/* probe_near's work-group: several points (MZ_NEAR_LANES work-items each), or one gauge's
 * level (128 work-items share its points, as probe_sums' 3D group did a point's cells; one
 * point a group was not tried). */
#define MZ_NEAR_GROUP 128
#define MZ_NEAR_POINTS (MZ_NEAR_GROUP / MZ_NEAR_LANES)
#define MZ_GAUGE_GROUP 256
#define MZ_NO_CELL 0xffffffffu

/* Where slot k's values are (the host's `order`): particle k, or vals[k], the slot it had
 * before the build (a grid that sorts a copy or was only indexed: every buffer; after a build
 * that moved the particles: the buffers it did not move, last step's densities and pressures). */
#define MZ_BY_VALS_PARTICLES 1
#define MZ_BY_VALS_DENSITY 2
#define MZ_BY_VALS_PRESSURE 4

inline float mz_probe_weight(float r2, float kh)
{
    float q = sqrt(r2) / kh;
    if (!(q < 1.0f))
        return 0.0f;
    float a = (1.0f - q) * (1.0f - q);
    return a * a * (1.0f + 4.0f * q);
}

/* The key of cell c, one of a point's neighbourhood, or MZ_NO_CELL: outside a dense grid, or
 * (distributed) in a layer another rank sums. */
inline uint mz_probe_key(const mz_grid_desc *g, int4 c, int own_lo, int own_hi)
{
    uint key = MZ_NO_CELL, none[1];
    int nnone = 0;
    if (g->hashed)
        key = mz_cell_key(g, c);
    else if (!mz_grid_visit_cell_(g, c, none, &nnone, &key))
        key = MZ_NO_CELL;
#if MZ_SLABS
    const int layer = MZ_SLAB_AXIS(c);
    if (layer < own_lo || layer >= own_hi)
        key = MZ_NO_CELL;
#endif
    return key;
}

/* A cell's sums for the point x over the fluid's particles (body < fluid_bodies) within kh:
 * (Σ w, Σ w p, Σ w rho, Σ w v); a gauge's point (fields false) needs the fraction alone and
 * reads no velocity, pressure or density (most points are gauges': that traffic was most of
 * the cost). */
inline float8 mz_probe_cell(uint key, float4 x, global const uint *cs, global const uint *ce,
                            global const uint *vals, int order, global const float4 *pos,
                            global const float4 *vel, global const float *rho, int has_rho,
                            global const float *p, int has_p, global const uint *body,
                            uint fluid_bodies, float kh, bool fields)
{
    float8 s = (float8)(0.0f);
    if (key == MZ_NO_CELL)
        return s;
    const float kh2 = kh * kh;
    uint lo, end;
    mz_cell_range(cs, ce, key, &lo, &end);
    for (uint k = lo; k < end; k++) {
        const uint j = order & MZ_BY_VALS_PARTICLES ? vals[k] : k;
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
        const uint before = order ? vals[k] : k;
        if (has_p)
            s.s1 += w * p[order & MZ_BY_VALS_PRESSURE ? before : k];
        if (has_rho)
            s.s2 += w * rho[order & MZ_BY_VALS_DENSITY ? before : k];
        s.s3 += w * v.x;
        s.s4 += w * v.y;
        s.s5 += w * v.z;
    }
    return s;
}

/* The fixed tree over a point's per-cell sums, part[c] from each of the work-group's `lanes`
 * work-items, the total left in part[0]. The same order every run, and the same in the kernels
 * that sum a point (probe_near's loop for its runs of MZ_NEAR_LANES) and those that finish it
 * (probe_finish*). Every work-item calls it. */
inline void mz_probe_tree(local float8 *part, uint c, uint lanes)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = lanes / 2; stride > 0; stride >>= 1) {
        if (c < stride)
            part[c] += part[c + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* A point's result from its sums s: a probe's row (fraction, pressure, density, velocity;
 * where the fraction is below 0.05 the point is in air or a solid and the fields read 0, no
 * fluid, rather than a ratio of a few stray weights or NaN), or a gauge's point's sums into
 * gauge_sums for its gauge's level. */
inline void mz_probe_put(float8 s, uint pt, uint n_probes, float inv_rest, global float *rows,
                         uint row_base, global float8 *gauge_sums)
{
    if (pt >= n_probes) {
        gauge_sums[pt - n_probes] = s;
    } else {
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
}

/* Cells that share a hashed bucket scan it once, the first of them (keys[from .. t)). */
inline bool mz_probe_first_of_bucket(const mz_grid_desc *g, local const uint *keys, uint from,
                                     uint t, uint key)
{
    bool scan = key != MZ_NO_CELL;
    for (uint k = from; scan && g->hashed && k < t; k++)
        if (keys[k] == key)
            scan = false;
    return scan;
}

/* One work-group per point on the step's grid (the 5 × 5 (× 5) search above): each work-item
 * sums one cell of the point's neighbourhood (a point's hundred-odd cells walked by one
 * work-item were a latency chain on GPUs), then the tree adds the cells' sums. Points
 * 0 .. n_probes − 1 are the probes, each writing its row of the sample; the gauges' points
 * follow, their sums going to gauge_sums for gauge_level. A launch may cover the probes, the
 * gauges' points or both (its global offset says where it starts).
 *
 * A rank of a distributed run (MZ_SLABS) sums only the cells of its own layers [own_lo,
 * own_hi): its halo copies were not stepped, their state is the step's start. A point whose
 * five layers (those in the grid) are all its own is finished here, exactly as in one process
 * (the same particles in the same order); any other point's per-cell sums, zero where the
 * layer is another rank's, go to parts (MZ_PROBE_GROUP per point), for the ranks to assemble
 * and probe_finish to add (src/solvers/observe_dist.c). */
kernel __attribute__((reqd_work_group_size(MZ_PROBE_GROUP, 1, 1)))
void probe_sums(mz_grid_desc g, global const uint *cs, global const uint *ce,
                global const uint *vals, int order, global const float4 *pos,
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
    uint key = MZ_NO_CELL;
    if (c < MZ_PROBE_CELLS) {
        int4 d = (int4)((int)(c % 5) - 2, (int)(c / 5 % 5) - 2, (int)(c / 25) - MZ_PROBE_DZ, 0);
        key = mz_probe_key(&g, cell + d, own_lo, own_hi);
    }
    keys[c] = key;
    barrier(CLK_LOCAL_MEM_FENCE);
    const bool scan = mz_probe_first_of_bucket(&g, keys, 0, c, key);
    float8 s = mz_probe_cell(scan ? key : MZ_NO_CELL, x, cs, ce, vals, order, pos, vel, rho,
                             has_rho, p, has_p, body, fluid_bodies, kh, pt < n_probes);
#if MZ_SLABS
    const int at = MZ_SLAB_AXIS(cell), layers = MZ_SLAB_AXIS(g.dims);
    if (!(max(at - 2, 0) >= own_lo && min(at + 2, layers - 1) < own_hi)) {
        parts[pt * MZ_PROBE_GROUP + c] = s; /* the whole work-group alike */
        return;
    }
#endif
    part[c] = s;
    mz_probe_tree(part, c, MZ_PROBE_GROUP);
    if (c == 0)
        mz_probe_put(part[0], pt, n_probes, inv_rest, rows, row_base, gauge_sums);
}

/* Distributed: whether the layers of a point in `cell` (those in the grid) are all this
 * rank's, [own_lo, own_hi), for the 3 × 3 × 3 search. */
inline bool mz_near_whole(const mz_grid_desc *g, int4 cell, int own_lo, int own_hi)
{
    const int at = MZ_SLAB_AXIS(cell), layers = MZ_SLAB_AXIS(g->dims);
    return max(at - 1, 0) >= own_lo && min(at + 1, layers - 1) < own_hi;
}

/* The points [pt_first, pt_end) on a grid built from the positions sampled (the 3 × 3 × 3
 * search above), MZ_NEAR_POINTS to a work-group of MZ_NEAR_GROUP, MZ_NEAR_LANES work-items a
 * point, each summing a cell; the gauges' points' sums go to gauge_sums[sums_out + k]. The
 * work-groups from point_groups on find the gauges' levels of an earlier sample, one gauge
 * each, from its sums at gauge_sums[sums_in ..] into its row at level_base: the launch after
 * a sample's does its levels, so that a sample takes one launch (src/solvers/observe.c).
 * Both kinds of work-group pass the same barriers, none of them in a branch (PoCL wrote every
 * work-item's partial sums when the levels took a branch of their own).
 *
 * Distributed: as probe_sums, over the three layers around a point; the points not finished
 * here leave MZ_NEAR_LANES cells' sums each in parts, for probe_finish_near. */
kernel __attribute__((reqd_work_group_size(MZ_NEAR_GROUP, 1, 1)))
void probe_near(mz_grid_desc g, global const uint *cs, global const uint *ce,
                global const uint *vals, int order, global const float4 *pos,
                global const float4 *vel, global const float *rho, int has_rho,
                global const float *p, int has_p, global const uint *body, uint fluid_bodies,
                float kh, float inv_rest, global const float4 *points, uint n_probes,
                uint pt_first, uint pt_end, global float *rows, uint row_base,
                global float8 *gauge_sums, uint sums_out, int own_lo, int own_hi,
                global float8 *parts, uint point_groups, global const uint *first,
                global const uint *count, global const float *ds, uint sums_in, float4 lo,
                float4 hi, global const float *table, uint level_base)
{
    local uint keys[MZ_NEAR_GROUP]; /* a point's cells, then a gauge's first dry points */
    local float8 part[MZ_NEAR_GROUP];
    const uint group = get_group_id(0), t = get_local_id(0);
    const bool level = group >= point_groups;
    const uint c = t % MZ_NEAR_LANES, lane0 = t - c;
    const uint pt = pt_first + group * MZ_NEAR_POINTS + t / MZ_NEAR_LANES;
    const bool live = !level && pt < pt_end;
    const float4 x = points[live ? pt : pt_first];
    const int4 cell = mz_cell_coord(&g, x);
    uint key = MZ_NO_CELL;
    if (live && c < MZ_NEAR_CELLS) {
        int4 d = (int4)((int)(c % 3) - 1, (int)(c / 3 % 3) - 1, (int)(c / 9) - MZ_NEAR_DZ, 0);
        key = mz_probe_key(&g, cell + d, own_lo, own_hi);
    }
    keys[t] = key;
    barrier(CLK_LOCAL_MEM_FENCE);
    const bool scan = mz_probe_first_of_bucket(&g, keys, lane0, t, key);
    float8 s = mz_probe_cell(scan ? key : MZ_NO_CELL, x, cs, ce, vals, order, pos, vel, rho,
                             has_rho, p, has_p, body, fluid_bodies, kh, pt < n_probes);
    bool whole = true;
#if MZ_SLABS
    whole = mz_near_whole(&g, cell, own_lo, own_hi);
    if (live && !whole)
        parts[pt * MZ_NEAR_LANES + c] = s;
#endif
    part[t] = s;
    /* A gauge's work-group: its stretch's first dry point, the smallest of them below. */
    const uint gauge = level ? group - point_groups : 0;
    const global float8 *sums = gauge_sums + sums_in;
    barrier(CLK_LOCAL_MEM_FENCE); /* (keys read above) */
    keys[t] = level ? mz_gauge_first_dry(gauge, MZ_NEAR_GROUP, first, count, sums, inv_rest,
                                         points, n_probes, lo, hi, kh, table)
                    : 0;
    /* The points' trees (strides below MZ_NEAR_LANES) and the gauges' minimum, one loop. */
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint stride = MZ_NEAR_GROUP / 2; stride > 0; stride >>= 1) {
        if (!level && stride < MZ_NEAR_LANES && c < stride)
            part[t] += part[t + stride];
        if (level && t < stride)
            keys[t] = min(keys[t], keys[t + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (level && t == 0)
        mz_gauge_put(gauge, keys[0], first, count, ds, sums, inv_rest, points, n_probes, lo,
                     hi, kh, table, rows, level_base);
    if (c == 0 && live && whole)
        mz_probe_put(part[t], pt, n_probes, inv_rest, rows, row_base, gauge_sums + sums_out);
}

/* Distributed: the points a sums launch left to the ranks, which[k] for k of the launch, their
 * cells' sums assembled from every rank in parts (`lanes` each): the same tree and result as
 * a point finished in that launch. One work-group a point. */
inline void mz_probe_finish(local float8 *part, uint lanes, global const float8 *parts,
                            global const uint *which, uint n_probes, float inv_rest,
                            global float *rows, uint row_base, global float8 *gauge_sums)
{
    const uint k = get_group_id(0), c = get_local_id(0);
    part[c] = parts[k * lanes + c];
    mz_probe_tree(part, c, lanes);
    if (c == 0)
        mz_probe_put(part[0], which[k], n_probes, inv_rest, rows, row_base, gauge_sums);
}

/* The points probe_sums left (MZ_PROBE_GROUP parts each). */
kernel __attribute__((reqd_work_group_size(MZ_PROBE_GROUP, 1, 1)))
void probe_finish(global const float8 *parts, global const uint *which, uint n_probes,
                  float inv_rest, global float *rows, uint row_base,
                  global float8 *gauge_sums)
{
    local float8 part[MZ_PROBE_GROUP];
    mz_probe_finish(part, MZ_PROBE_GROUP, parts, which, n_probes, inv_rest, rows, row_base,
                    gauge_sums);
}

/* The points probe_near left (MZ_NEAR_LANES cells each). */
kernel __attribute__((reqd_work_group_size(MZ_NEAR_LANES, 1, 1)))
void probe_finish_near(global const float8 *parts, global const uint *which, uint n_probes,
                       float inv_rest, global float *rows, uint row_base,
                       global float8 *gauge_sums)
{
    local float8 part[MZ_NEAR_LANES];
    mz_probe_finish(part, MZ_NEAR_LANES, parts, which, n_probes, inv_rest, rows, row_base,
                    gauge_sums);
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

/* Each gauge's level (mz_gauge_level, a work-group per gauge) from its points' sums at
 * sums[sums_in ..], into the row at row_base. */
kernel __attribute__((reqd_work_group_size(MZ_GAUGE_GROUP, 1, 1)))
void gauge_level(global const uint *first, global const uint *count, global const float *ds,
                 global const float8 *sums, uint sums_in, float inv_rest,
                 global const float4 *points, uint n_probes, float4 lo, float4 hi, float kh,
                 global const float *table, global float *rows, uint row_base)
{
    local uint best[MZ_GAUGE_GROUP];
    const uint i = get_group_id(0);
    const uint dry = mz_group_min(best, mz_gauge_first_dry(i, MZ_GAUGE_GROUP, first, count,
                                                           sums + sums_in, inv_rest, points,
                                                           n_probes, lo, hi, kh, table),
                                  MZ_GAUGE_GROUP);
    if (get_local_id(0) == 0)
        mz_gauge_put(i, dry, first, count, ds, sums + sums_in, inv_rest, points, n_probes, lo,
                     hi, kh, table, rows, row_base);
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
