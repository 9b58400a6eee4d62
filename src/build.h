/* Scene → host particle arrays (structure of arrays, creation order = particle id). */
#ifndef MZ_BUILD_H
#define MZ_BUILD_H
#include "scene.h"

#include <stdint.h>

/* ids and counts travel as 32-bit ints. A fuzzing build (docs/testing.md) allows fewer, so that
 * the validator's walks over fluid lattices stay within the fuzzer's time limit. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define MZ_MAX_PARTICLES ((size_t)10000000)
#else
#define MZ_MAX_PARTICLES ((size_t)INT32_MAX)
#endif

typedef struct mz_particles {
    size_t n;
    float *pos;       /* 4 per particle: x, y, z, contact radius */
    float *vel;       /* 4 per particle: vx, vy, vz, 0 */
    float *inv_mass;  /* 1/m; 0 pins a particle */
    uint32_t *id;     /* creation order: the order of every output array */
    uint32_t *body;   /* index of the body that made the particle: fluids, then cloths, then
                       * meshes, in scene order */
    uint32_t *phase;  /* MZ_PHASE_*: what kind of body the particle belongs to */

    /* Position-based bodies: distance constraints between particle ids (stretch and bending
     * alike), and the triangles of cloth surfaces for output. */
    size_t n_constraints;
    uint32_t *con_ends;   /* 2 per constraint: particle ids a, b */
    float *con_params;    /* 4 per constraint: rest length, compliance, stiffness, 0 */
    size_t n_triangles;
    uint32_t *triangles;  /* 3 per triangle: particle ids */
} mz_particles;

/* The kind of body a particle belongs to (the `phase` output field). */
typedef enum mz_phase {
    MZ_PHASE_FLUID = 0,    /* fluids[] */
    MZ_PHASE_CLOTH = 1,    /* cloths[] and meshes[] of kind cloth */
    MZ_PHASE_SOFTBODY = 2, /* meshes[] of kind softbody */
    MZ_PHASE_RIGID = 3,    /* reserved for rigid bodies */
} mz_phase;

/* Lattice cells per axis for a box fluid (particles sit at cell centres); 0 on an axis means
 * the box is thinner than the spacing. Returns the product. */
size_t build_lattice_dims(const mz_fluid *f, int dimensions, size_t dims[3]);

/* Particle count of a fluid / of the scene (saturates at SIZE_MAX). */
size_t build_fluid_count(const mz_fluid *f, int dimensions);
size_t build_particle_count(const mz_scene *s);

/* Mass of one particle of the fluid: its mass key, else rest_density × spacing^dimensions;
 * for SPH, that divided by the kernel's sum over the lattice (Σ_j W_ij · spacing^d, 1.015 for
 * poly6 at h = 2 spacing in 2D), so the lattice as built sits exactly at rest_density: a lattice
 * 1.5% too dense would start with a Tait pressure of 0.1 B, several times the hydrostatic one. */
double build_particle_mass(const mz_scene *s, const mz_fluid *f);

/* SPH: Σ_j W(x_i − x_j) · spacing^d over a cubic (square) lattice, the poly6 kernel of support h. */
double build_lattice_kernel_sum(double spacing, double h, int dimensions);
/* SPH: Σ_j spacing^d (x_j − x_i)_x ∂W/∂x_i over the lattice for the spiky kernel: 1 for a
 * consistent gradient, 0.886 in 2D and 0.956 in 3D at h = 2 spacing. */
double build_lattice_gradient_sum(double spacing, double h, int dimensions);
/* The wall function's lattice constant: Σ over the fluid layers next to a flat wall of
 * Σ_b V ∇²W_ib over the wall particles below (the lattice continued into the wall), with
 * V = volume and ∇²W = lap (h − r), in 1/m². */
double build_wall_laplacian_sum(double spacing, double h, int dimensions, double volume,
                                double lap);


/* The domain's walls as boundary particles: the fluid lattice (cells of `spacing` from the
 * domain's min corner, particles at cell centres) continued `layers` cells beyond every wall,
 * edges and corners included, so a fluid particle at rest near a wall sees the same
 * neighbourhood as one inside. 4 floats a particle (x, y, z, 0) into *pos (malloc'd); returns
 * the count. In 2D the shell around the rectangle (z = 0). */
size_t build_wall_particles(const mz_scene *s, double spacing, int layers, float **pos);

/* The colliders likewise: lattice points inside the domain and inside a solid, no deeper than
 * `layers` spacings below its surface. Appends to *pos (n points already there); returns the
 * new count. */
size_t build_collider_particles(const mz_scene *s, double spacing, int layers, float **pos,
                                size_t n);
/* How many boundary particles collider `which` gets (after those of earlier colliders). */
size_t build_collider_samples(const mz_scene *s, size_t which, double spacing, int layers);
/* SPH with particle walls: how many wall and collider particles the scene gets (counted, not
 * built). */
size_t build_boundary_count(const mz_scene *s);
/* SPH: how many wall particles the domain's shell gets, in double (a huge domain's count need not
 * fit an integer); infinity when an axis alone has more than MZ_MAX_PARTICLES cells. */
double build_wall_count(const mz_scene *s);
/* SPH: the wall layers the support radius needs, ceil(h / spacing − 1/2). */
int build_wall_layers(const mz_scene *s);

/* Fill p from a validated scene. */
void build_particles(const mz_scene *s, mz_particles *p);
void particles_free(mz_particles *p);

#endif
