/* The geometric multigrid V-cycle that preconditions FLIP's pressure CG
 * (src/solvers/flip/flip_multigrid.c runs it; the design: docs/ARCHITECTURE.md, FLIP).
 *
 * Level 0 is the pressure grid itself (its fluid cells, its diagonal with the ghost-fluid
 * surface terms). Level l + 1 has ceil(n/2) cells per simulated axis, twice as wide, laid out
 * like level 0 (flip_grid: one node per cell plus one past the end, read as solid). A coarse cell
 * is fluid when any of its children is, else air when any child is, else solid: the coarse
 * fluid covers the fine fluid, so every fine fluid cell has a fluid parent. Its operator is the
 * Poisson stencil rediscretised at its width: weight 1/h² to each non-solid neighbour, the air
 * ones Dirichlet (p = 0 at their centres: no surface fraction on coarse levels), solid ones
 * Neumann (left out). Transfers: P is the cell-centred trilinear interpolation (1D weights 3/4
 * to the parent, 1/4 to its neighbour on the child's side) with air corners 0 and solid corners
 * replaced by the parent (the correction's gradient into a wall vanishes, as the pressure's
 * does); R = Pᵀ / 2^d exactly, so the cycle is symmetric. */
#include "common/common.clh"
#include "flip/flip_grid.clh"
#include "flip/flip_poisson.clh"

/* 4 or 8 children / corners */
#define MG_CORNERS (1 << MZ_DIM)

/* A coarse level's residual b − A z at fluid cell c, and its diagonal. */
inline float2 coarse_residual(const flip_grid *g, int4 c, uint node, global const uchar *type,
                              global const float2 *b, global const float2 *z, float *diag)
{
    float2 zc = z[node], s = b[node];
    float d = 0.0f;
    /* the neighbours' types first: loads that do not wait for each other (restrict_cell) */
    int ts[2 * MZ_DIM];
#pragma unroll
    for (int a = 0; a < MZ_DIM; a++)
#pragma unroll
        for (int k = -1; k <= 1; k += 2)
            ts[2 * a + (k + 1) / 2] = type_at(type, g, c + k * unit(a));
#pragma unroll
    for (int a = 0; a < MZ_DIM; a++)
#pragma unroll
        for (int k = -1; k <= 1; k += 2) {
            int4 n = c + k * unit(a);
            int t = ts[2 * a + (k + 1) / 2];
            if (t == FLIP_SOLID)
                continue;
            float w = comp(g->inv_cell2, a);
            d += w;
            s += t == FLIP_FLUID ? w * (z[node_index(g, n)] - zc) : -w * zc;
        }
    *diag = d;
    return s;
}

/* coarse_residual with z = 0 everywhere, in the same operations (the same bits): the first
 * half-sweep of a level, fused into its restriction, which has the types of the cell's 3^d
 * block already (tc, as restrict_cell lays it out: the cell at 13, ±1 along x, ±3 y, ±9 z). */
inline float2 coarse_residual_zero(const flip_grid *g, const uchar *tc, float2 b, float *diag)
{
    float2 zc = (float2)(0.0f), s = b;
    float d = 0.0f;
    const int step[3] = {1, 3, 9};
    for (int a = 0; a < MZ_DIM; a++)
        for (int k = -1; k <= 1; k += 2) {
            int t = tc[13 + k * step[a]];
            if (t == FLIP_SOLID)
                continue;
            float w = comp(g->inv_cell2, a);
            d += w;
            s += t == FLIP_FLUID ? w * ((float2)(0.0f) - zc) : -w * zc;
        }
    *diag = d;
    return s;
}

/* Corner s of fine cell f (bit a of s: the coarse neighbour on f's side along axis a instead of
 * the parent) and its trilinear weight. */
inline int4 corner(int4 f, int s, float *w)
{
    int4 parent = f >> 1, k = parent;
    *w = 1.0f;
    for (int a = 0; a < MZ_DIM; a++) {
        bool side = (s >> a) & 1;
        int o = (comp_i(f, a) & 1) ? 1 : -1;
        if (side)
            k = set_comp_i(k, a, comp_i(parent, a) + o);
        *w *= side ? 0.25f : 0.75f;
    }
    return k;
}

