/* Test-only kernels for tests/test_grid.c (embedded like every kernel file; mizu never builds
 * this program). */
#include "common/common.clh"
#include "grid/grid.clh"

/* For slot i: count[i] = neighbours found, list[i·maxn ..] = the first maxn of them as particle
 * ids (through the reordered id buffer), in visit order; *overflow = 1 when some slot had more
 * than maxn (the test then knows its lists are incomplete). */
kernel void neighbour_list(uint n, mz_grid_desc g, global const uint *words,
                           global const uint *first, global const float4 *pos,
                           global const uint *id, uint maxn, global uint *count,
                           global uint *list, global uint *overflow)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint c = 0;
    MZ_NEIGHBOURS_BEGIN(g, words, first, pos, pos[i], j, r2)
        (void)r2;
        if (c < maxn)
            list[(size_t)i * maxn + c] = id[j];
        c++;
    MZ_NEIGHBOURS_END
    count[i] = c;
    if (c > maxn)
        *overflow = 1u; /* every writer writes the same value */
}
