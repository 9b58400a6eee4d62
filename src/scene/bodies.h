/* Position-based bodies as particles and constraints: cloth grids, OBJ cloths and voxelised OBJ
 * soft bodies. Made once when the scene loads (so that every problem is a scene error with its
 * JSON path) and kept in mz_body.geom for the builder. */
#ifndef MZ_BODIES_H
#define MZ_BODIES_H
#include "scene/scene.h"

#include <stdint.h>

typedef struct mz_body_geom {
    size_t n;               /* particles, in body order */
    double (*x)[3];
    uint8_t *pinned;
    size_t n_stretch, n_bend;
    uint32_t (*stretch)[2]; /* particle pairs (body indices) held at their rest distance */
    uint32_t (*bend)[2];    /* pairs across adjacent triangles (cloth bending) */
    size_t n_tris;
    uint32_t (*tris)[3];    /* cloth surfaces, for output */
    double thickness;       /* contact distance in force */
    int phase;              /* MZ_PHASE_* (rigids: MZ_PHASE_RIGID, no constraints) */
    /* A voxelised mesh (soft bodies, mesh rigids) stays its lattice, a byte per cell, until
     * bodies_make: x and stretch are NULL, n and n_stretch counted. A scene too big for the
     * device is then refused before gigabytes of positions and constraints are made. */
    uint8_t *inside;
    size_t dims[3];
    double origin[3], spacing;
} mz_body_geom;

/* The scene's position-based bodies as one list: cloths, then meshes, then rigids
 * (k < bodies_count); bodies_path writes "meshes[2]" for messages and returns buf. */
size_t bodies_count(const mz_scene *s);
mz_body *bodies_get(const mz_scene *s, size_t k);
const char *bodies_path(const mz_scene *s, size_t k, char buf[48]);
/* The OBJ file body b reads (b->obj as given, relative to the scene's directory); caller frees. */
char *bodies_obj_file(const mz_scene *s, const mz_body *b);
/* Mass of one of the body's particles (rigids: density x spacing^dimensions unless mass). */
double bodies_particle_mass(const mz_scene *s, const mz_body *b);

/* Make the positions and constraints of a body kept as its lattice (the builder calls it). */
void bodies_make(mz_body_geom *g);

/* Geometry for every cloth and mesh of a scene whose keys read cleanly; problems go into *d
 * with their JSON paths. */
void bodies_prepare(mz_scene *s, mz_diag *d);
void bodies_free(mz_scene *s);

/* The longest rest length of the scene's distance constraints, from the geometry (a lattice not
 * made yet: its longest pair's, √3 spacings), 0 without any. */
double bodies_longest_rest(const mz_scene *s);
/* Particles and constraints of the scene's bodies (0 before bodies_prepare). */
size_t bodies_particle_count(const mz_scene *s);
size_t bodies_constraint_count(const mz_scene *s);

#endif
