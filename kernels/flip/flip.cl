/* FLIP/PIC fluid on a MAC grid (src/solvers/flip/flip.c runs the stages; src/solvers/flip/flip.h has the layout).
 *
 * The grid's layout and helpers: flip/flip_grid.clh; the pressure projection:
 * flip_pressure.cl; the solids' kernels: flip_solids.cl.
 *
 * Weights are trilinear (hat functions one cell wide): P2G is a gather, one work-item per node
 * over the particles the neighbour grid lists near it, summed in the grid's fixed order; no
 * atomics, so runs are bit-identical. */
#include "common/wall_law.clh"
#include "common/common.clh"
#include "flip/flip_grid.clh"
#include "grid/grid.clh"

/* ---- particle to grid ---------------------------------------------------------------------- */

/* A particle's trilinear weights, at r (cell units from node c's corner), on the node's three
 * lower faces (x, y, z) and its cell's centre (w); inside: whether it lies in that cell. */
inline float4 p2g_weights(float4 r, uint *inside)
{
    float4 f0 = hat(r), f1 = hat(r - 0.5f); /* face offset 0, centre offset ½ */
#if MZ_DIM == 2
    f0.z = 1.0f;
    f1.z = 1.0f;
    bool inside_z = true;
#else
    bool inside_z = r.z >= 0.0f && r.z < 1.0f;
#endif
    *inside = r.x >= 0.0f && r.x < 1.0f && r.y >= 0.0f && r.y < 1.0f && inside_z;
    return (float4)(f0.x * f1.y * f1.z, f1.x * f0.y * f1.z, f1.x * f1.y * f0.z,
                    f1.x * f1.y * f1.z);
}

/* The node's faces from the weighted sums (sum / wsum per face), its cell's density from the
 * centre weight wsum.w and its type from the particles counted inside. */
inline void p2g_store(uint node, int4 c, const flip_grid *g, float4 sum, float4 wsum, uint count,
                      float inv_n0, int colliders, global const float *sdf,
                      global float4 *face_vel, global float *density, global uchar *type)
{
    float4 u = (float4)(0.0f);
    u.x = wsum.x > 0.0f ? sum.x / wsum.x : 0.0f;
    u.y = wsum.y > 0.0f ? sum.y / wsum.y : 0.0f;
#if MZ_DIM == 3
    u.z = wsum.z > 0.0f ? sum.z / wsum.z : 0.0f;
#endif
    /* Next to a wall the lattice continued beyond it is missing from the sum: divide by the share
     * of the weight that lies inside the domain (7/8 for a cell against one wall), so that a
     * full cell reads 1 there too, and the free surface is found at the same height. */
    float share = 1.0f;
    for (int a = 0; a < MZ_DIM; a++) {
        float ca = comp(convert_float4(c), a), na = comp(convert_float4(g->cells), a);
        share *= 1.0f - (ca == 0.0f ? 0.125f : 0.0f) - (ca == na - 1.0f ? 0.125f : 0.0f);
    }
    face_vel[node] = u;
    density[node] = wsum.w * inv_n0 / share;
    int t = FLIP_AIR;
    if (!is_cell(g, c) || (colliders && sdf[node] < 0.0f))
        t = FLIP_SOLID;
    else if (count > 0)
        t = FLIP_FLUID;
    type[node] = (uchar)t;
}

/* The neighbour grid's cells a node's row y, z scans, from x = c.x to x1, as slots lo .. hi. A
 * dense grid's cells of a row have consecutive keys, so their particles are one range in the
 * same order as cell by cell (grid.clh): the row takes one lookup, at x = lo.x alone
 * (p2g_row_last). A hashed grid's cell c alone: the caller steps x to x1. */
inline int p2g_row_last(const mz_grid_desc *ng, int x0, int x1)
{
    return ng->hashed ? x1 : x0;
}

inline void p2g_row_range(const mz_grid_desc *ng, global const uint *words,
                          global const uint *first, int4 c, int x1, uint *lo, uint *hi)
{
    const uint k0 = mz_cell_key(ng, c);
    c.x = x1;
    mz_keys_range(words, first, k0, ng->hashed ? k0 : mz_cell_key(ng, c), lo, hi);
}

