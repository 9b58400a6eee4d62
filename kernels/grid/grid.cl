/* The neighbour grid's build (src/device/grid.c): cell keys, a stable LSD radix sort of (key, slot)
 * pairs, the cell tables and the gather that reorders particle buffers; plus count_neighbours, the
 * simplest query (benchmarks and tests).
 *
 * Radix sort (Satish et al. 2009 without the local sort; Merrill & Grimshaw's reduce-then-scan
 * structure): each pass looks at MZ_RADIX_BITS bits of the key. Work-group g owns the contiguous
 * block [g·B, (g+1)·B) with B = MZ_SORT_GS · MZ_SORT_ITEMS, and work-item w of it owns the
 * contiguous run of MZ_SORT_ITEMS elements starting at g·B + w·MZ_SORT_ITEMS. Then
 *   radix_count    hist[d·groups + g] = how many keys of block g have digit d,
 *   radix_scan     exclusive prefix sum of hist in that digit-major order,
 *   radix_scatter  element → hist[d·groups + g] + (digit-d keys of earlier work-items of the
 *                  group) + (digit-d keys earlier in this work-item's run).
 * On GPUs (MZ_SORT_SHUFFLE) the scatter first places the group's elements in local memory in
 * that order, then writes them out in it, so that neighbouring work-items write neighbouring
 * slots (a digit's run); and the histograms' scan is spread over groups (hist_sums, radix_scan
 * of the sums, hist_bases) instead of one work-group's rounds. The same slots either way.
 * Every element lands after all smaller digits, and after equal digits that precede it in the
 * input (earlier group, earlier work-item, earlier in the run): the sort is stable, and its result
 * does not depend on scheduling. No atomics. Elements past n count nothing.
 *
 * Geometry comes from the host as defines (tuned per device type in src/device/grid.c). */
#include "common/common.clh"
#include "grid/grid.clh"

#ifndef MZ_RADIX_BITS
#define MZ_RADIX_BITS 4
#endif
#ifndef MZ_SORT_GS
#define MZ_SORT_GS 256
#endif
#ifndef MZ_SORT_ITEMS
#define MZ_SORT_ITEMS 8
#endif
#define MZ_RADIX (1u << MZ_RADIX_BITS)
#define MZ_SORT_B (MZ_SORT_GS * MZ_SORT_ITEMS)
#define MZ_SCAN_PER 8 /* entries per work-item per round of radix_scan */
#ifndef MZ_SORT_SHUFFLE
#define MZ_SORT_SHUFFLE 0
#endif

/* key[i] = the cell key of pos[i]; vals[i] = i (the slot it came from). */
kernel void cell_keys(uint n, mz_grid_desc g, global const float4 *pos, global uint *keys,
                      global uint *vals)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    keys[i] = mz_cell_key(&g, mz_cell_coord(&g, pos[i]));
    vals[i] = i;
}

/* Exclusive prefix sum of x over the work-group (Hillis–Steele in local memory); *total gets
 * the sum of all x. Every work-item must call it. */
