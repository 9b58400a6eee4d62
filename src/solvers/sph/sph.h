/* SPH parameters as the kernels take them (kernels/sph/sph_kernels.clh), for the solver and tests. */
#ifndef MZ_SPH_H
#define MZ_SPH_H
#include "scene/scene.h"

#include <CL/cl.h>

/* Mirror of mz_sph in kernels/sph/sph_kernels.clh: 4-byte members only, no padding. */
typedef struct sph_params {
    cl_float h, h2, hs, mass, rest_density, tait_b, c0, mu, alpha, eps2;
    cl_float poly6, spiky_grad, visc_lap, r_min, accel_limit, wall_r0, wall_d;
    cl_int limit_accel, continuity;
    cl_float diffusion;
    cl_int friction;
    cl_float nu, wall_y0, wall_k;
} sph_params;

/* The kernel constants, Tait stiffness and wall terms of an SPH scene. */
sph_params sph_params_for(const mz_scene *s);

#endif
