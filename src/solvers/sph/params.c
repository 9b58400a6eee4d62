/* The SPH constants of a scene (sph.h, sph_params_for): kernels' normalisations, the Tait
 * stiffness, viscosities, the wall model's terms. WCSPH, collapsed SPH and DFSPH take theirs
 * from here, and the tests their reference values. */
#include "build/build.h"
#include "solvers/sph/sph.h"

#include <math.h>

sph_params sph_params_for(const mz_scene *s)
{
    const mz_fluid *f = &s->fluids[0];
    int dim = s->sim.dimensions;
    double h = scene_support_radius(s), c0 = scene_speed_of_sound(s), pi = acos(-1.0);
    sph_params P = {0};
    /* The default mass is calibrated so that the summed density of the lattice is ρ0. The
     * continuity equation sets the lattice at ρ0 instead, so a particle weighs its lattice cell,
     * ρ0 spacing^d: with the calibrated mass the water is 1.5% (2D) lighter than the volume it
     * fills at "ρ0" says, and a tank's pressure came out ~0.25 spacing short of ρ0 g depth
     * near the surface (−7% two layers down). */
    double mass = build_particle_mass(s, f); /* ρ0 spacing^d with continuity (src/build/build.c) */
    P.h = (float)h;
    P.h2 = (float)(h * h);
    P.hs = (float)(0.5 * h);
    P.mass = (float)mass;
    P.rest_density = (float)f->rest_density;
    P.tait_b = (float)(f->rest_density * c0 * c0 / 7.0);
    P.c0 = (float)c0;
    P.mu = (float)f->viscosity;
    P.alpha = (float)f->artificial_viscosity;
    P.eps2 = (float)(0.01 * 0.25 * h * h);
    P.poly6 = (float)(dim == 3 ? 315.0 / (64.0 * pi * pow(h, 9)) : 4.0 / (pi * pow(h, 8)));
    /* The spiky gradient renormalised on the lattice: summed over a rest lattice of particle
     * volumes m/ρ0 it gives 0.874 instead of 1 in 2D (h = 2 spacing), so the pressure needed to
     * hold water up came out 15% above ρ0 g depth; with the factor, the gradient of a linear
     * field is exact on the rest lattice. */
    double volume = mass / f->rest_density;
    double g_sum = build_lattice_gradient_sum(f->spacing, h, dim) * volume / pow(f->spacing, dim);
    P.spiky_grad =
        (float)((dim == 3 ? -45.0 / (pi * pow(h, 6)) : -30.0 / (pi * pow(h, 5))) / g_sum);
    P.visc_lap = (float)(dim == 3 ? 45.0 / (pi * pow(h, 6)) : 40.0 / (pi * pow(h, 5)));
    P.r_min = (float)(1e-6 * h);
    P.accel_limit = (float)s->domain.boundary.acceleration_limit;
    P.limit_accel = s->domain.boundary.type == MZ_BOUNDARY_PENALTY;
    P.continuity = f->density_method == MZ_DENSITY_CONTINUITY;
    /* δ-SPH (Molteni & Colagrossi 2009) with δ = 0.1, the usual value: the continuity
     * equation alone keeps whatever density noise the flow makes, and the pressure with it. */
    P.diffusion = (float)(0.1 * 0.5 * h * c0);
    P.wall_r0 = (float)f->spacing;
    P.wall_d = (float)(0.01 * c0 * c0);
    P.friction = s->domain.boundary.friction;
    P.nu = (float)(f->viscosity / f->rest_density);
    P.wall_y0 = (float)(0.5 * f->spacing);
    /* A particle's drag is (u_τ²/u) wall_k Σ_b V_b ∇²W_ib v_t: over the layers of a wall area A
     * (A / spacing^(d−1) particles each) a flow with one u_τ then feels ρ0 u_τ² A. */
    P.wall_k = (float)(f->rest_density * pow(f->spacing, dim - 1) /
                       (mass * build_wall_laplacian_sum(f->spacing, h, dim, volume, P.visc_lap)));
    /* The pressure force's kernel gradient correction (kernels/sph/sph_kernels.clh: mz_kgc):
     * WCSPH's density pass sums it for the forces pass; collapsed SPH has no pass between. */
    P.kgc = scene_solver(s) == MZ_SOLVER_WCSPH && f->gradient_correction;
    return P;
}
