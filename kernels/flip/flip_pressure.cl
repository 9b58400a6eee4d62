/* FLIP's pressure projection (src/solvers/flip/flip_pressure.c runs it; kernels/flip/flip.cl
 * holds the rest of the step). */
#include "common/common.clh"
#include "flip/flip_grid.clh"
#include "flip/flip_poisson.clh"

/* ---- pressure projection ------------------------------------------------------------------- */
/* Unknown: the pressure p (Pa) at fluid cell centres; p = 0 at air (placed at the free surface
 * by the ghost-fluid method), ∂p/∂n = 0 at solids. Subtracting (dt/ρ)∇p must leave each fluid
 * cell divergence-free:
 *     Σ_n w_n (p_c − p_n) = −div u · ρ/dt,
 * over the neighbours n across non-solid faces, w_n = 1/cell_a² (÷ θ towards air, whose p_n is
 * 0). diag = Σ w_n. The residual is written with differences,
 *     r_c = rhs + Σ_fluid w_n (p_n − p_c) − (diag − Σ_fluid w_n) p_c,
 * and a sweep adds ω r_c / diag: in float the form Σ w_n p_n − diag p_c cancels terms (depth /
 * cell) times larger than r, and stalled above a relative residual of 1e-4 at 50 cells deep.
 * The same system with the right-hand side target·ρ/dt gives the volume correction q: the
 * velocity −(dt/ρ)∇q makes each cell expand (or contract) at the rate `target`, undoing a share
 * of its density error per step. Particles move with it but never keep it in their velocity
 * (FLIP would carry it on as noise). Both are solved at once: float2 (p, q). */

kernel void pressure_setup(uint n_nodes, flip_grid g, float rho_over_dt, float correction,
                           float inv_dt, global const uchar *type, global const float *density,
                           global const float4 *face_vel, global float2 *rhs, global float *diag,
                           global float2 *pressure)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    if (type_at(type, &g, c) != FLIP_FLUID) {
        rhs[node] = (float2)(0.0f);
        diag[node] = 0.0f;
        pressure[node] = (float2)(0.0f);
        return;
    }
    float rho = density[node], div = 0.0f, d = 0.0f;
    float4 u = face_vel[node];
    bool surface = false;
    for (int a = 0; a < MZ_DIM; a++) {
        int4 e = unit(a);
        div += (comp(face_vel[node_index(&g, c + e)], a) - comp(u, a)) * comp(g.inv_cell, a);
        for (int s = -1; s <= 1; s += 2) {
            int4 n = c + s * e;
            int t = type_at(type, &g, n);
            float w = comp(g.inv_cell2, a);
            if (t == FLIP_FLUID) {
                d += w;
            } else if (t == FLIP_AIR) {
                d += w / surface_fraction(rho, density[node_index(&g, n)]);
                surface = true;
            }
        }
    }
    /* A cell with an air neighbour is under-dense by nature (the surface crosses it): only its
     * excess is corrected there; inside the fluid, both ways. */
    float error = surface ? fmax(rho - 1.0f, 0.0f) : rho - 1.0f;
    rhs[node] = (float2)(-div, correction * error * inv_dt) * rho_over_dt;
    diag[node] = d;
}

/* One damped Jacobi sweep, p_in → p_out. */
kernel void pressure_jacobi(uint n_nodes, flip_grid g, float omega, global const uchar *type,
                            global const float2 *rhs, global const float *diag,
                            global const float2 *p_in, global float2 *p_out)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float2 p = (float2)(0.0f);
    if (type_at(type, &g, c) == FLIP_FLUID && diag[node] > 0.0f)
        p = p_in[node] + omega * residual_at(&g, c, node, type, rhs, diag, p_in) / diag[node];
    p_out[node] = p;
}

/* The fluid cells, so that the sweeps do no work on air and solid (Dirichlet and Neumann:
 * nothing to solve there), listed by colour ((i + j + k) % 2) in node order: work-item w
 * counts the fluid cells of each colour among nodes [w·chunk, (w + 1)·chunk) ... */