static uint mz_group_scan(uint x, local uint *part, uint *total)
{
    uint w = get_local_id(0);
    part[w] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < MZ_SORT_GS; off <<= 1) {
        uint v = w >= off ? part[w - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[w] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint inclusive = part[w];
    *total = part[MZ_SORT_GS - 1];
    barrier(CLK_LOCAL_MEM_FENCE); /* part may be reused right after */
    return inclusive - x;
}

/* tab[d·GS + w] = how many keys of work-item w's run have digit d. Column w is this work-item's
 * alone, so no atomics; on GPUs the rows are GS apart, so a warp's accesses hit distinct banks. */
static void mz_radix_local_counts(uint n, uint shift, uint mask, global const uint *keys,
                                  local uint *tab)
{
    uint w = get_local_id(0);
    for (uint d = 0; d < MZ_RADIX; d++)
        tab[d * MZ_SORT_GS + w] = 0u;
    uint base = get_group_id(0) * MZ_SORT_B + w * MZ_SORT_ITEMS;
    for (uint j = 0; j < MZ_SORT_ITEMS; j++) {
        uint idx = base + j;
        if (idx < n)
            tab[((keys[idx] >> shift) & mask) * MZ_SORT_GS + w]++;
    }
}

/* Exclusive prefix sum of tab in its flat (digit-major) order: afterwards tab[d·GS + w] is the
 * number of keys of the group with a digit below d, plus digit-d keys of work-items before w. Each
 * work-item scans MZ_RADIX consecutive entries; the group scan joins them. */
static void mz_radix_local_scan(local uint *tab, local uint *part)
{
    uint w = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint sum = 0;
    for (uint e = 0; e < MZ_RADIX; e++)
        sum += tab[w * MZ_RADIX + e];
    uint total;
    uint run = mz_group_scan(sum, part, &total);
    for (uint e = 0; e < MZ_RADIX; e++) {
        uint v = tab[w * MZ_RADIX + e];
        tab[w * MZ_RADIX + e] = run;
        run += v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
radix_count(uint n, uint shift, uint mask, global const uint *keys, global uint *hist)
{
    local uint tab[MZ_RADIX * MZ_SORT_GS];
    local uint part[MZ_SORT_GS];
    mz_radix_local_counts(n, shift, mask, keys, tab);
    mz_radix_local_scan(tab, part);
    /* Row d's count = start of row d + 1 − start of row d (the last row ends at the total). */
    uint w = get_local_id(0), g = get_group_id(0), groups = get_num_groups(0);
    uint block = min((uint)MZ_SORT_B, n - g * MZ_SORT_B);
    for (uint d = w; d < MZ_RADIX; d += MZ_SORT_GS) {
        uint next = d + 1 < MZ_RADIX ? tab[(d + 1) * MZ_SORT_GS] : block;
        hist[d * groups + g] = next - tab[d * MZ_SORT_GS];
    }
}

/* Exclusive prefix sum of hist[0 .. count) in place, by one work-group in rounds of
 * GS·MZ_SCAN_PER entries (any count). */
kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
radix_scan(uint count, uint at, global uint *buf)
{
    global uint *hist = buf + at;
    local uint part[MZ_SORT_GS];
    uint w = get_local_id(0), carry = 0;
    for (uint round = 0; round < count; round += MZ_SORT_GS * MZ_SCAN_PER) {
        uint lo = round + w * MZ_SCAN_PER, sum = 0;
        for (uint e = 0; e < MZ_SCAN_PER; e++)
            if (lo + e < count)
                sum += hist[lo + e];
        uint total;
        uint run = carry + mz_group_scan(sum, part, &total);
        for (uint e = 0; e < MZ_SCAN_PER; e++)
            if (lo + e < count) {
                uint v = hist[lo + e];
                hist[lo + e] = run;
                run += v;
            }
        carry += total;
    }
}

kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
radix_scatter(uint n, uint shift, uint mask, global const uint *keys, global const uint *vals,
              global uint *keys_out, global uint *vals_out, global const uint *hist)
{
    local uint tab[MZ_RADIX * MZ_SORT_GS];
    local uint part[MZ_SORT_GS];
    local uint base[MZ_RADIX];
    mz_radix_local_counts(n, shift, mask, keys, tab);
    mz_radix_local_scan(tab, part);
    uint w = get_local_id(0), g = get_group_id(0), groups = get_num_groups(0);
    /* Where digit d of this group starts globally, minus where it starts in the flat local scan:
     * adding tab[d·GS + w] then gives work-item w's first slot for digit d. Unsigned wrap-around
     * makes the subtraction exact. */
    for (uint d = w; d < MZ_RADIX; d += MZ_SORT_GS)
        base[d] = hist[d * groups + g] - tab[d * MZ_SORT_GS];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint first = g * MZ_SORT_B + w * MZ_SORT_ITEMS;
#if MZ_SORT_SHUFFLE
    /* The group's elements in local memory at their place in the group's order (tab: the
     * digit's start in the group plus earlier keys of the digit), then out from there. */
    local uint lkeys[MZ_SORT_B], lvals[MZ_SORT_B];
    for (uint j = 0; j < MZ_SORT_ITEMS; j++) {
        uint idx = first + j;
        if (idx < n) {
            uint k = keys[idx];
            uint p = tab[((k >> shift) & mask) * MZ_SORT_GS + w]++;
            lkeys[p] = k;
            lvals[p] = vals[idx];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint block = min((uint)MZ_SORT_B, n - g * MZ_SORT_B);
    for (uint p = w; p < block; p += MZ_SORT_GS) {
        uint k = lkeys[p];
        uint dst = base[(k >> shift) & mask] + p;
        keys_out[dst] = k;
        vals_out[dst] = lvals[p];
    }
#else
    for (uint j = 0; j < MZ_SORT_ITEMS; j++) {
        uint idx = first + j;
        if (idx < n) {
            uint k = keys[idx];
            uint d = (k >> shift) & mask;
            uint dst = base[d] + tab[d * MZ_SORT_GS + w]++;
            keys_out[dst] = k;
            vals_out[dst] = vals[idx];
        }
    }
#endif
}

/* The histograms' scan spread over groups: sums[g] = the sum of block g's MZ_SORT_B entries
 * (work-item w's MZ_SORT_ITEMS consecutive ones), then, with the sums scanned, each entry gets
 * its block's sum before it plus the entries before it in the block. */
inline uint mz_hist_items(uint count, global const uint *hist, uint *first)
{
    *first = get_group_id(0) * MZ_SORT_B + get_local_id(0) * MZ_SORT_ITEMS;
    uint sum = 0;
    for (uint j = 0; j < MZ_SORT_ITEMS; j++)
        if (*first + j < count)
            sum += hist[*first + j];
    return sum;
}

kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
hist_sums(uint count, global uint *hist, uint at)
{
    local uint part[MZ_SORT_GS];
    uint first, total;
    mz_group_scan(mz_hist_items(count, hist, &first), part, &total);
    if (get_local_id(0) == 0)
        hist[at + get_group_id(0)] = total;
}

kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
hist_bases(uint count, global uint *hist, uint at)
{
    local uint part[MZ_SORT_GS];
    uint first, total;
    uint sum = mz_hist_items(count, hist, &first);
    uint run = hist[at + get_group_id(0)] + mz_group_scan(sum, part, &total);
    for (uint j = 0; j < MZ_SORT_ITEMS; j++)
        if (first + j < count) {
            uint v = hist[first + j];
            hist[first + j] = run;
            run += v;
        }
}

kernel void clear_uint(uint n, uint value, global uint *buf)
{
    uint i = get_global_id(0);
    if (i < n)
        buf[i] = value;
}

/* The cell tables (mz_cell_range, grid.clh) from sorted keys, in four launches after the previous
 * build's words are cleared: cell_marks sets each non-empty cell's bit, word_sums and
 * radix_scan (over the groups' sums) and word_bases give every word the non-empty cells before
 * it, cell_firsts writes each run's first slot at its cell's rank. No step depends on the order
 * in which work-items run (the bits are set with an integer atomic_or). */

/* Zero the words the sorted keys' cells lie in (the previous build's keys: this empties exactly
 * what that build filled, O(n) where clearing all words is O(cells / 32)). The first key of each
 * word writes it, so each word has one writer. */
kernel void cell_clear(uint n, global const uint *keys, global uint *words)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint w = keys[i] >> 5;
    if (i == 0 || keys[i - 1] >> 5 != w)
        vstore2((uint2)(0u), w, words);
}

kernel void cell_marks(uint n, global const uint *keys, volatile global uint *words)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint k = keys[i];
    if (i == 0 || keys[i - 1] != k)
        atomic_or(&words[2 * (k >> 5)], 1u << (k & 31u));
}

/* The non-empty cells of this work-item's MZ_SORT_ITEMS consecutive words, from *first (its
 * group's block of MZ_SORT_B words laid out as the sort's blocks). */
inline uint mz_items_cells(uint n_words, global const uint *words, uint *first)
{
    *first = get_group_id(0) * MZ_SORT_B + get_local_id(0) * MZ_SORT_ITEMS;
    uint sum = 0;
    for (uint j = 0; j < MZ_SORT_ITEMS; j++)
        if (*first + j < n_words)
            sum += popcount(words[2 * (*first + j)]);
    return sum;
}

/* sums[g] = the non-empty cells of group g's words. */
kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
word_sums(uint n_words, global const uint *words, global uint *sums)
{
    local uint part[MZ_SORT_GS];
    uint first, sum = mz_items_cells(n_words, words, &first);
    uint total;
    mz_group_scan(sum, part, &total);
    if (get_local_id(0) == 0)
        sums[get_group_id(0)] = total;
}

/* Each word's count of non-empty cells before it, from its group's (sums, scanned). */
kernel __attribute__((reqd_work_group_size(MZ_SORT_GS, 1, 1))) void
word_bases(uint n_words, global uint *words, global const uint *sums)
{
    local uint part[MZ_SORT_GS];
    uint first, sum = mz_items_cells(n_words, words, &first);
    uint total;
    uint run = sums[get_group_id(0)] + mz_group_scan(sum, part, &total);
    for (uint j = 0; j < MZ_SORT_ITEMS; j++)
        if (first + j < n_words) {
            words[2 * (first + j) + 1] = run;
            run += popcount(words[2 * (first + j)]);
        }
}

/* first[rank of cell k] = the first slot of k's run; the last slot also writes the sentinel
 * first[number of non-empty cells] = n. One writer per entry. */
kernel void cell_firsts(uint n, global const uint *keys, global const uint *words,
                        global uint *first)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint k = keys[i];
    bool head = i == 0 || keys[i - 1] != k;
    if (!head && i != n - 1)
        return; /* most slots: only a run's first and the last slot look up a rank */
    uint r = mz_cell_rank_(vload2(k >> 5, words), k);
    if (head)
        first[r] = i;
    if (i == n - 1)
        first[r + 1] = n;
}

/* The reorder: dst[i] = src[vals[i]], 4- and 16-byte elements. */
kernel void gather4(uint n, global const uint *vals, global const uint *src, global uint *dst)
{
    uint i = get_global_id(0);
    if (i < n)
        dst[i] = src[vals[i]];
}

kernel void gather16(uint n, global const uint *vals, global const uint4 *src,
                     global uint4 *dst)
{
    uint i = get_global_id(0);
    if (i < n)
        dst[i] = src[vals[i]];
}

/* Distributed runs (src/dist/slabs.c): keys[i] = the slab-axis cell of pos[begin + i] (as the
 * cell keys see it), vals[i] = its slot. */
kernel void slab_keys(uint begin, uint n, mz_grid_desc g, global const float4 *pos,
                      global uint *keys, global uint *vals)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    int4 c = mz_cell_coord(&g, pos[begin + i]);
    keys[i] = (uint)MZ_SLAB_AXIS(c);
    vals[i] = begin + i;
}

/* The exchange's keys: keys[i] = the segment of pos[begin + i]'s slab-axis cell, from a table
 * of every layer's segment (the layers between two window edges of any rank: a window is then a
 * run of whole segments), vals[i] = its slot. */
kernel void slab_segments(uint begin, uint n, mz_grid_desc g, global const float4 *pos,
                          global const uint *segment_of_layer, global uint *keys,
                          global uint *vals)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    int4 c = mz_cell_coord(&g, pos[begin + i]);
    keys[i] = segment_of_layer[MZ_SLAB_AXIS(c)];
    vals[i] = begin + i;
}