/* One work-item per node: the three face velocities on its cell's lower sides (weighted means of
 * the particles' velocities), its cell's density (the trilinear particle count at the centre
 * over the rest lattice's, inv_n0 = 1 / that count; walls count as the lattice continued) and
 * its type: solid (outside the domain, or the colliders' signed distance at the centre is
 * negative), fluid (a particle inside), else air. Every particle that weighs on one of these
 * lies within (c − 1, c + 1.5) in cell units; the neighbour grid's cells spanning that box are
 * scanned (cell coordinates are monotone in the position, so none is missed). */
kernel void p2g(uint n_nodes, flip_grid g, mz_grid_desc ng, global const uint *words,
                global const uint *first, global const float4 *pos, global const float4 *vel,
                float inv_n0, int colliders, global const float *sdf, global float4 *face_vel,
                global float *density, global uchar *type)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float4 cf = convert_float4(c);
    int4 lo = mz_cell_coord(&ng, g.origin + (cf - 1.0f) * g.cell);
    int4 hi = mz_cell_coord(&ng, g.origin + (cf + 1.5f) * g.cell);
    float4 sum = (float4)(0.0f), wsum = (float4)(0.0f);
    uint count = 0;
    for (int z = lo.z; z <= hi.z; z++)
        for (int y = lo.y; y <= hi.y; y++)
            for (int x = lo.x; x <= p2g_row_last(&ng, lo.x, hi.x); x++) {
                uint lo_p, stop;
                p2g_row_range(&ng, words, first, (int4)(x, y, z, 0), hi.x, &lo_p, &stop);
                for (uint p = lo_p; p < stop; p++) {
                    uint inside;
                    float4 w = p2g_weights(to_cells(&g, pos[p]) - cf, &inside);
                    float4 v = vel[p];
                    sum += (float4)(w.x * v.x, w.y * v.y, w.z * v.z, 0.0f);
                    wsum += w;
                    count += inside;
                }
            }
    p2g_store(node, c, &g, sum, wsum, count, inv_n0, colliders, sdf, face_vel, density, type);
}

/* x_face − x_p in metres, from the face's and the particle's positions in cell units from the
 * node's corner (no z in 2D). */
inline float4 face_offset(const flip_grid *g, float4 face, float4 r)
{
    float4 d = (face - r) * g->cell;
    d.w = 0.0f;
#if MZ_DIM == 2
    d.z = 0.0f;
#endif
    return d;
}

/* APIC's P2G (fluids[].transfer "apic"; Jiang et al. 2015, their MAC form): as p2g, but each
 * particle brings to a face of axis a the velocity its affine field has there,
 * u_a + c_a · (x_face − x_p), c_a = ∇u_a the particle's (cx, cy, cz: one float4 per component,
 * 1/s). A gather in the same fixed order as p2g: deterministic, no atomics. */
kernel void p2g_apic(uint n_nodes, flip_grid g, mz_grid_desc ng, global const uint *words,
                     global const uint *first, global const float4 *pos, global const float4 *vel,
                     float inv_n0, int colliders, global const float *sdf,
                     global float4 *face_vel, global float *density, global uchar *type,
                     global const float4 *cx, global const float4 *cy, global const float4 *cz)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float4 cf = convert_float4(c);
    int4 lo = mz_cell_coord(&ng, g.origin + (cf - 1.0f) * g.cell);
    int4 hi = mz_cell_coord(&ng, g.origin + (cf + 1.5f) * g.cell);
    float4 sum = (float4)(0.0f), wsum = (float4)(0.0f);
    uint count = 0;
    /* the faces' positions from the node's corner, cell units */
    const float4 fx = (float4)(0.0f, 0.5f, 0.5f, 0.0f), fy = (float4)(0.5f, 0.0f, 0.5f, 0.0f);
#if MZ_DIM == 3
    const float4 fz = (float4)(0.5f, 0.5f, 0.0f, 0.0f);
