/* Conjugate gradients on FLIP's pressure system, preconditioned by the multigrid V-cycle
 * (src/solvers/flip/flip_cg.c runs it). Both right-hand sides at once (float2: pressure and the
 * volume correction), each with its own step lengths. Vectors live on the grid's nodes; every
 * kernel visits the fluid cells' list only.
 *
 * Determinism without atomics: a dot product is a fixed set of work-groups (d·Ad: a fixed
 * number, each work-item summing its grid-stride share in list order; r·z: one work-item a cell
 * of the cycle's last half-sweeps), the group's items in a fixed tree; then one work-group sums
 * the groups' partials the same way and computes the step length on the device, so no
 * iteration reads back. Kernels do several passes' work in one where the cells allow (cg_apply,
 * cg_start, cg_smooth_dot): the launches and passes over memory, not the arithmetic, are an
 * iteration's cost. */
#include "common/common.clh"
#include "flip/flip_grid.clh"
#include "flip/flip_poisson.clh"

/* Tree sum of the work-group's values (a power-of-two size) into scratch[0]. */
inline float2 group_sum(float2 v, local float2 *scratch)
{
    uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s /= 2) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

/* The new direction d = z + beta d (d = z on the first iteration: d holds nothing yet) at a
 * node, as cg_apply needs it at a cell and its neighbours. */
inline float2 direction_at(int first, float2 beta, global const float2 *z,
                           global const float2 *d_old, uint node)
{
    return first ? z[node] : z[node] + beta * d_old[node];
}

/* d = z + beta d, q = A d, and the groups' partial sums of d·q, in one pass: each cell forms
 * the new direction at its neighbours from z and the old direction (read from d_old, written to
 * d_new: no cell reads another's new value) in the operations apply_at does on a stored d (the
 * same bits as a separate direction pass, without its pass over memory and its launch). */
kernel void cg_apply(uint n_items, int first, flip_grid g, global const uint *list,
                     global const uchar *type, global const float *diag,
                     global const float2 *scal, global const float2 *z,
                     global const float2 *d_old, global float2 *d_new, global float2 *q,
                     global float2 *part, local float2 *scratch)
{
    float2 sum = (float2)(0.0f), beta = scal[2];
    for (uint item = get_global_id(0); item < n_items; item += get_global_size(0)) {
        uint node = list[item];
        int4 c = node_coord(&g, node);
        float2 dc = direction_at(first, beta, z, d_old, node), s = (float2)(0.0f);
        float w_fluid = 0.0f;
        const uint m = fluid_neighbours(&g, c, type);
#pragma unroll
        for (int a = 0; a < MZ_DIM; a++)
#pragma unroll
            for (int k = -1; k <= 1; k += 2) {
                int4 n = c + k * unit(a);
                if (fluid_bit(m, a, k)) {
                    float w = comp(g.inv_cell2, a);
                    s += w * (dc - direction_at(first, beta, z, d_old, node_index(&g, n)));
                    w_fluid += w;
                }
            }
        float2 v = s + (diag[node] - w_fluid) * dc;
        d_new[node] = dc;
        q[node] = v;
        sum += dc * v;
    }
    float2 s = group_sum(sum, scratch);
    if (get_local_id(0) == 0)
        part[get_group_id(0)] = s;
}

/* The last half-sweeps of the cycle on level 0 (pressure_rbgs at ω = 1 on the cells of one
 * colour, list[first .. first + n_items)), each also writing its work-groups' partial sums of
 * r·z over its cells (whose z is then final) to part[part_first ..): r·z costs no pass of its
 * own. One work-item a cell, so the groups (and the order of the sum) follow the list. */
kernel void cg_smooth_dot(uint n_items, uint first, uint part_first, flip_grid g,
                          global const uint *list, global const uchar *type,
                          global const float2 *r, global const float *diag, global float2 *z,
                          global float2 *part, local float2 *scratch)
{
    uint item = get_global_id(0);
    float2 dot = (float2)(0.0f);
    if (item < n_items) {
        uint node = list[first + item];
        float2 zn = z[node];
        float dn = diag[node];
        if (dn > 0.0f) {
            zn += 1.0f * residual_at(&g, node_coord(&g, node), node, type, r, diag, z) / dn;
            z[node] = zn;
        }
        dot = r[node] * zn;
    }
    float2 s = group_sum(dot, scratch);
    if (get_local_id(0) == 0)
        part[part_first + get_group_id(0)] = s;
}

inline float2 safe_div(float2 a, float2 b)
{
    return (float2)(b.x != 0.0f ? a.x / b.x : 0.0f, b.y != 0.0f ? a.y / b.y : 0.0f);
}

/* One work-group: the partials summed. step 0: alpha = (r·z) / (d·A d) from the sum of
 * d·A d; step 1: the sum is the new r·z, beta = new / old (0 on the first iteration).
 * scal: [0] r·z, [1] alpha, [2] beta. */
kernel void cg_scalars(uint n_parts, int step, int first, global const float2 *part,
                       global float2 *scal, local float2 *scratch)
{
    float2 sum = (float2)(0.0f);
    for (uint k = get_local_id(0); k < n_parts; k += get_local_size(0))
        sum += part[k];
    float2 total = group_sum(sum, scratch);
    if (get_local_id(0) != 0)
        return;
    if (step == 0) {
        scal[1] = safe_div(scal[0], total);
    } else {
        scal[2] = first ? (float2)(0.0f) : safe_div(total, scal[0]);
        scal[0] = total;
    }
}

/* x += sign alpha d, r −= sign alpha q (sign −1: the step taken back). */
kernel void cg_update(uint n_items, float sign, global const uint *list, global const float2 *scal,
                      global const float2 *d, global const float2 *q, global float2 *x,
                      global float2 *r)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[item];
    float2 alpha = sign * scal[1];
    x[node] += alpha * d[node];
    r[node] -= alpha * q[node];
}

/* The start of an iteration's V-cycle, after CG's step (with `update`: x += alpha d,
 * r −= alpha q, as cg_update): the cycle's z = 0 and its first half-sweep on level 0 (colour 0,
 * list[0 .. n_red)), which from z = 0 needs only the cell's own r: one pass instead of three
 * (cg_update, zeroing z, the half-sweep), the same bits (pressure_rbgs at ω = 1 from zeros). */
kernel void cg_start(uint n_items, uint n_red, int update, flip_grid g, global const uint *list,
                     global const uchar *type, global const float *diag,
                     global const float2 *scal, global const float2 *d, global const float2 *q,
                     global float2 *x, global float2 *r, global float2 *z)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[item];
    float2 rn = r[node], zn = (float2)(0.0f);
    if (update) {
        float2 alpha = 1.0f * scal[1];
        x[node] += alpha * d[node];
        rn -= alpha * q[node];
        r[node] = rn;
    }
    float dn = diag[node];
    if (item < n_red && dn > 0.0f)
        zn += 1.0f * residual_at_zero(&g, node_coord(&g, node), type, rn, dn) / dn;
    z[node] = zn;
}
