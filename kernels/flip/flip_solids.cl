/* FLIP's solids (src/solvers/flip/flip.c): the moving colliders' cells every step and the
 * pressure on solid faces for the forces on solids. */
#include "common/common.clh"
#include "common/colliders.clh"
#include "common/loads.clh"
#include "flip/flip_grid.clh"

/* ---- forces on solids ---------------------------------------------------------------------- */

/* The pressure force on the solids whose forces are measured (src/solvers/flip/flip.c): every
 * face between a fluid cell and a solid cell pushes the solid along n (from the fluid into the
 * solid) with the face's pressure times its area. A solid face's velocity is the solid's, so the
 * projection acts there as a ghost pressure p_s = p_f + ρ cell_a (u*·n)/dt that stops the
 * velocity u* the fluid brought (face_star: P2G's plus gravity's); the face carries their mean,
 * p_f + ½ ρ cell_a (u*·n)/dt (in still water the hydrostatic pressure at the wall). The solid is
 * a wall of the domain (the cell outside it) or the collider owner[cell] (MZ_OWNER_COLLIDER +
 * index; −1 none). One work-group per load over every node, a fixed tree: sums, 6 floats a
 * load (force, torque about about[load] at the faces' centres). */
kernel __attribute__((reqd_work_group_size(MZ_LOAD_GROUP, 1, 1)))
void flip_face_loads(uint n_nodes, flip_grid g, float rho, float inv_dt,
                     global const uchar *type, global const float2 *pressure,
                     global const float4 *face_star, global const int *owner,
                     global const int *load_owner, global const float4 *about,
                     global float *sums)
{
    local float8 part[MZ_LOAD_GROUP];
    const uint l = get_group_id(0), t = get_local_id(0);
    const int want = load_owner[l];
    const float4 ctr = about[l];
    float4 f = (float4)(0.0f), m = (float4)(0.0f);
    for (uint node = t; node < n_nodes; node += MZ_LOAD_GROUP) {
        int4 c = node_coord(&g, node);
        for (int a = 0; a < MZ_DIM; a++) {
            int4 lo = c - unit(a);
            int tl = type_at(type, &g, lo), tr = type_at(type, &g, c);
            bool fluid_left = tl == FLIP_FLUID && tr == FLIP_SOLID;
            bool fluid_right = tr == FLIP_FLUID && tl == FLIP_SOLID;
            if (!fluid_left && !fluid_right)
                continue;
            int4 sc = fluid_left ? c : lo, fc = fluid_left ? lo : c;
            int who = is_cell(&g, sc) ? owner[node_index(&g, sc)]
                                      : 2 * a + (fluid_left ? 1 : 0); /* the wall beyond */
            if (who != want)
                continue;
            float sign = fluid_left ? 1.0f : -1.0f; /* n along +e_a or −e_a */
            float ca = comp(g.cell, a);
            float pf = pressure[node_index(&g, fc)].x;
            float p = pf + 0.5f * rho * ca * sign * comp(face_star[node], a) * inv_dt;
            float area = 1.0f;
            for (int b = 0; b < MZ_DIM; b++)
                area *= b == a ? 1.0f : comp(g.cell, b);
            float4 fi = set_comp((float4)(0.0f), a, sign * p * area);
            float4 centre = convert_float4(c) + (float4)(0.5f);
            centre = set_comp(centre, a, comp(convert_float4(c), a));
            float4 x = g.origin + centre * g.cell;
#if MZ_DIM == 2
            x.z = 0.0f;
#endif
            x.w = 0.0f;
            f += fi;
            m += cross(x - ctr, fi);
        }
    }
    mz_load_total(part, t, f, m, sums + 6 * l);
}

/* Moving colliders (src/solvers/flip/flip.c, place_solids): every cell's signed distance to the
 * solids, the static ones' (sdf_static) and each moving one's where its law has it now; the
 * collider whose solid holds the cell's centre (the deepest; the static owner's when it is
 * deeper); and that solid's velocity there (0 for a static one). */
kernel void flip_solids(uint n_nodes, flip_grid g, uint nc, global const mz_collider_dev *cs,
                        mz_motion_now now, global const float *sdf_static,
                        global const int *owner_static, global float *sdf,
                        global int *owner, global float4 *solid_vel)
{
    uint node = get_global_id(0);
    if (node >= n_nodes)
        return;
    int4 c = node_coord(&g, node);
    float4 x = g.origin + (convert_float4(c) + (float4)(0.5f)) * g.cell;
    x.w = 0.0f;
#if MZ_DIM == 2
    x.z = 0.0f;
#endif
    float d = sdf_static[node], inside = fmin(d, 0.0f);
    int o = owner_static[node];
    float4 v = (float4)(0.0f);
    for (uint k = 0; k < nc; k++) {
        mz_collider_dev col = cs[k];
        if (col.mover < 0)
            continue;
        float4 nrm, vel;
        float dk = mz_collider_meet(&col, &now, x, &nrm, &vel);
        d = fmin(d, dk);
        if (dk < inside) {
            inside = dk;
            o = 6 + (int)k; /* MZ_OWNER_COLLIDER */
            v = mz_vec(vel);
        }
    }
    sdf[node] = d;
    owner[node] = o;
    solid_vel[node] = v;
}
