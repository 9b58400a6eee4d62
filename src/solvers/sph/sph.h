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
    cl_int kgc; /* kernel gradient correction (WCSPH; fluids[].gradient_correction) */
} sph_params;

/* The kernel constants, Tait stiffness and wall terms of an SPH scene. */
sph_params sph_params_for(const mz_scene *s);

struct mz_sim;
/* WCSPH's neighbour lists (sph.c), for tests: whether the run keeps them, their entries a
 * particle, a masked fluid list's windows a row (0: entries) and how often they grew;
 * set_list_cap gives them room for `cap` entries and a masked list one window a row (they grow
 * again at a frame's end when short). 0, or -1 when the run keeps none or after reporting. */
int sph_list_stats(const struct mz_sim *sim, unsigned *cap, unsigned *windows, long *grown);
int sph_set_list_cap(struct mz_sim *sim, unsigned cap);

#endif