/* Each coarse cell's type from its children. */
kernel void mg_coarsen(uint n_nodes, flip_grid gf, flip_grid gc, global const uchar *type_f,
                       global uchar *type_c)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&gc, node);
    bool fluid = false, air = false;
    for (int s = 0; is_cell(&gc, c) && s < MG_CORNERS; s++) {
        int t = type_at(type_f, &gf, 2 * c + (int4)(s & 1, (s >> 1) & 1, (s >> 2) & 1, 0));
        fluid |= t == FLIP_FLUID;
        air |= t == FLIP_AIR;
    }
    type_c[node] = fluid ? FLIP_FLUID : air ? FLIP_AIR : FLIP_SOLID;
}

/* The coarse-level kernels visit the level's fluid cells, listed by colour in node order as on
 * level 0 (flip_pressure.cl's fluid_count and fluid_list, run on the level's grid and types). */

/* One cell's Gauss–Seidel update on a coarse level, in place. */
inline void smooth_cell(const flip_grid *g, uint node, global const uchar *type,
                        global const float2 *b, global float2 *z)
{
    float d;
    float2 r = coarse_residual(g, node_coord(g, node), node, type, b, z, &d);
    if (d > 0.0f)
        z[node] += r / d;
}

/* One work-group's half-sweeps of a level: the cells of `colour` (n0 of colour 0 listed first,
 * then n1), then a barrier. */
inline void group_half_sweep(const flip_grid *g, uint n0, uint n1, int colour,
                             global const uint *list, global const uchar *type,
                             global const float2 *b, global float2 *z)
{
    uint first = colour ? n0 : 0, n = colour ? n1 : n0;
    for (uint item = get_local_id(0); item < n; item += get_local_size(0))
        smooth_cell(g, list[first + item], type, b, z);
    barrier(CLK_GLOBAL_MEM_FENCE);
}

/* Half a red-black Gauss–Seidel sweep of a coarse level, in place: the fluid cells of one
 * colour, list[first .. first + n_items). */
kernel void mg_smooth(uint n_items, uint first, flip_grid g, global const uint *list,
                      global const uchar *type, global const float2 *b, global float2 *z)
{
    uint item = get_global_id(0);
    if (item < n_items)
        smooth_cell(&g, list[first + item], type, b, z);
}

/* The coarsest level solved roughly by one work-group: `sweeps` red-black sweeps, then as many
 * black-red ones (mirrored, so the solve is a symmetric operator), barriers between halves. */
inline void group_coarsest(const flip_grid *g, uint n0, uint n1, uint sweeps,
                           global const uint *list, global const uchar *type,
                           global const float2 *b, global float2 *z)
{
    for (uint s = 0; s < 2 * sweeps; s++)
        for (int h = 0; h < 2; h++)
            group_half_sweep(g, n0, n1, s < sweeps ? h : 1 - h, list, type, b, z);
}

/* The coarsest level alone in one work-group (n0, n1: the list's cells of each colour). */
kernel void mg_coarsest(uint n0, uint n1, uint sweeps, flip_grid g, global const uint *list,
                        global const uchar *type, global const float2 *b, global float2 *z)
{
    group_coarsest(&g, n0, n1, sweeps, list, type, b, z);
}

/* res = b − A z: on a coarse level ... */
kernel void mg_residual(uint n_items, flip_grid g, global const uint *list,
                        global const uchar *type, global const float2 *b,
                        global const float2 *z, global float2 *res)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[item];
    float d;
    res[node] = coarse_residual(&g, node_coord(&g, node), node, type, b, z, &d);
}

/* ... and on level 0 (the fine operator, with the surface terms). */
kernel void mg_residual0(uint n_items, flip_grid g, global const uint *list,
                         global const uchar *type, global const float2 *b,
                         global const float *diag, global const float2 *z, global float2 *res)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[item];
    res[node] = residual_at(&g, node_coord(&g, node), node, type, b, diag, z);
}

