/* The neighbour grid every particle solver shares (cell size = the solver's support radius h).
 *
 * grid_build(g, key_source):
 *   1. cell key per particle from key_source (float4 positions, device order): a dense cell
 *      index when the domain's grid fits (MZ_GRID_DENSE), else a spatial hash into a power-of-two
 *      table well above the particle count (MZ_GRID_HASHED). Cell coordinates are clamped into the
 *      grid (dense) and non-finite positions go to cell 0, so every particle has a valid key and
 *      neighbour sets stay exact (clamping never separates two points closer than h).
 *   2. stable LSD radix sort of (key, slot) on the device: equal keys keep their order. Its
 *      copies of keys and values are borrowed where they can be (grid_borrow_sort_copies, or
 *      the reorder scratch, dead until step 4). On GPUs at 2 × 10^6 particles and more, a
 *      build after a build of the same particles resorts instead (grid_resort.c): it sorts
 *      only the particles that left their cells and merges them with the rest, the same
 *      permutation at about half the cost.
 *   3. the cell tables: cell_words, a uint pair per 32 cells (their occupancy bits, and the
 *      number of non-empty cells before the word), and cell_first, the first slot of each
 *      non-empty cell in key order plus n at the end. Cell k's slots are first[r] ..
 *      first[r + 1] with r its rank among the non-empty cells (grid_cell_range,
 *      mz_cell_range in grid.clh): 2 bits a cell and 4 bytes a non-empty cell (at most one a
 *      particle) hold the ranges a start and an end table held in 8 bytes a cell.
 *   4. every registered per-particle buffer is permuted into sorted order; the handles are
 *      swapped with scratch buffers, so kernels must take buffer arguments after each build.
 *      One scratch buffer per element size serves all of them in turn (the buffer a gather
 *      frees is the next one's scratch): 20 bytes a particle however many are registered. A
 *      distributed rank's grid (MZ_GRID_SLABS) gives each its own, as the exchange lays out
 *      every buffer's new window at once (dist/slabs_exchange.c).
 * After a build, particle slot i is the i-th in key order; the `id` buffer (registered by sim)
 * maps slots back to particle ids for output.
 *
 * Neighbour queries in kernels: kernels/grid/grid.clh (MZ_NEIGHBOURS_BEGIN/END), which visits every
 * particle within h of a position exactly once, in a fixed order (deterministic sums); in a dense
 * grid a row's three cells are one range of slots (grid_keys_range on the host). */
#ifndef MZ_GRID_H
#define MZ_GRID_H
#include "device/cl_ctx.h"

#include <stdbool.h>

typedef enum mz_grid_mode {
    MZ_GRID_AUTO,   /* dense if it needs at most max(8 n, 2^22) cells, else hashed */
    MZ_GRID_DENSE,
    MZ_GRID_HASHED,
    /* Dense, for a rank of a distributed run: its table keys cells from layer slab_lo, and its
     * kernels, and the solver's (MZ_SLABS=1), count cells from there. The other modes build
     * kernels without that work, so a single run pays nothing for it. */
    MZ_GRID_SLABS,
} mz_grid_mode;

#define MZ_GRID_MAX_REGISTERED 16

/* Kernel-side description of the grid; layout matches mz_grid_desc in kernels/grid/grid.clh. */
typedef struct mz_grid_desc {
    cl_float4 origin; /* domain min */
    cl_int4 dims;     /* cells per axis (dense); unused when hashed */
    cl_float h, inv_h, h2;
    cl_uint table_mask; /* hashed: table size - 1 */
    cl_int hashed, dim;
    /* Dense grids: the table keys cells from layer slab_lo along the slab axis (the last one:
     * z in 3D, y in 2D) and has room for the whole grid; a rank's particles lie in its window
     * [slab_lo + 1, slab_hi) (from 0 when slab_lo is 0: dist/slabs.c). 0 and dims except on a
     * rank of a distributed run. */
    cl_int slab_lo, slab_hi;
} mz_grid_desc;