#endif
    for (int z = lo.z; z <= hi.z; z++)
        for (int y = lo.y; y <= hi.y; y++)
            for (int x = lo.x; x <= p2g_row_last(&ng, lo.x, hi.x); x++) {
                uint lo_p, stop;
                p2g_row_range(&ng, words, first, (int4)(x, y, z, 0), hi.x, &lo_p, &stop);
                for (uint p = lo_p; p < stop; p++) {
                    uint inside;
                    float4 r = to_cells(&g, pos[p]) - cf;
                    float4 w = p2g_weights(r, &inside);
                    float4 v = vel[p];
                    float4 u = (float4)(v.x + mz_dot3(cx[p], face_offset(&g, fx, r)),
                                        v.y + mz_dot3(cy[p], face_offset(&g, fy, r)), 0.0f,
                                        0.0f);
#if MZ_DIM == 3
                    u.z = v.z + mz_dot3(cz[p], face_offset(&g, fz, r));
#endif
                    sum += (float4)(w.x * u.x, w.y * u.y, w.z * u.z, 0.0f);
                    wsum += w;
                    count += inside;
                }
            }
    p2g_store(node, c, &g, sum, wsum, count, inv_n0, colliders, sdf, face_vel, density, type);
}

/* Faces touching a solid are the solid's velocity (0: walls and colliders are static). Every
 * other face keeps its P2G velocity in face_old (FLIP's reference) and gains gravity·dt; with a
 * wall function, a face half a cell from a solid across another axis also loses the wall's
 * shear stress over its cell, u_tau^2 / cell · dt (never more than stops it). */
kernel void prepare_faces(uint n_nodes, flip_grid g, float4 gdt, float dt,
                          global const uchar *type, global float4 *face_vel,
                          global float4 *face_old, int loads, global float4 *face_star,
                          int moving, global const float4 *solid_vel)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float4 u = face_vel[node], old = (float4)(0.0f), star = (float4)(0.0f);
    for (int a = 0; a < MZ_DIM; a++) {
        bool solid = type_at(type, &g, c - unit(a)) == FLIP_SOLID ||
                     type_at(type, &g, c) == FLIP_SOLID;
        /* A moving solid's face moves with it (the solid cell's velocity; the cell inside the
         * domain when the other is a wall). */
        float us = 0.0f;
        if (moving && solid) {
            int4 sc = type_at(type, &g, c) == FLIP_SOLID && is_cell(&g, c) ? c : c - unit(a);
            us = is_cell(&g, sc) ? comp(solid_vel[node_index(&g, sc)], a) : 0.0f;
        }
        /* What a solid face takes away: the velocity the fluid would have had there, relative to
         * the solid's (the forces on solids, flip_face_loads). */
        star = set_comp(star, a, solid ? comp(u, a) + comp(gdt, a) - us : 0.0f);
        old = set_comp(old, a, solid ? us : comp(u, a));
        float ua = solid ? us : comp(u, a) + comp(gdt, a);
        if (!solid && g.wall.x > 0.0f && ua != 0.0f) {
            float drag = 0.0f;
            for (int b = 0; b < MZ_DIM; b++) {
                if (b == a)
                    continue;
                for (int side = -1; side <= 1; side += 2) {
                    int4 o = side * unit(b);
                    if (type_at(type, &g, c + o) == FLIP_SOLID &&
                        type_at(type, &g, c - unit(a) + o) == FLIP_SOLID) {
                        float cb = comp(g.cell, b);
                        drag += wall_stress(fabs(ua), 0.5f * cb, g.wall.x) / cb * dt;
                    }
                }
            }
            ua = ua > 0.0f ? fmax(ua - drag, 0.0f) : fmin(ua + drag, 0.0f);
        }
        u = set_comp(u, a, ua);
    }
    face_vel[node] = u;
    face_old[node] = old;
    if (loads)
        face_star[node] = star;
}

/* ---- grid to particle ---------------------------------------------------------------------- */

/* One layer of extrapolation: a face without a velocity takes the mean of its valid
 * neighbours (same component, ±1 node along each axis), for u, du and the advection velocity
 * alike, and becomes valid. In place: u, du and adv are the face arrays' floats (component a of
 * node m at 4m + a); a pass writes only faces that had no value (valid_in) and reads only faces
 * that had one, so no float is both read and written in it, and the faces that keep their value
 * cost no copy. Only the flags go to a second array (valid_out). */
