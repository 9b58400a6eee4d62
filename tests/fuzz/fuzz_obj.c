/* libFuzzer harness for the OBJ reader and the mesh operations the scene's bodies use
 * (`make fuzz FUZZ_TARGET=fuzz_obj`; docs/testing.md). The input is an OBJ file's text. */
#include "scene/mesh.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mz_mesh m;
    mz_diag d = {0};
    int rc = mesh_parse_obj((const char *)data, size, "fuzz.obj", &m, &d);
    if ((rc == 0) != (d.count == 0))
        abort();
    diag_free(&d);
    if (rc != 0)
        return 0;
    for (size_t t = 0; t < m.n_tris; t++)
        for (int k = 0; k < 3; k++)
            if (m.tri[t][k] >= m.n_verts)
                abort();
    for (size_t l = 0; l < m.n_lines; l++)
        for (int k = 0; k < 2; k++)
            if (m.line[l][k] >= m.n_verts)
                abort();
    uint32_t(*edges)[2] = NULL, (*pairs)[2] = NULL;
    size_t ne = mesh_edges(&m, &edges);
    for (size_t e = 0; e < ne; e++)
        if (edges[e][0] >= edges[e][1] || edges[e][1] >= m.n_verts ||
            (e && (edges[e - 1][0] > edges[e][0] ||
                   (edges[e - 1][0] == edges[e][0] && edges[e - 1][1] >= edges[e][1]))))
            abort(); /* unique, (lo, hi), sorted */
    size_t np = mesh_bending_pairs(&m, &pairs, NULL);
    for (size_t p = 0; p < np; p++)
        if (pairs[p][0] >= pairs[p][1] || pairs[p][1] >= m.n_verts)
            abort();
    free(edges);
    free(pairs);
    /* Voxelise closed meshes at a spacing that keeps the lattice small (as the scene loader's
     * 2e9-point cap would, scaled down for speed). */
    if (mesh_is_closed(&m)) {
        double lo[3], hi[3], ext = 0;
        mesh_bounds(&m, lo, hi);
        for (int a = 0; a < 3; a++)
            ext = hi[a] - lo[a] > ext ? hi[a] - lo[a] : ext;
        double spacing = ext / 40;
        if (spacing > 0 && spacing < 1e300) {
            double origin[3];
            size_t dims[3];
            uint8_t *inside = NULL;
            size_t n = mesh_voxelize(&m, spacing, origin, dims, &inside);
            size_t cells = dims[0] * dims[1] * dims[2], count = 0;
            for (size_t c = 0; c < cells; c++)
                count += inside[c] != 0;
            if (count != n)
                abort();
            free(inside);
        }
    }
    mesh_free(&m);
    return 0;
}
