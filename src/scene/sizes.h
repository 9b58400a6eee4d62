/* How many particles a scene makes, counted without building them: lattice dimensions, the
 * particle count, SPH wall layers and boundary-particle counts. Validation reads these to refuse
 * a scene too large to run, and the builder (build/) walks the same lattices to fill its arrays,
 * so counting and building cannot disagree. */
#ifndef MZ_SIZES_H
#define MZ_SIZES_H
#include "scene/scene.h"

#include <stdint.h>

/* ids and counts travel as 32-bit ints. A fuzzing build (docs/testing.md) allows fewer, so that
 * the validator's walks over fluid lattices stay within the fuzzer's time limit. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define MZ_MAX_PARTICLES ((size_t)10000000)
#else
#define MZ_MAX_PARTICLES ((size_t)INT32_MAX)
#endif

/* Lattice cells per axis for a box fluid (particles sit at cell centres); 0 on an axis means
 * the box is thinner than the spacing. Returns the product. */
size_t scene_lattice_dims(const mz_fluid *f, int dimensions, size_t dims[3]);

/* Particle count of a fluid / of the scene, bodies included (saturates at SIZE_MAX). */
size_t scene_fluid_count(const mz_fluid *f, int dimensions);
size_t scene_particle_count(const mz_scene *s);

/* SPH: the wall layers the support radius needs, ceil(h / spacing − 1/2). */
int scene_wall_layers(const mz_scene *s);
/* SPH: how many wall particles the domain's shell gets, in double (a huge domain's count need not
 * fit an integer); infinity when an axis alone has more than MZ_MAX_PARTICLES cells. */
double scene_wall_count(const mz_scene *s);

/* The lattice points (cells of `spacing` from the domain's min corner, at cell centres) that
 * collider `which` samples as boundary particles: inside the domain and the solid, no deeper
 * than `layers` spacings below its surface, and not taken by an earlier collider. Each is passed
 * to take(ctx, x) in lattice order when take is not NULL. Returns the count. */
size_t scene_collider_samples(const mz_scene *s, size_t which, double spacing, int layers,
                              void (*take)(void *ctx, const double x[3]), void *ctx);
/* SPH with particle walls: how many wall and collider particles the scene gets (SIZE_MAX when
 * the walls alone are more than a scene may have). */
size_t scene_boundary_count(const mz_scene *s);
/* Of those, the moving colliders' (the output writes them every frame). */
size_t scene_moving_boundary_count(const mz_scene *s);

#endif