kernel void extrapolate(uint n_nodes, flip_grid g, global float *u, global float *du,
                        global float *adv, global const uchar4 *valid_in,
                        global uchar4 *valid_out)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    uchar4 ok = valid_in[node], now = ok;
    for (int a = 0; a < MZ_DIM; a++) {
        if (comp_u8(ok, a))
            continue;
        float su = 0.0f, sd = 0.0f, sa = 0.0f;
        int cnt = 0;
        for (int b = 0; b < MZ_DIM; b++)
            for (int s = -1; s <= 1; s += 2) {
                int4 n = c + s * unit(b);
                if (!is_node(&g, n))
                    continue;
                uint m = node_index(&g, n);
                if (comp_u8(valid_in[m], a)) {
                    su += u[4 * m + a];
                    sd += du[4 * m + a];
                    sa += adv[4 * m + a];
                    cnt++;
                }
            }
        if (cnt) {
            u[4 * node + a] = su / (float)cnt;
            du[4 * node + a] = sd / (float)cnt;
            adv[4 * node + a] = sa / (float)cnt;
            now = set_comp_u8(now, a, 1);
        }
    }
    valid_out[node] = now;
}

/* Trilinear interpolation of f[stride·node + comp], whose values sit at node positions, at t in
 * node units; ext: the nodes per axis that hold values. Beyond the last node on an axis the
 * edge value continues (free slip along a wall), or, where mirror is set, the value mirrored to
 * its negative (no slip: zero on the wall, half a node out). */
inline float interp(global const float *f, int stride, int cmp, const flip_grid *g, float4 t,
                    int4 ext, int4 mirror)
{
    float4 hi = convert_float4(ext - (int4)(1));
    float4 tc = fmin(fmax(t, (float4)(0.0f)), hi);
    int4 b = min(convert_int4(tc), max(ext - (int4)(2), (int4)(0)));
    float4 w1 = tc - convert_float4(b), w0 = (float4)(1.0f) - w1;
    /* mirrored: between the edge node and its negative image one node out */
    float4 below = fmax((float4)(1.0f) + 2.0f * t, (float4)(0.0f));
    float4 above = fmax((float4)(1.0f) - 2.0f * (t - hi), (float4)(0.0f));
    int4 lo_side = isless(t, (float4)(0.0f)) & (mirror != 0) & (ext > 1);
    int4 hi_side = isgreater(t, hi) & (mirror != 0) & (ext > 1);
    w0 = select(w0, below, lo_side);
    w1 = select(w1, (float4)(0.0f), lo_side);
    w1 = select(w1, above, hi_side);
    w0 = select(w0, (float4)(0.0f), hi_side);
    float s = 0.0f;
    for (int dz = 0; dz <= (MZ_DIM == 3); dz++) /* in 2D ext.z = 1: b.z = 0, w1.z = 0 */
        for (int dy = 0; dy <= 1; dy++)
            for (int dx = 0; dx <= 1; dx++) {
                float wt = (dx ? w1.x : w0.x) * (dy ? w1.y : w0.y) * (dz ? w1.z : w0.z);
                s += wt * f[stride * node_index(g, b + (int4)(dx, dy, dz, 0)) + cmp];
            }
    return s;
}

/* The face velocity field (u, v, w) at d (cell units). The normal components end on the
 * wall's 0. The tangential ones, beyond the last node: free slip (the default) continues the
 * edge value, so a flow runs on along the wall; no slip mirrors it (zero on the wall), a
 * boundary layer half a cell thick that holds back thin flows such as a dam-break front. */
inline float4 sample_faces(global const float4 *f, const flip_grid *g, float4 d)
{
    global const float *ff = (global const float *)f;
    int4 n = g->cells;
    int m = g->no_slip.x;
    float4 v = (float4)(0.0f);
    v.x = interp(ff, 4, 0, g, d - (float4)(0.0f, 0.5f, 0.5f, 0.0f), n + (int4)(1, 0, 0, 0),
                 (int4)(0, m, m, 0));
    v.y = interp(ff, 4, 1, g, d - (float4)(0.5f, 0.0f, 0.5f, 0.0f), n + (int4)(0, 1, 0, 0),
                 (int4)(m, 0, m, 0));
#if MZ_DIM == 3
    v.z = interp(ff, 4, 2, g, d - (float4)(0.5f, 0.5f, 0.0f, 0.0f), n + (int4)(0, 0, 1, 0),
                 (int4)(m, m, 0, 0));
#endif
    return v;
}

