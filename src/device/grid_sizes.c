/* The neighbour grid's sizes (grid.h): cells for a layout, device bytes for the fit check, and
 * the host's reading of the sparse cell tables. Host arithmetic only: no device calls. */
#include "device/grid.h"
#include "device/grid_internal.h"

#include "util/err.h"

#include <math.h>
#include <stdlib.h>

/* Cell layout: dense cells per axis and count, hashed table size, key bits. */
size_t grid_cells_for(size_t n, double h, int dim, const double dmin[3], const double dmax[3])
{
    double dense_cells = 1.0, widest = 1.0;
    for (int a = 0; a < dim; a++) {
        double c = fmax(1.0, ceil((dmax[a] - dmin[a]) / h));
        dense_cells *= c;
        widest = fmax(widest, c);
    }
    if (dense_cells <= MAX_DENSE_CELLS && widest <= MAX_AXIS_CELLS &&
        dense_cells <= fmax(8.0 * (double)n, 4194304.0))
        return (size_t)dense_cells;
    size_t cells = MIN_TABLE;
    while (cells < 2 * n)
        cells *= 2;
    return cells;
}

size_t grid_cells_in(size_t n, double h, int dim, const double dmin[3], const double dmax[3],
                     mz_grid_mode mode)
{
    if (mode == MZ_GRID_AUTO)
        return grid_cells_for(n, h, dim, dmin, dmax);
    double dense_cells = 1.0;
    for (int a = 0; a < dim; a++)
        dense_cells *= fmax(1.0, ceil((dmax[a] - dmin[a]) / h));
    if (mode != MZ_GRID_HASHED)
        return (size_t)dense_cells;
    size_t cells = MIN_TABLE;
    while (cells < 2 * n)
        cells *= 2;
    return cells;
}

size_t grid_device_bytes(size_t n, size_t cells, const size_t *elems, int n_reg, bool slabs,
                         int lent)
{
    /* Histograms: the CPU geometry's (256 counters a 4096-particle block) are the larger. */
    size_t block = cpu_geometry.gs * cpu_geometry.items, groups = n ? (n + block - 1) / block : 1;
    /* The cell tables: a uint pair per 32 cells, a first slot per particle and one more. */
    size_t words = (cells + 31) / 32, bytes = 8 * words + 4 * (n + 1);
    size_t scratch = 0, spare[2] = {0, 0};
    for (int k = 0; k < n_reg; k++) {
        if (slabs)
            scratch += elems[k] * n;
        else
            spare[elems[k] == 16] = elems[k] * n;
    }
    if (lent & MZ_GRID_LENT4)
        spare[0] = 0;
    if (lent & MZ_GRID_LENT16)
        spare[1] = 0;
    /* The words' sums: the GPU geometry's (2048 words a block) are the more. */
    size_t word_block = gpu_geometry.gs * gpu_geometry.items;
    bytes += 4 * ((words + word_block - 1) / word_block);
    /* keys, values and the sort's copies of both, unless lent or the grid's own reorder scratch
     * of both sizes stands in for them */
    bool copies = !(lent & MZ_GRID_LENT_SORT) && !(spare[0] && spare[1]);
    size_t sort = (copies ? 4 : 2) * 4 * n;
    return bytes + scratch + spare[0] + spare[1] + sort + 4 * (groups << cpu_geometry.bits);
}

size_t grid_settled_bytes(size_t cells, size_t occupied)
{
    return 8 * ((cells + 31) / 32) + 4 * (occupied + 1);
}

/* Cell coordinate a of float position p, as mz_cell_coord (grid.clh) finds it: float
 * arithmetic alike (no contraction: the build's -ffp-contract=off), clamped alike. */
static cl_int cell_coord(const mz_grid_desc *d, float p, int a)
{
    float f = floorf((p - d->origin.s[a]) * d->inv_h);
    float lo = d->hashed ? -1073741824.0f : 0.0f;
    float hi = d->hashed ? 1073741824.0f : (float)(d->dims.s[a] - 1);
    return (cl_int)fminf(fmaxf(f, lo), hi);
}

size_t grid_occupied_cells(const mz_grid_desc *d, size_t cells, const float *pos, size_t n)
{
    unsigned char *seen = xcalloc((cells + 7) / 8, 1);
    size_t occupied = 0;
    for (size_t i = 0; i < n; i++) {
        const float *p = pos + 4 * i;
        cl_uint c[3] = {0, 0, 0};
        if (isfinite(p[0]) && isfinite(p[1]) && (d->dim == 2 || isfinite(p[2])))
            for (int a = 0; a < d->dim; a++)
                c[a] = (cl_uint)cell_coord(d, p[a], a);
        cl_uint key = d->hashed ? (c[0] * 73856093u ^ c[1] * 19349663u ^ c[2] * 83492791u) &
                                      d->table_mask
                                : (c[2] * (cl_uint)d->dims.s[1] + c[1]) * (cl_uint)d->dims.s[0] +
                                      c[0];
        if (key < cells && !(seen[key >> 3] & (1u << (key & 7)))) {
            seen[key >> 3] |= (unsigned char)(1u << (key & 7));
            occupied++;
        }
    }
    free(seen);
    return occupied;
}

/* The non-empty cells with a key below key: its word's count before it, and its bits below. */
static cl_uint cells_before(const cl_uint *words, cl_uint key)
{
    cl_uint below = words[2 * (size_t)(key >> 5)] & ((1u << (key & 31u)) - 1u);
    cl_uint r = words[2 * (size_t)(key >> 5) + 1];
    while (below) { /* popcount, portably */
        below &= below - 1u;
        r++;
    }
    return r;
}

static bool cell_filled(const cl_uint *words, cl_uint key)
{
    return (words[2 * (size_t)(key >> 5)] >> (key & 31u)) & 1u;
}

void grid_cell_range(const cl_uint *words, const cl_uint *first, cl_uint key, cl_uint *lo,
                     cl_uint *hi)
{
    if (!cell_filled(words, key)) {
        *lo = *hi = 0;
        return;
    }
    cl_uint r = cells_before(words, key);
    *lo = first[r];
    *hi = first[r + 1];
}

/* (grid_internal.h) Reads key's own word alone: no word past the table's last cell. */
cl_uint grid_cells_through(const cl_uint *words, cl_uint key)
{
    return cells_before(words, key) + (cell_filled(words, key) ? 1u : 0u);
}

void grid_keys_range(const cl_uint *words, const cl_uint *first, cl_uint k0, cl_uint k1,
                     cl_uint *lo, cl_uint *hi)
{
    *lo = first[cells_before(words, k0)];
    *hi = first[grid_cells_through(words, k1)];
}
