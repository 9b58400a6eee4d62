/* build/: a validated scene → host particle and constraint arrays (structure of arrays,
 * creation order = particle id), and the lattice sums and boundary samples the SPH solver's
 * set-up needs. No OpenCL here: the arrays are plain host memory that device code uploads.
 * May include: scene/, util/. */
#ifndef MZ_BUILD_H
#define MZ_BUILD_H
#include "scene/scene.h"
#include "scene/sizes.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct mz_particles {
    size_t n;         /* particles here */
    size_t n_total;   /* of the whole run: n, or more when these are one rank's share */
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
 * neighbourhood as one inside. 4 floats a particle (x, y, z, owner) into *pos (malloc'd);
 * returns the count. In 2D the shell around the rectangle (z = 0). The owner is the wall a
 * particle lies furthest beyond (scene.h's MZ_WALL_X_MIN order: x_min, x_max, y_min, ...; an
 * edge's or corner's tie goes to the wall across gravity's main axis, the floor), for the
 * forces on each wall. */
size_t build_wall_particles(const mz_scene *s, double spacing, int layers, float **pos);

/* The colliders likewise: lattice points inside the domain and inside a solid, no deeper than
 * `layers` spacings below its surface. Appends to *pos (n points already there); returns the
 * new count. Owner: MZ_OWNER_COLLIDER + the collider's index. */
size_t build_collider_particles(const mz_scene *s, double spacing, int layers, float **pos,
                                size_t n);

/* Those nb wall and collider particles (rest: 4 floats each as built, owner in w) at time t
 * into out (3 floats each, the same order): a moving collider's slid or turned by its law at
 * t as kernels/common/boundary.cl places them, the others where they are (boundary_pose.c). */
void build_boundary_at(const mz_scene *s, const float *rest, size_t nb, double t, float *out);
/* Whether the boundary particle at rest (4 floats, its owner in w) is a moving collider's. */
bool build_boundary_moves(const mz_scene *s, const float *rest);

/* Fill p from a validated scene. */
void build_particles(const mz_scene *s, mz_particles *p);
/* Only the particles keep takes, given their positions as the device gets them (x, y, z
 * floats; z = 0 in 2D), in id order, each with its id of the whole scene (a distributed rank's
 * share, dist/slabs.h). keep may count and take none. The constraints and triangles of cloths
 * and meshes are all there, naming particles by id (the bodies' particles are made whole on
 * the host first, then those keep takes kept). */
typedef bool (*build_keep_fn)(void *ctx, const float x[3]);
void build_particles_where(const mz_scene *s, mz_particles *p, build_keep_fn keep, void *ctx);
/* The bodies' particles alone, whole, in id order (from the first body's id; slot k holds id
 * first + k): a distributed rank's rigid bodies are set up from all their particles. */
void build_body_particles(const mz_scene *s, mz_particles *p);
/* The body indices (as mz_particles.body) and the phases (MZ_PHASE_*) of ids
 * [first, first + count), without building the particles. */
void build_body_of_ids(const mz_scene *s, size_t first, size_t count, uint32_t *body);
void build_phase_of_ids(const mz_scene *s, size_t first, size_t count, uint32_t *phase);
/* Host bytes build_particles and the solvers' set-up take for the scene's n particles: the
 * particle and constraint arrays, the positions and pairs of bodies still kept as lattices,
 * and SPH wall and collider particles. */
double build_host_bytes(const mz_scene *s, size_t n);
void particles_free(mz_particles *p);
/* Free what only the device needs once it has them (positions, velocities, inverse masses,
 * ids: 40 bytes a particle, 40 GB at 10^9); body, phase, constraints and triangles stay for
 * the output's static columns. */
void particles_free_uploaded(mz_particles *p);

#endif
