/* Triangle meshes for position-based bodies: Wavefront OBJ input, a world transform, the edges
 * and bending pairs that become distance constraints, and voxelisation of closed meshes into
 * soft-body lattices. Host only; nothing here touches OpenCL. */
#ifndef MZ_MESH_H
#define MZ_MESH_H
#include "util/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mz_mesh {
    size_t n_verts;
    double (*v)[3];     /* vertex positions */
    size_t n_tris;
    uint32_t (*tri)[3]; /* vertex indices, 0-based; polygons are fan-triangulated */
    size_t n_lines;
    uint32_t (*line)[2]; /* `l` polylines as segments (ropes, chains) */
} mz_mesh;

/* Read an OBJ file: `v x y z` and `f` lines (a b c, a/t/n, a//n, negative = relative indices,
 * polygons of any size fanned into triangles), and `l` polylines (kept as segments); other
 * statements (vt, vn, o, g, s, usemtl,
 * mtllib, comments) are skipped. Degenerate faces (a repeated vertex) are dropped. Every problem
 * goes into *d as "PATH:LINE: what is wrong" (several at once, up to the diag's cap); returns 0,
 * or -1 with *m empty. A file with neither a triangle nor a line is an error. A positive index may name any vertex
 * of the file, also one defined after the face; a negative one counts back from the last vertex
 * defined before it. Values after a vertex's x y z (w, colours) are ignored. */
/* The file's digest (util/digest.h) into *digest unless NULL, so that a resumed run can tell
 * that the mesh changed. At most MZ_MESH_MAX_BYTES. */
#define MZ_MESH_MAX_BYTES ((size_t)1 << 30)
int mesh_load_obj(const char *path, mz_mesh *m, uint64_t *digest, mz_diag *d);
/* The same from text in memory; name stands for the path in messages. */
int mesh_parse_obj(const char *text, size_t len, const char *name, mz_mesh *m, mz_diag *d);

/* x ← R·(scale·x) + translate, R from Euler angles in degrees applied about x, then y, then z
 * (R = Rz·Ry·Rx); multiples of 90° rotate exactly. rotate_deg and translate may be NULL. */
void mesh_transform(mz_mesh *m, double scale, const double rotate_deg[3],
                    const double translate[3]);

/* Unique undirected edges of the triangles and line segments, each as (lo, hi) with lo < hi,
 * sorted by (lo, hi).
 * *edges is malloc'd; returns the count. */
size_t mesh_edges(const mz_mesh *m, uint32_t (**edges)[2]);

/* Bending pairs: for every edge shared by exactly two triangles, the two vertices opposite it,
 * as (lo, hi), sorted, duplicates merged, and pairs that are themselves mesh edges dropped.
 * *pairs is malloc'd; returns the count. Edges with more than two triangles (non-manifold) get
 * no bending pair; *nonmanifold (if not NULL) receives how many such edges there were. */
size_t mesh_bending_pairs(const mz_mesh *m, uint32_t (**pairs)[2], size_t *nonmanifold);

/* Whether every edge is shared by exactly two triangles (a closed, manifold surface). */
int mesh_is_closed(const mz_mesh *m);

/* Axis-aligned bounds of the vertices. */
void mesh_bounds(const mz_mesh *m, double lo[3], double hi[3]);

/* Voxelise a closed mesh: the lattice of points origin + (i + 0.5, j + 0.5, k + 0.5)·spacing,
 * i < dims[0] ..., covering the mesh's bounds, with inside[(k·dims[1] + j)·dims[0] + i] = 1 for
 * points inside the surface (ray parity, robust to rays through vertices and edges). origin is
 * the bounds' lower corner. *inside is malloc'd; returns the number of points inside. Inside is
 * half-open: a point exactly on a face counts for the solid on the face's +x, +y or +z side
 * (after snapping to 2^-k of the spacing), so touching solids share no point. An open mesh gives
 * meaningless results (check mesh_is_closed). No triangles or spacing <= 0: dims all 0, *inside
 * NULL, returns 0. */
size_t mesh_voxelize(const mz_mesh *m, double spacing, double origin[3], size_t dims[3],
                     uint8_t **inside);

void mesh_free(mz_mesh *m);

#endif