/* interp's value at t and, into *grad, its gradient in node units: the derivative of each
 * axis's weights, ∓1 between nodes, 0 where the edge value continues (clamped), ±2 on a
 * mirrored stretch (no slip), as interp's weights are there. */
inline float interp_grad(global const float *f, int stride, int cmp, const flip_grid *g,
                         float4 t, int4 ext, int4 mirror, float4 *grad)
{
    float4 hi = convert_float4(ext - (int4)(1));
    float4 tc = fmin(fmax(t, (float4)(0.0f)), hi);
    int4 b = min(convert_int4(tc), max(ext - (int4)(2), (int4)(0)));
    float4 w1 = tc - convert_float4(b), w0 = (float4)(1.0f) - w1;
    int4 between = isgreaterequal(t, (float4)(0.0f)) & islessequal(t, hi) & (ext > 1);
    float4 d1 = select((float4)(0.0f), (float4)(1.0f), between), d0 = -d1;
    float4 below = fmax((float4)(1.0f) + 2.0f * t, (float4)(0.0f));
    float4 above = fmax((float4)(1.0f) - 2.0f * (t - hi), (float4)(0.0f));
    int4 lo_side = isless(t, (float4)(0.0f)) & (mirror != 0) & (ext > 1);
    int4 hi_side = isgreater(t, hi) & (mirror != 0) & (ext > 1);
    w0 = select(w0, below, lo_side);
    d0 = select(d0, select((float4)(0.0f), (float4)(2.0f), below > 0.0f), lo_side);
    w1 = select(w1, (float4)(0.0f), lo_side);
    d1 = select(d1, (float4)(0.0f), lo_side);
    w1 = select(w1, above, hi_side);
    d1 = select(d1, select((float4)(0.0f), (float4)(-2.0f), above > 0.0f), hi_side);
    w0 = select(w0, (float4)(0.0f), hi_side);
    d0 = select(d0, (float4)(0.0f), hi_side);
    float s = 0.0f;
    float4 gs = (float4)(0.0f);
    for (int dz = 0; dz <= (MZ_DIM == 3); dz++)
        for (int dy = 0; dy <= 1; dy++)
            for (int dx = 0; dx <= 1; dx++) {
                float wx = dx ? w1.x : w0.x, wy = dy ? w1.y : w0.y, wz = dz ? w1.z : w0.z;
                float gx = dx ? d1.x : d0.x, gy = dy ? d1.y : d0.y, gz = dz ? d1.z : d0.z;
                float fv = f[stride * node_index(g, b + (int4)(dx, dy, dz, 0)) + cmp];
                s += wx * wy * wz * fv;
                gs += (float4)(gx * wy * wz, wx * gy * wz, wx * wy * gz, 0.0f) * fv;
            }
    *grad = gs;
    return s;
}

/* sample_faces's velocity at d and each component's gradient (1/s): gx = ∇u, gy = ∇v,
 * gz = ∇w (zero in 2D, where z is not simulated). */
inline float4 sample_faces_grad(global const float4 *f, const flip_grid *g, float4 d,
                                float4 *gx, float4 *gy, float4 *gz)
{
    global const float *ff = (global const float *)f;
    int4 n = g->cells;
    int m = g->no_slip.x;
    float4 v = (float4)(0.0f), inv = g->inv_cell;
    inv.w = 0.0f;
#if MZ_DIM == 2
    inv.z = 0.0f;
#endif
    v.x = interp_grad(ff, 4, 0, g, d - (float4)(0.0f, 0.5f, 0.5f, 0.0f), n + (int4)(1, 0, 0, 0),
                      (int4)(0, m, m, 0), gx);
    v.y = interp_grad(ff, 4, 1, g, d - (float4)(0.5f, 0.0f, 0.5f, 0.0f), n + (int4)(0, 1, 0, 0),
                      (int4)(m, 0, m, 0), gy);
    *gz = (float4)(0.0f);
#if MZ_DIM == 3
    v.z = interp_grad(ff, 4, 2, g, d - (float4)(0.5f, 0.5f, 0.0f, 0.0f), n + (int4)(0, 0, 1, 0),
                      (int4)(m, m, 0, 0), gz);
#endif
    *gx *= inv;
    *gy *= inv;
    *gz *= inv;
    return v;
}

