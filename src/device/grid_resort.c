/* The neighbour grid's resort (grid.h: grid_build; grid_internal.h; kernels in
 * kernels/grid/resort.clh).
 *
 * A step moves few particles across a cell face (WCSPH: a few % a step), yet a full build sorts
 * every key again. The resort starts from the last build's sorted keys, which slot i's particle
 * had: those whose cell did not change are in key order already; the others ("moved") are
 * packed in slot order (moved_sums, a scan of the blocks' sums, moved_pack), radix-sorted alone
 * and merged with the rest by (key, slot) (resort_merge). Its permutation is exactly the full
 * sort's, the stable sort of (key, slot), for any sorted old keys: every output keeps its bits,
 * and an owner that reorders its particles elsewhere costs speed, never correctness.
 *
 * No memory of its own but a uint: its arrays live in what a build leaves dead until the
 * gather. The moved-before counts and the moved keys and slots are three sub-buffers of the
 * 16-byte reorder scratch; the merged keys go to the sort's key copy (then over the old keys)
 * and their slots to vals; the moved ones' radix passes ping-pong through those two.
 *
 * When: on GPUs wherever it can (the particles of the last build, the scratch to hold the
 * arrays) where the last resort moved at most half of them (their count is read back: it sizes
 * the moved ones' radix passes); after a few full sorts it tries again. MIZU_GRID_RESORT=0
 * never resorts, =2 resorts wherever it can (tests: small clouds, crowds of moved particles). */
#include "device/grid.h"
#include "device/grid_internal.h"

#include "device/kargs.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

/* Below this many particles the full sort wins (MIZU_GRID_RESORT=2 aside): the resort's wait
 * for its count and its launches cost ~0.3 ms more. tests/bench_grid on an H200, 3% moved,
 * full sort against resort: 0.56 against 0.67 ms at 10^6 particles, 2.78 against 1.59 ms at
 * 10^7 (even near 1.8 × 10^6). CPUs sort in full: their counting sort's 2–3 passes cost less
 * than the resort's key passes and searches (PoCL, 2 cores, 10^6 particles, 3% moved: 22.1 ms
 * full, 29.9 ms resorted). */
#define RESORT_MIN_PARTICLES 2000000
/* Full sorts (the last resort moved over half the particles) before the next try. */
#define RESORT_RETRY 8

/* Offsets of before[], the moved keys and the moved slots in the 16-byte scratch (4 · cap bytes
 * each, each at the device's sub-buffer alignment): false where they do not fit. */
static bool layout(const mz_grid *g, size_t off[3])
{
    size_t a = g->base_align ? g->base_align : 1, arr = 4 * g->cap;
    off[0] = 0;
    off[1] = (arr + a - 1) / a * a;
    off[2] = (off[1] + arr + a - 1) / a * a;
    return off[2] + arr <= 16 * g->cap;
}

/* (grid_internal.h) */
bool grid_resort_chosen(mz_grid *g, cl_mem key_source)
{
    if (g->resort_mode == 0 || g->no_resort || !g->in_order || g->own_scratch || g->n == 0)
        return false;
    cl_mem *spare = grid_spare_of(g, 16), keys2, vals2;
    size_t off[3];
    if (!*spare || !layout(g, off) || !grid_sort_copies(g, &keys2, &vals2) || keys2 == *spare ||
        key_source == *spare || key_source == keys2 || key_source == g->vals)
        return false;
    if (g->resort_mode == 2)
        return true;
    if (!(g->cl->type & CL_DEVICE_TYPE_GPU) || g->n < RESORT_MIN_PARTICLES)
        return false;
    if (2 * (size_t)g->moved_seen <= g->n)
        return true;
    return ++g->full_sorts >= RESORT_RETRY; /* grid_resort starts the count again */
}

/* (grid_internal.h) */
bool grid_resort(mz_grid *g, cl_mem key_source)
{
    size_t off[3];
    cl_mem keys2, vals2, spare = *grid_spare_of(g, 16), sub[3] = {NULL, NULL, NULL};
    bool ok = layout(g, off) && grid_sort_copies(g, &keys2, &vals2);
    for (int k = 0; ok && k < 3; k++) {
        cl_buffer_region r = {off[k], 4 * g->n};
        cl_int s;
        sub[k] = clCreateSubBuffer(spare, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &s);
        ok = cl_ok(s, "clCreateSubBuffer(grid resort)");
    }
    size_t gs = g->group_size, block = gs * g->items_per_item;
    size_t groups = (g->n + block - 1) / block;
    cl_uint n_u = (cl_uint)g->n, groups_u = (cl_uint)groups, zero = 0;
    /* The moved pairs are packed where an even number of passes leaves them sorted. */
    bool odd = grid_radix_passes(g->key_bits, g->radix_bits) % 2 != 0;
    cl_mem pack_k = odd ? keys2 : sub[1], pack_v = odd ? g->vals : sub[2];
    cl_mem pong_k = odd ? sub[1] : keys2, pong_v = odd ? sub[2] : g->vals;
    /* The one wait of a build: the moved ones' count sizes their radix passes (launches sized
     * for all particles cost an idle group's work in each of some thirty launches). */
    ok = ok &&
         KARGS(g->k_moved_sums, "moved_sums", A(n_u), A(g->desc), A(key_source), A(g->keys),
               A(g->hist)) &&
         grid_launch(g, g->k_moved_sums, groups * gs, gs, "moved_sums") &&
         KARGS(g->k_scan, "radix_scan", A(groups_u), A(zero), A(g->hist)) &&
         grid_launch(g, g->k_scan, gs, gs, "moved_sums scan") &&
         KARGS(g->k_moved_pack, "moved_pack", A(n_u), A(g->desc), A(key_source), A(g->keys),
               A(g->hist), A(sub[0]), A(pack_k), A(pack_v), A(g->moved)) &&
         grid_launch(g, g->k_moved_pack, groups * gs, gs, "moved_pack") &&
         cl_ok(clEnqueueReadBuffer(g->cl->queue, g->moved, CL_TRUE, 0, sizeof g->moved_seen,
                                   &g->moved_seen, 0, NULL, NULL),
               "clEnqueueReadBuffer(grid resort count)") &&
         grid_radix_sort(g, pack_k, pack_v, pong_k, pong_v, g->moved_seen, g->key_bits) &&
         KARGS(g->k_resort_merge, "resort_merge", A(n_u), A(g->moved), A(g->keys), A(sub[0]),
               A(sub[1]), A(sub[2]), A(keys2), A(g->vals)) &&
         grid_launch(g, g->k_resort_merge, (g->n + gs - 1) / gs * gs, gs, "resort_merge") &&
         grid_copy(g, keys2, g->keys, 4 * g->n, "resort keys");
    /* Enqueued launches hold their sub-buffers until they have run. */
    mz_cl_release_mems(sub, 3);
    g->full_sorts = 0;
    return ok;
}

void grid_no_resort(mz_grid *g) { g->no_resort = true; }

/* MIZU_GRID_RESORT: 0, 1 or 2 (grid.h); false after reporting another value. */
bool grid_resort_mode(int *mode)
{
    const char *env = getenv("MIZU_GRID_RESORT");
    *mode = 1;
    if (!env || !*env)
        return true;
    if (strcmp(env, "0") && strcmp(env, "1") && strcmp(env, "2")) {
        mz_error("MIZU_GRID_RESORT=%s: expected 0 (never), 1 (when it pays) or 2 (wherever it "
                 "can)", env);
        return false;
    }
    *mode = env[0] - '0';
    return true;
}