typedef struct mz_grid {
    mz_cl *cl;
    mz_grid_desc desc;
    size_t n;          /* particles */
    size_t cap;        /* particles the buffers hold (grid_set_count may change n up to it) */
    size_t built;      /* particles of the last build (whose cells the next build empties) */
    size_t cells;      /* dense cell count or hash table size */
    int key_bits;      /* bits the sort looks at */
    cl_mem keys, vals;  /* sort buffers (uint): the sorted pairs after a build */
    /* The sort's copies: its owner's (grid_borrow_sort_copies), else the reorder scratch of both
     * sizes, else its own, made on the first sort. */
    cl_mem keys_tmp, vals_tmp;
    cl_mem *lent_keys, *lent_vals;
    cl_mem cell_words;  /* 2 uints per 32 cells: occupancy bits, non-empty cells before */
    cl_mem cell_first;  /* cap + 1 uints (settled: the non-empty cells' + 1): first slots, then n */
    cl_mem word_sums;   /* the non-empty cells of each block of words (the build's scan) */
    size_t words;       /* cells / 32, rounded up */
    cl_mem hist;       /* radix histograms */
    size_t groups, group_size, items_per_item; /* sort geometry per device */
    int radix_bits;    /* key bits per sort pass */
    cl_program program;
    cl_kernel k_keys, k_count, k_scan, k_scatter, k_clear, k_gather4, k_gather16;
    cl_kernel k_cell_clear, k_marks, k_word_sums, k_word_bases, k_firsts, k_hist_sums, k_hist_bases;
    cl_kernel k_slab_keys, k_bounds, k_slab_segments, k_gather4_at, k_gather16_at;
    struct {
        cl_mem *buf;   /* the owner's handle: swapped with scratch after each build */
        cl_mem scratch; /* its own: MZ_GRID_SLABS grids only, else NULL */
        size_t elem;   /* 4 or 16 bytes */
        bool owner_only; /* grid_register_owned */
    } reg[MZ_GRID_MAX_REGISTERED];
    int n_reg;
    bool own_scratch;  /* MZ_GRID_SLABS: a scratch buffer per registered buffer */
    cl_mem spare4, spare16; /* otherwise: the scratch all buffers of that size share */
    cl_mem *lent4, *lent16; /* or its owner's buffer standing in for it (grid_borrow_scratch) */
    /* The resort (grid_resort.c): a build from the last one's keys, which sorts only the
     * particles that changed cells and merges them with the rest (the same permutation). */
    cl_kernel k_moved_sums, k_moved_pack, k_resort_merge;
    cl_mem moved;          /* 1 uint: how many changed cells in the resort */
    cl_uint moved_seen;    /* its read-back: the radix passes' count, the next build's choice */
    int resort_mode;       /* MIZU_GRID_RESORT: 0 never, 1 when it pays (default), 2 always */
    bool no_resort;        /* grid_no_resort */
    bool in_order;         /* the last build was grid_build's, of as many particles: its sorted
                            * keys are where a resort starts (slot i's particle had keys[i]
                            * where the key source is a registered buffer; else the resort
                            * finds more moved, and costs more, never another result) */
    unsigned full_sorts;   /* full sorts since the last resort (a retry after a few) */
    size_t base_align;     /* the device's sub-buffer alignment, bytes */
    bool settled;      /* grid_settle: never built again */
    bool indexed;      /* the last build was grid_index's: the buffers were not reordered */
    double last_build_ms; /* device time of the last build when the queue profiles, else 0 */
    /* Profiling queues: the last build's launches, until grid_collect_profile. */
    cl_event *events;
    const char **event_kernels; /* the kernel (or copy) each event timed */
    size_t n_events, cap_events;
} mz_grid;

/* Set up for n particles (and buffers for as many) in the box [dmin, dmax] with cell size h, in dim (2 or 3) dimensions.
 * 0, or -1 after reporting. */
int grid_create(mz_grid *g, mz_cl *cl, size_t n, double h, int dim, const double dmin[3],
                const double dmax[3], mz_grid_mode mode);