/* A cell-centred scalar at d (cell units). */
inline float sample_cells(global const float *f, const flip_grid *g, float4 d)
{
    return interp(f, 1, 0, g, d - (float4)(0.5f, 0.5f, 0.5f, 0.0f), g->cells, (int4)(0));
}

/* The pressure at d from the fluid cells around it only (air and solid cells carry no pressure
 * value of their own): trilinear weights renormalised over the fluid cells. */
inline float sample_pressure(global const float2 *p, global const uchar *type,
                             const flip_grid *g, float4 d)
{
    float4 t = d - (float4)(0.5f, 0.5f, 0.5f, 0.0f);
    int4 b = convert_int4(floor(t));
    float4 w = t - floor(t);
    float s = 0.0f, ws = 0.0f;
#if MZ_DIM == 2
    b.z = 0;
    w.z = 0.0f;
#endif
    for (int dz = 0; dz <= (MZ_DIM == 3); dz++)
        for (int dy = 0; dy <= 1; dy++)
            for (int dx = 0; dx <= 1; dx++) {
                int4 c = b + (int4)(dx, dy, dz, 0);
                if (type_at(type, g, c) != FLIP_FLUID)
                    continue;
                float wt = (dx ? w.x : 1.0f - w.x) * (dy ? w.y : 1.0f - w.y) *
                           (dz ? w.z : 1.0f - w.z);
                s += wt * p[node_index(g, c)].x;
                ws += wt;
            }
    return ws > 0.0f ? s / ws : 0.0f;
}

/* The end of either G2P for particle i at x (cell units d), its new velocity v: the move, RK2
 * (midpoint) through the advection velocity (the divergence-free velocity plus the volume
 * correction's); then out of the walls (the domain shrunk by the particle's radius, pos.w;
 * velocity into a wall removed) and out of colliders (along the gradient of their signed
 * distance, sampled at cell centres). */
inline void g2p_move(uint i, const flip_grid *g, float dt, float4 x, float4 v, float4 d,
                     float4 dmin, float4 dmax, int colliders, global const float *sdf,
                     global const float4 *face_adv, int moving, global const float4 *solid_vel,
                     global float4 *pos, global float4 *vel)
{
    float r = x.w;
    float4 mid = x + 0.5f * dt * sample_faces(face_adv, g, d);
    float4 xn = x + dt * mz_vec(sample_faces(face_adv, g, to_cells(g, mid)));
    if (colliders) {
        float4 dn = to_cells(g, xn);
        float phi = sample_cells(sdf, g, dn);
        if (phi < r) {
            float4 nrm = (float4)(0.0f);
            for (int a = 0; a < MZ_DIM; a++) {
                float4 e = convert_float4(unit(a)) * 0.5f;
                nrm = set_comp(nrm, a,
                               sample_cells(sdf, g, dn + e) - sample_cells(sdf, g, dn - e));
            }
            float len = sqrt(mz_dot3(nrm, nrm));
            if (len > 0.0f) {
                nrm /= len;
                xn += (r - phi) * nrm;
                /* velocity into the solid removed, relative to a moving one's (its cell's) */
                float4 vs = (float4)(0.0f);
                if (moving) {
                    int4 cc = convert_int4(floor(dn));
                    cc.w = 0;
#if MZ_DIM == 2
                    cc.z = 0;
#endif
                    vs = is_cell(g, cc) ? solid_vel[node_index(g, cc)] : (float4)(0.0f);
                }
                float vn = mz_dot3(v - vs, nrm);
                if (vn < 0.0f)
                    v -= vn * nrm;
            }
        }
    }
    float4 lo = dmin + r, hi = dmax - r;
    for (int a = 0; a < MZ_DIM; a++) {
        float xa = comp(xn, a), va = comp(v, a);
        if (xa < comp(lo, a)) {
            xn = set_comp(xn, a, comp(lo, a));
            v = set_comp(v, a, fmax(va, 0.0f));
        } else if (xa > comp(hi, a)) {
            xn = set_comp(xn, a, comp(hi, a));
            v = set_comp(v, a, fmin(va, 0.0f));
        }
    }
    xn.w = r;
#if MZ_DIM == 2
    xn.z = x.z;
#endif
    pos[i] = xn;
    vel[i] = v;
}