kernel void fluid_count(uint n_nodes, uint chunk, flip_grid g, global const uchar *type,
                        uint base, global uint *counts)
{
    counts += base;
    uint w = get_global_id(0), end = min(n_nodes, (w + 1u) * chunk);
    uint n[2] = {0u, 0u};
    for (uint node = w * chunk; node < end; node++) {
        int4 c = node_coord(&g, node);
        if (type_at(type, &g, c) == FLIP_FLUID)
            n[(c.x + c.y + c.z) & 1]++;
    }
    counts[2 * w] = n[0];
    counts[2 * w + 1] = n[1];
}

/* ... and writes them from its offsets (the host's exclusive sums of the counts, colour 1
 * after all of colour 0). */
kernel void fluid_list(uint n_nodes, uint chunk, flip_grid g, global const uchar *type,
                       uint base, global const uint *offsets, global uint *list)
{
    offsets += base;
    uint w = get_global_id(0), end = min(n_nodes, (w + 1u) * chunk);
    uint at[2] = {offsets[2 * w], offsets[2 * w + 1]};
    for (uint node = w * chunk; node < end; node++) {
        int4 c = node_coord(&g, node);
        if (type_at(type, &g, c) == FLIP_FLUID)
            list[at[(c.x + c.y + c.z) & 1]++] = node;
    }
}

/* The same counts and list on a GPU, a work-group a chunk: its work-items take neighbouring
 * nodes, a tile of the group's size at a time, so that their reads coalesce; a tile's fluid
 * cells are placed by an exclusive scan in local memory, in node order as above, so the list is
 * the same. (One work-item a chunk walked thousands of nodes alone, its reads apart from its
 * neighbours': 0.55 + 0.77 ms of an H200's 15 ms FLIP step at 10^7 cells.) The flags of both
 * colours scan as one word: colour 1's in the high half (a tile counts at most 2^16). */
inline uint fluid_flags(uint node, uint end, const flip_grid *g, global const uchar *type)
{
    if (node >= end)
        return 0u;
    int4 c = node_coord(g, node);
    if (type_at(type, g, c) != FLIP_FLUID)
        return 0u;
    return ((c.x + c.y + c.z) & 1) ? 0x10000u : 1u;
}

