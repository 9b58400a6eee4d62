/* Conjugate gradients on FLIP's pressure system, preconditioned by the multigrid V-cycle
 * (src/solvers/flip/flip_cg.c runs it). Both right-hand sides at once (float2: pressure and the
 * volume correction), each with its own step lengths. Vectors live on the grid's nodes; every
 * kernel visits the fluid cells' list only.
 *
 * Determinism without atomics: a dot product is a fixed number of work-groups, each work-item
 * summing its grid-stride share in list order, the group's items in a fixed tree; then one
 * work-group sums the groups' partials the same way and computes the step length on the
 * device, so no iteration reads back. */
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

/* q = A d, and the groups' partial sums of d·q. */
kernel void cg_apply(uint n_items, flip_grid g, global const uint *list,
                     global const uchar *type, global const float *diag,
                     global const float2 *d, global float2 *q, global float2 *part,
                     local float2 *scratch)
{
    float2 sum = (float2)(0.0f);
    for (uint item = get_global_id(0); item < n_items; item += get_global_size(0)) {
        uint node = list[item];
        float2 v = apply_at(&g, node_coord(&g, node), node, type, diag, d);
        q[node] = v;
        sum += d[node] * v;
    }
    float2 s = group_sum(sum, scratch);
    if (get_local_id(0) == 0)
        part[get_group_id(0)] = s;
}

/* The groups' partial sums of a·b. */
kernel void cg_dot(uint n_items, global const uint *list, global const float2 *a,
                   global const float2 *b, global float2 *part, local float2 *scratch)
{
    float2 sum = (float2)(0.0f);
    for (uint item = get_global_id(0); item < n_items; item += get_global_size(0)) {
        uint node = list[item];
        sum += a[node] * b[node];
    }
    float2 s = group_sum(sum, scratch);
    if (get_local_id(0) == 0)
        part[get_group_id(0)] = s;
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

/* d = z + beta d (d = z on the first iteration: d holds nothing yet). */
kernel void cg_direction(uint n_items, int first, global const uint *list,
                         global const float2 *scal, global const float2 *z, global float2 *d)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[item];
    d[node] = first ? z[node] : z[node] + scal[2] * d[node];
}