/* b_c = R res_f = Pᵀ res_f / 2^d at coarse fluid cell C (list_c[item]), gathered from the 4^d
 * fine cells whose interpolation reaches C; its children also carry the weights of their solid
 * corners (replaced by C in P). z_c starts at 0; with `smooth`, the level's first half-sweep
 * (colour 0, list_c[0 .. n_red)) is done here too: from z = 0 a cell's update needs only its
 * own b_c, so it costs no launch and no pass (the same bits as mg_smooth after zeroing). */
inline void restrict_cell(uint item, uint n_red, int smooth, const flip_grid *gf,
                          const flip_grid *gc, global const uint *list_c,
                          global const uchar *type_f, global const uchar *type_c,
                          global const float2 *res_f, global float2 *b_c, global float2 *z_c)
{
    uint node = list_c[item];
    int4 c = node_coord(gc, node);
    const int zlo = MZ_DIM == 3 ? -1 : 0, zhi = MZ_DIM == 3 ? 2 : 0;
    /* Every type first, the 4^d fine cells' and the 3^d coarse cells' around C (a child's
     * corners): loads that do not wait for each other. Read one at a time inside the sum, each
     * waited for the one before, and a restriction into a level of a few hundred cells took
     * as long as one into a level of a million. */
    uchar tf[64], tc[27];
#pragma unroll
    for (int dz = zlo; dz <= zhi; dz++)
#pragma unroll
        for (int dy = -1; dy <= 2; dy++)
#pragma unroll
            for (int dx = -1; dx <= 2; dx++)
                tf[(dz + 1) * 16 + (dy + 1) * 4 + dx + 1] =
                    (uchar)type_at(type_f, gf, 2 * c + (int4)(dx, dy, dz, 0));
#pragma unroll
    for (int oz = -(MZ_DIM == 3); oz <= (MZ_DIM == 3); oz++)
#pragma unroll
        for (int oy = -1; oy <= 1; oy++)
#pragma unroll
            for (int ox = -1; ox <= 1; ox++)
                tc[(oz + 1) * 9 + (oy + 1) * 3 + ox + 1] =
                    (uchar)type_at(type_c, gc, c + (int4)(ox, oy, oz, 0));
    float2 sum = (float2)(0.0f);
#pragma unroll
    for (int dz = zlo; dz <= zhi; dz++)
#pragma unroll
        for (int dy = -1; dy <= 2; dy++)
#pragma unroll
            for (int dx = -1; dx <= 2; dx++) {
                int4 d = (int4)(dx, dy, dz, 0), f = 2 * c + d;
                if (tf[(dz + 1) * 16 + (dy + 1) * 4 + dx + 1] != FLIP_FLUID)
                    continue;
                float w = 1.0f;
                bool child = true;
                for (int a = 0; a < MZ_DIM; a++) {
                    int da = comp_i(d, a);
                    bool near = da == 0 || da == 1;
                    w *= near ? 0.75f : 0.25f;
                    child &= near;
                }
                for (int s = 1; child && s < MG_CORNERS; s++) {
                    float wk;
                    int4 o = corner(f, s, &wk) - c;
                    if (tc[(o.z + 1) * 9 + (o.y + 1) * 3 + o.x + 1] == FLIP_SOLID)
                        w += wk;
                }
                sum += w * res_f[node_index(gf, f)];
            }
    float2 b = sum * (1.0f / MG_CORNERS), z = (float2)(0.0f);
    b_c[node] = b;
    if (smooth && item < n_red) {
        float d;
        float2 r = coarse_residual_zero(gc, tc, b, &d);
        if (d > 0.0f)
            z += r / d;
    }
    z_c[node] = z;
}

kernel void mg_restrict(uint n_items, uint n_red, int smooth, flip_grid gf, flip_grid gc,
                        global const uint *list_c, global const uchar *type_f,
                        global const uchar *type_c, global const float2 *res_f,
                        global float2 *b_c, global float2 *z_c)
{
    uint item = get_global_id(0);
    if (item < n_items)
        restrict_cell(item, n_red, smooth, &gf, &gc, list_c, type_f, type_c, res_f, b_c, z_c);
}