kernel void fluid_count_groups(uint n_nodes, uint chunk, flip_grid g, global const uchar *type,
                               uint base, global uint *counts, local uint *sums)
{
    counts += base;
    uint w = get_group_id(0), l = get_local_id(0), size = get_local_size(0);
    uint begin = w * chunk, end = min(n_nodes, begin + chunk);
    uint n[2] = {0u, 0u};
    for (uint node = begin + l; node < end; node += size) {
        uint f = fluid_flags(node, end, &g, type);
        n[0] += f & 0xFFFFu;
        n[1] += f >> 16;
    }
    for (int colour = 0; colour < 2; colour++) {
        sums[l] = n[colour];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint part = size / 2; part > 0; part /= 2) {
            if (l < part)
                sums[l] += sums[l + part];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (l == 0)
            counts[2 * w + colour] = sums[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

kernel void fluid_list_groups(uint n_nodes, uint chunk, flip_grid g, global const uchar *type,
                              uint base, global const uint *offsets, global uint *list,
                              local uint *scan)
{
    offsets += base;
    uint w = get_group_id(0), l = get_local_id(0), size = get_local_size(0);
    uint begin = w * chunk, end = min(n_nodes, begin + chunk);
    uint at0 = offsets[2 * w], at1 = offsets[2 * w + 1];
    for (uint base = begin; base < end; base += size) {
        uint node = base + l, f = fluid_flags(node, end, &g, type);
        scan[l] = f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint step = 1; step < size; step *= 2) { /* inclusive, Hillis–Steele */
            uint add = l >= step ? scan[l - step] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[l] += add;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        uint before = scan[l] - f, total = scan[size - 1];
        if (f & 0xFFFFu)
            list[at0 + (before & 0xFFFFu)] = node;
        else if (f)
            list[at1 + (before >> 16)] = node;
        at0 += total & 0xFFFFu;
        at1 += total >> 16;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Half a red-black SOR sweep, in place: the fluid cells of one colour (list[first ..
 * first + n_items)), whose neighbours are all of the other colour, so the order among them
 * does not matter. */
kernel void pressure_rbgs(uint n_items, uint first, flip_grid g, global const uint *list,
                          float omega,
                          global const uchar *type, global const float2 *rhs,
                          global const float *diag, global float2 *p)
{
    uint item = get_global_id(0);
    if (item >= n_items)
        return;
    uint node = list[first + item];
    int4 c = node_coord(&g, node);
    if (!(diag[node] > 0.0f))
        return;
    p[node] += omega * residual_at(&g, c, node, type, rhs, diag, p) / diag[node];
}

/* Per work-group: the largest |residual| and |rhs| over fluid cells and both right-hand sides,
 * and the fluid cells counted (grid-stride loop over the fluid list; the host takes the max
 * and the sum of the groups': both independent of order). part[3·group + 0..2]. */
kernel void pressure_residual(uint n_fluid, flip_grid g, global const uint *list,
                              global const uchar *type, global const float2 *rhs,
                              global const float *diag, global const float2 *p,
                              global float *part, local float *scratch)
{
    uint lid = get_local_id(0), lsize = get_local_size(0);
    float r_max = 0.0f, b_max = 0.0f, fluid = 0.0f;
    for (uint item = get_global_id(0); item < n_fluid; item += get_global_size(0)) {
        uint node = list[item];
        int4 c = node_coord(&g, node);
        float2 r = fabs(residual_at(&g, c, node, type, rhs, diag, p));
        float2 b = fabs(rhs[node]);
        r_max = fmax(r_max, fmax(r.x, r.y));
        b_max = fmax(b_max, fmax(b.x, b.y));
        fluid += 1.0f; /* exact: a work-item sees far fewer than 2^24 nodes */
    }
    scratch[3 * lid] = r_max;
    scratch[3 * lid + 1] = b_max;
    scratch[3 * lid + 2] = fluid;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = lsize / 2; s > 0; s /= 2) {
        if (lid < s) {
            scratch[3 * lid] = fmax(scratch[3 * lid], scratch[3 * (lid + s)]);
            scratch[3 * lid + 1] = fmax(scratch[3 * lid + 1], scratch[3 * (lid + s) + 1]);
            scratch[3 * lid + 2] += scratch[3 * (lid + s) + 2];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        uint grp = get_group_id(0);
        part[3 * grp] = scratch[0];
        part[3 * grp + 1] = scratch[1];
        part[3 * grp + 2] = scratch[2];
    }
}

/* On every face of a fluid cell: u −= (dt/ρ) ∂p/∂x_a (the air side's pressure is the ghost value
 * p_f (1 − 1/θ), so that p = 0 at the surface), and the advection velocity u − (dt/ρ) ∂q/∂x_a.
 * Also du = u − u_old, FLIP's change (written over face_old), and which faces hold a velocity:
 * those touching fluid or solid (solid faces are 0). The rest are extrapolated next. */
kernel void pressure_gradient(uint n_nodes, flip_grid g, float dt_over_rho,
                              global const uchar *type, global const float *density,
                              global const float2 *pressure, global float4 *face_vel,
                              global float4 *face_old, global float4 *face_adv,
                              global uchar4 *valid)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float4 u = face_vel[node], old = face_old[node], du = (float4)(0.0f), adv = u;
    uchar4 ok = (uchar4)(0);
    int t_r = type_at(type, &g, c);
    for (int a = 0; a < MZ_DIM; a++) {
        int4 l = c - unit(a);
        int t_l = type_at(type, &g, l);
        float k = dt_over_rho * comp(g.inv_cell, a), ua = comp(u, a), va = ua;
        if (t_l == FLIP_SOLID || t_r == FLIP_SOLID) {
            ua = va = 0.0f;
        } else if (t_l == FLIP_FLUID || t_r == FLIP_FLUID) {
            uint nl = node_index(&g, l);
            float2 p_l = pressure[nl], p_r = pressure[node];
            if (t_r == FLIP_AIR)
                p_r = p_l - p_l / surface_fraction(density[nl], density[node]);
            else if (t_l == FLIP_AIR)
                p_l = p_r - p_r / surface_fraction(density[node], density[nl]);
            float2 grad = k * (p_r - p_l);
            ua -= grad.x;
            va = ua - grad.y;
        } else {
            continue; /* air on both sides: extrapolated */
        }
        u = set_comp(u, a, ua);
        adv = set_comp(adv, a, va);
        du = set_comp(du, a, ua - comp(old, a));
        ok = set_comp_u8(ok, a, 1);
    }
    face_vel[node] = u;
    face_old[node] = du;
    face_adv[node] = adv;
    valid[node] = ok;
}