/* What both G2Ps end with: a turning domain's Euler, centrifugal and Coriolis terms on the new
 * velocity v (gravity and the frame's linear acceleration are the faces', prepare_faces), the
 * output's density and pressure at the step's start x, and the move (g2p_move). */
inline void g2p_finish(uint i, const flip_grid *g, float dt, float rest_density, float4 x,
                       float4 v, float4 d, float4 dmin, float4 dmax, int colliders,
                       global const float *sdf, global const float4 *face_adv,
                       global const uchar *type, global const float *density,
                       global const float2 *pressure, global float4 *pos, global float4 *vel,
                       global float *out_density, global float *out_pressure, int moving,
                       global const float4 *solid_vel, const mz_frame *frame)
{
#ifdef MZ_SPIN
    v = mz_vec(v + dt * (mz_frame_accel(frame, x, v) - frame->g));
#endif
    out_density[i] = rest_density * sample_cells(density, g, d);
    out_pressure[i] = sample_pressure(pressure, type, g, d);
    g2p_move(i, g, dt, x, v, d, dmin, dmax, colliders, sdf, face_adv, moving, solid_vel, pos,
             vel);
}

/* Per particle: the new velocity, FLIP (old velocity + the grid's change) blended with PIC (the
 * grid velocity) by flip_ratio; then g2p_move. Density and pressure are sampled for output at
 * the position the step started from. */
kernel void g2p(uint n, flip_grid g, float dt, float flip_ratio, float rest_density,
                float4 dmin, float4 dmax, int colliders, global const float *sdf,
                global const float4 *face_vel, global const float4 *face_du,
                global const float4 *face_adv, global const uchar *type,
                global const float *density, global const float2 *pressure,
                global float4 *pos, global float4 *vel, global float *out_density,
                global float *out_pressure, int moving, global const float4 *solid_vel,
                mz_frame frame)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 x = pos[i], v = vel[i];
    float4 d = to_cells(&g, x);
    float4 u = sample_faces(face_vel, &g, d);
    float4 v_flip = v + sample_faces(face_du, &g, d);
    v = mz_vec(flip_ratio * v_flip + (1.0f - flip_ratio) * u);
    g2p_finish(i, &g, dt, rest_density, x, v, d, dmin, dmax, colliders, sdf, face_adv, type,
               density, pressure, pos, vel, out_density, out_pressure, moving, solid_vel, &frame);
}

/* APIC's G2P (fluids[].transfer "apic"): the particle takes the grid velocity (PIC's) and, per
 * component a, c_a = ∇u_a of the same trilinear interpolation (Σ_i ∇w_ai(x_p) u_ai: exact for
 * an affine field); then g2p_move as g2p. */
kernel void g2p_apic(uint n, flip_grid g, float dt, float rest_density, float4 dmin,
                     float4 dmax, int colliders, global const float *sdf,
                     global const float4 *face_vel, global const float4 *face_adv,
                     global const uchar *type, global const float *density,
                     global const float2 *pressure, global float4 *pos, global float4 *vel,
                     global float *out_density, global float *out_pressure, int moving,
                     global const float4 *solid_vel, mz_frame frame, global float4 *cx,
                     global float4 *cy, global float4 *cz)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 x = pos[i], v;
    float4 d = to_cells(&g, x);
    float4 gx, gy, gz;
    v = mz_vec(sample_faces_grad(face_vel, &g, d, &gx, &gy, &gz));
    cx[i] = gx;
    cy[i] = gy;
#if MZ_DIM == 3
    cz[i] = gz;
#endif
    g2p_finish(i, &g, dt, rest_density, x, v, d, dmin, dmax, colliders, sdf, face_adv, type,
               density, pressure, pos, vel, out_density, out_pressure, moving, solid_vel, &frame);
}
