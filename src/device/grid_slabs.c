/* The grid's launches for distributed runs (device/grid.h, "For distributed runs"): slab keys
 * and segments of a window's particles, bounds in sorted keys, and gathers into a packed send
 * buffer (dist/slabs_exchange.c). */
#include "device/grid.h"
#include "device/grid_internal.h"
#include "device/kargs.h"

int grid_slab_keys(mz_grid *g, cl_mem pos, size_t begin, size_t n, cl_mem keys, cl_mem vals)
{
    cl_uint begin_u = (cl_uint)begin, n_u = (cl_uint)n;
    return KARGS(g->k_slab_keys, "slab_keys", A(begin_u), A(n_u), A(g->desc), A(pos), A(keys),
                 A(vals)) &&
                   grid_launch_n(g, g->k_slab_keys, n, "slab_keys")
               ? 0
               : -1;
}

int grid_slab_segments(mz_grid *g, cl_mem pos, size_t begin, size_t n, cl_mem table,
                       cl_mem keys, cl_mem vals)
{
    cl_uint begin_u = (cl_uint)begin, n_u = (cl_uint)n;
    return KARGS(g->k_slab_segments, "slab_segments", A(begin_u), A(n_u), A(g->desc), A(pos),
                 A(table), A(keys), A(vals)) &&
                   grid_launch_n(g, g->k_slab_segments, n, "slab_segments")
               ? 0
               : -1;
}

int grid_gather_at(mz_grid *g, cl_mem src, size_t elem, cl_mem vals, size_t from, size_t n,
                   cl_mem dst, size_t at_bytes)
{
    if (n == 0)
        return 0;
    bool wide = elem == 16;
    cl_kernel k = wide ? g->k_gather16_at : g->k_gather4_at;
    const char *name = wide ? "gather16_at" : "gather4_at";
    cl_uint n_u = (cl_uint)n, from_u = (cl_uint)from;
    cl_ulong at = (cl_ulong)(at_bytes / 4);
    return KARGS(k, name, A(n_u), A(vals), A(from_u), A(src), A(dst), A(at)) &&
                   grid_launch_n(g, k, n, name)
               ? 0
               : -1;
}

int grid_bounds(mz_grid *g, cl_mem keys, size_t n, cl_mem targets, size_t m, cl_mem out)
{
    cl_uint n_u = (cl_uint)n, m_u = (cl_uint)m;
    return KARGS(g->k_bounds, "key_bounds", A(n_u), A(keys), A(m_u), A(targets), A(out)) &&
                   grid_launch_n(g, g->k_bounds, m, "key_bounds")
               ? 0
               : -1;
}