/* dst[at + i] = src[vals[from + i]], i < n, at counted in uints (the exchange packs 4- and
 * 16-byte fields one after another, so a 16-byte field may start at any 4-byte offset). */
kernel void gather4_at(uint n, global const uint *vals, uint from, global const uint *src,
                       global uint *dst, ulong at)
{
    uint i = get_global_id(0);
    if (i < n)
        dst[at + i] = src[vals[from + i]];
}

kernel void gather16_at(uint n, global const uint *vals, uint from, global const uint4 *src,
                        global uint *dst, ulong at)
{
    uint i = get_global_id(0);
    if (i < n)
        vstore4(src[vals[from + i]], i, dst + at);
}

/* out[t] = the first i < n with keys[i] >= targets[t] in ascending keys (n if none). */
kernel void key_bounds(uint n, global const uint *keys, uint m, global const uint *targets,
                       global uint *out)
{
    uint t = get_global_id(0);
    if (t >= m)
        return;
    uint lo = 0, hi = n, want = targets[t];
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2;
        if (keys[mid] < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[t] = lo;
}

#include "grid/resort.clh"

/* count[i] = particles within h of slot i, itself included. */
kernel void count_neighbours(uint n, mz_grid_desc g, global const uint *words,
                             global const uint *first, global const float4 *pos,
                             global uint *count)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint c = 0;
    MZ_NEIGHBOURS_BEGIN(g, words, first, pos, pos[i], j, r2)
        c++;
    MZ_NEIGHBOURS_END
    count[i] = c;
}