/* (P z_c) at fine cell f: the parent and its neighbours on f's side, trilinear; an air corner
 * gives 0, a solid one the parent's value. */
inline float2 prolonged_at(const flip_grid *gc, int4 f, global const uchar *type_c,
                           global const float2 *z_c)
{
    float2 parent = z_c[node_index(gc, f >> 1)], sum = (float2)(0.0f);
    int ts[MG_CORNERS]; /* the corners' types first (fluid_neighbours) */
#pragma unroll
    for (int s = 0; s < MG_CORNERS; s++) {
        float w;
        ts[s] = type_at(type_c, gc, corner(f, s, &w));
    }
#pragma unroll
    for (int s = 0; s < MG_CORNERS; s++) {
        float w;
        int4 k = corner(f, s, &w);
        int t = ts[s];
        sum += t == FLIP_FLUID ? w * z_c[node_index(gc, k)] : t == FLIP_SOLID ? w * parent
                                                                               : (float2)(0.0f);
    }
    return sum;
}

/* z_f += P z_c at the fine level's fluid cell list_f[item]. */
inline void prolong_cell(uint item, global const uint *list_f, const flip_grid *gf,
                         const flip_grid *gc, global const uchar *type_c,
                         global const float2 *z_c, global float2 *z_f)
{
    uint node = list_f[item];
    z_f[node] += prolonged_at(gc, node_coord(gf, node), type_c, z_c);
}

kernel void mg_prolong(uint n_items, global const uint *list_f, flip_grid gf, flip_grid gc,
                       global const uchar *type_c, global const float2 *z_c, global float2 *z_f)
{
    uint item = get_global_id(0);
    if (item < n_items)
        prolong_cell(item, list_f, &gf, &gc, type_c, z_c, z_f);
}

/* The last two levels' part of the cycle in one work-group, one launch instead of a dozen
 * (they are small: a launch costs more than their work): level f (the one above the coarsest;
 * its first half-sweep already done by the restriction into it) pre-smoothed, its residual
 * restricted to the coarsest level c, that solved, prolonged back and f post-smoothed, each
 * phase behind a barrier. Every cell's arithmetic is the separate kernels' (the same bits).
 * f0, f1 and c0, c1: each level's cells of colour 0 and 1. */
kernel void mg_tail(uint f0, uint f1, flip_grid gf, global const uint *list_f,
                    global const uchar *type_f, global const float2 *b_f, global float2 *z_f,
                    global float2 *res_f, uint c0, uint c1, flip_grid gc,
                    global const uint *list_c, global const uchar *type_c, global float2 *b_c,
                    global float2 *z_c, uint smooth, uint sweeps)
{
    uint lid = get_local_id(0), lsize = get_local_size(0);
    for (uint h = 1; h < 2 * smooth; h++)
        group_half_sweep(&gf, f0, f1, h % 2, list_f, type_f, b_f, z_f);
    for (uint item = lid; item < f0 + f1; item += lsize) {
        uint node = list_f[item];
        float d;
        res_f[node] = coarse_residual(&gf, node_coord(&gf, node), node, type_f, b_f, z_f, &d);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint item = lid; item < c0 + c1; item += lsize)
        restrict_cell(item, c0, 0, &gf, &gc, list_c, type_f, type_c, res_f, b_c, z_c);
    barrier(CLK_GLOBAL_MEM_FENCE);
    group_coarsest(&gc, c0, c1, sweeps, list_c, type_c, b_c, z_c);
    for (uint item = lid; item < f0 + f1; item += lsize)
        prolong_cell(item, list_f, &gf, &gc, type_c, z_c, z_f);
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint h = 0; h < 2 * smooth; h++)
        group_half_sweep(&gf, f0, f1, 1 - h % 2, list_f, type_f, b_f, z_f);
}