/* The cells (dense) or hash table entries a grid of MZ_GRID_AUTO gets for these arguments. */
size_t grid_cells_for(size_t n, double h, int dim, const double dmin[3], const double dmax[3]);
/* The same for a grid of the given mode (the slab window of MZ_GRID_SLABS aside). */
size_t grid_cells_in(size_t n, double h, int dim, const double dmin[3], const double dmax[3],
                     mz_grid_mode mode);
/* The description grid_create would give (no device needed): a distributed run plans its
 * slabs from it before any particle is built. 0, or -1 after reporting. */
int grid_describe(size_t n, double h, int dim, const double dmin[3], const double dmax[3],
                  mz_grid_mode mode, mz_grid_desc *desc);
/* Room for cap particles (no-op when there is): the sort buffers and every registered buffer
 * are replaced by larger ones, keeping the particles' data and the last build's keys; the
 * owners' handles change. 0, or -1 after reporting. */
int grid_reserve(mz_grid *g, size_t cap);
/* Permute *buf (n elements of elem = 4 or 16 bytes) with every build. */
int grid_register(mz_grid *g, cl_mem *buf, size_t elem);
/* The reorder scratch of elem bytes is to be *buf (cap elements), an owner's buffer whose contents
 * are dead whenever the grid builds (e.g. what a step writes before it reads): the grid swaps
 * that handle as its own and makes no scratch of that size. Before any grid_register of elem
 * bytes; not on MZ_GRID_SLABS grids. 0, or -1 after reporting. */
int grid_borrow_scratch(mz_grid *g, cl_mem *buf, size_t elem);
/* The sort's copies of keys and values are to be *keys and *vals (at least 4 · cap bytes each,
 * two buffers), an owner's buffers whose contents are dead whenever the grid sorts (grid_build,
 * grid_index, grid_sort): the grid makes none. Before the first sort; not on MZ_GRID_SLABS
 * grids. 0, or -1 after reporting. */
int grid_borrow_sort_copies(mz_grid *g, cl_mem *keys, cl_mem *vals);
/* As grid_register, for a buffer no neighbour loop reads (ids, bodies): a distributed run's
 * halo copies do not carry it (their values there are stale), only its owned particles. */
int grid_register_owned(mz_grid *g, cl_mem *buf, size_t elem);
/* Keys from key_source, sort, ranges, reorder. Enqueued on the device's queue, not waited for,
 * but for a resort's one read-back (grid_resort.c): the count of particles that changed
 * cells, which sizes their sort. */
int grid_build(mz_grid *g, cl_mem key_source);
/* The owner puts its particles in another order before every build (moving colliders' wall
 * particles, placed from their rest positions): the resort would find them all moved, so
 * every build sorts them from scratch. */
void grid_no_resort(mz_grid *g);
/* grid_build without the reorder: the cells' ranges are of sorted slots, and vals maps sorted
 * slot k to the particle's slot, vals[k] (the sort is stable, so a grid_build that follows
 * gives every cell the same particles in the same order). For what reads the particles as the
 * next build will order them without moving them (solvers/observe.c). */
int grid_index(mz_grid *g, cl_mem key_source);
/* Whether the builds reorder the buffer *buf (grid_register, grid_register_owned): if not,
 * after a build it is in the order before it, slot vals[k] for sorted slot k. */
bool grid_moves(const mz_grid *g, const cl_mem *buf);
/* For a grid built once and never again (static wall particles): what only a build needs —
 * keys, values, the sort's and the reorder's scratch — is released, and the first slots,
 * sized for the particles until now, are cut to the non-empty cells (and the end); the cell
 * tables and the registered buffers stay. Waits for the build. A later grid_build or
 * grid_reserve fails. 0, or -1 after reporting. */
int grid_settle(mz_grid *g);
/* The device memory a grid holds itself (not the registered buffers) for n particles, `cells`
 * cells (grid_cells_for) and n_reg registered buffers of elems[k] = 4 or 16 bytes, with the
 * larger histograms of the default geometries; lent:
 * MZ_GRID_LENT4 | MZ_GRID_LENT16 for the scratch sizes grid_borrow_scratch gave it, and
 * MZ_GRID_LENT_SORT when grid_borrow_sort_copies gave it the sort's copies. For the
 * solvers' device_bytes. */
