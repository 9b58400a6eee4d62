/* WCSPH's continuity density as two kernels, where its sums run over the lists after the walk
 * (src/solvers/sph/sph_passes.c, sph_run_density: GPUs): the walk writing particle i's lists,
 * then the sums over them and i's density and pressure, each kernel with only its half's
 * registers (on an H100 48 and 40 where sph.cl's sph_density holds 55). A program of their own,
 * built only for a run that splits its pass. The same arithmetic in the same order as
 * sph_density's. */
#include "common/common.clh"
#include "grid/grid.clh"
#include "grid/neighbour_list.clh"
#include "common/walls.clh"
#include "sph/sph_kernels.clh"
#include "sph/sph_density.clh"

kernel void sph_density_walk(MZ_SPH_DENSITY_IN)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    mz_kgc S = (mz_kgc)(0.0f);
    (void)mz_sph_density_rate(&P, i, x[i], v[i], rho[i], (float4)(0.0f), g, cs, ce, x, v, rho,
                              gb, bcs, bce, bx, bm, nb, moving, bv, ba, &S, lists, stride, cap,
                              windows, fstride, nl, nc, bl, bc, overflow, MZ_SUMS_WALK);
}

kernel void sph_density_listed(MZ_SPH_DENSITY_IN)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 gravity = mz_frame_accel(&frame, x[i], v[i]);
    mz_kgc S = (mz_kgc)(0.0f);
    float r = rho[i] + lag * mz_sph_density_rate(&P, i, x[i], v[i], rho[i], gravity, g, cs, ce,
                                                 x, v, rho, gb, bcs, bce, bx, bm, nb, moving, bv,
                                                 ba, &S, lists, stride, cap, windows, fstride,
                                                 nl, nc, bl, bc, overflow, MZ_SUMS_LISTED);
    rho_out[i] = r;
    p[i] = mz_tait(&P, r);
    if (MZ_KGC_ON(P))
        kgc[i] = mz_kgc_from(&P, S, r);
}

