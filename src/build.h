/* Scene → host particle arrays (structure of arrays, creation order = particle id). */
#ifndef MZ_BUILD_H
#define MZ_BUILD_H
#include "scene.h"

#include <stdint.h>

#define MZ_MAX_PARTICLES ((size_t)INT32_MAX) /* ids and counts travel as 32-bit ints */

typedef struct mz_particles {
    size_t n;
    float *pos;       /* 4 per particle: x, y, z, contact radius */
    float *vel;       /* 4 per particle: vx, vy, vz, 0 */
    float *inv_mass;  /* 1/m; 0 pins a particle */
    uint32_t *id;     /* creation order: the order of every output array */
    uint32_t *body;   /* index of the body (fluids[i], ...) that made the particle */
} mz_particles;

/* Lattice cells per axis for a box fluid (particles sit at cell centres); 0 on an axis means
 * the box is thinner than the spacing. Returns the product. */
size_t build_lattice_dims(const mz_fluid *f, int dimensions, size_t dims[3]);

/* Particle count of a fluid / of the scene (saturates at SIZE_MAX). */
size_t build_fluid_count(const mz_fluid *f, int dimensions);
size_t build_particle_count(const mz_scene *s);

/* Mass of one particle of the fluid: its mass key, or rest_density × spacing^dimensions. */
double build_particle_mass(const mz_fluid *f, int dimensions);

/* Fill p from a validated scene. */
void build_particles(const mz_scene *s, mz_particles *p);
void particles_free(mz_particles *p);

#endif