#define MZ_GRID_LENT4 1
#define MZ_GRID_LENT16 2
#define MZ_GRID_LENT_SORT 4 /* grid_borrow_sort_copies */
size_t grid_device_bytes(size_t n, size_t cells, const size_t *elems, int n_reg, bool slabs,
                         int lent);
/* What a grid of `cells` cells holds after grid_settle, `occupied` of them non-empty. */
size_t grid_settled_bytes(size_t cells, size_t occupied);
/* The non-empty cells of a single run's grid of description d (grid_describe; `cells` its
 * cells or table size) for n positions (4 floats each) as cell_keys keys them: the size of a
 * settled grid's first slots, found on the host. */
size_t grid_occupied_cells(const mz_grid_desc *d, size_t cells, const float *pos, size_t n);
void grid_release(mz_grid *g);
/* Cell key's slots *lo .. *hi (0 .. 0 when empty) from copies of the cell tables on the host:
 * the rank arithmetic of mz_cell_range (grid.clh), for tests and anything reading them back. */
void grid_cell_range(const cl_uint *words, const cl_uint *first, cl_uint key, cl_uint *lo,
                     cl_uint *hi);
/* The slots of the cells with keys k0 .. k1 (k0 <= k1): one range, *lo .. *hi, since particles
 * are sorted by key; a dense grid's row of cells x − 1 .. x + 1 (mz_keys_range in grid.clh). */
void grid_keys_range(const cl_uint *words, const cl_uint *first, cl_uint k0, cl_uint k1,
                     cl_uint *lo, cl_uint *hi);
/* Once the queue has finished the last build (grid_build never waits): its summed device time
 * into last_build_ms, and its events released. No-op without profiling. */
void grid_collect_profile(mz_grid *g);

/* The stable radix sort alone (tests, benchmarks): sort n (key, value) uint pairs in place by the
 * low `bits` bits of the keys (n at most the grid's n). */
int grid_sort(mz_grid *g, cl_mem keys, cl_mem vals, size_t n, int bits);

/* For distributed runs (dist/slabs.c; grid_slabs.c but for grid_set_count and grid_gather),
 * all enqueued without waiting:
 * grid_set_count: the particle count of the next build, at most the capacity given at creation.
 * grid_slab_keys: keys[i] = the slab-axis cell coordinate of pos[begin + i], vals[i] = begin + i,
 *   for i < n (the coordinate grid_build's cell keys use, clamped into the grid).
 * grid_bounds: out[t] = the first index i < n with keys[i] >= targets[t] (keys ascending), or
 *   n; m targets.
 * grid_gather: every registered buffer permuted by vals (n elements: dst[i] = src[vals[i]]),
 *   the handles swapped with their scratch buffers, as a build does.
 * grid_slab_segments: as grid_slab_keys, the key being table[layer] (uint per layer).
 * grid_gather_at: dst[at_bytes + i·elem] = src[vals[from + i]] for i < n, elem 4 or 16 bytes
 *   (at_bytes a multiple of 4): one buffer's range, packed anywhere in dst. */
int grid_set_count(mz_grid *g, size_t n);
int grid_slab_keys(mz_grid *g, cl_mem pos, size_t begin, size_t n, cl_mem keys, cl_mem vals);
int grid_bounds(mz_grid *g, cl_mem keys, size_t n, cl_mem targets, size_t m, cl_mem out);
int grid_gather(mz_grid *g, cl_mem vals, size_t n);
int grid_slab_segments(mz_grid *g, cl_mem pos, size_t begin, size_t n, cl_mem table,
                       cl_mem keys, cl_mem vals);
int grid_gather_at(mz_grid *g, cl_mem src, size_t elem, cl_mem vals, size_t from, size_t n,
                   cl_mem dst, size_t at_bytes);

#endif
