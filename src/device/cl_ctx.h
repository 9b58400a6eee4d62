/* device/: OpenCL and nothing of physics: device choice, context and queue (cl_ctx.c), kernel
 * programs embedded or from --kernel-dir (cl_prog.c), kernel arguments (kargs.c), and the
 * neighbour grid every particle solver shares (grid.c). May include: util/.
 *
 * OpenCL device choice, context and queue; every cl* failure is reported by name. */
#ifndef MZ_CL_CTX_H
#define MZ_CL_CTX_H
#include <CL/cl.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct mz_cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    int platform_index, device_index;
    cl_device_type type;
    char device_name[256], platform_name[256], driver_version[128], device_version[128];
    cl_ulong global_mem, max_alloc;
    cl_uint compute_units;
    size_t max_wg;     /* largest work-group the device takes */
    size_t wg;         /* work-group size mizu uses for 1D kernels; 0 lets the driver choose */
    bool profiling;    /* queue created with CL_QUEUE_PROFILING_ENABLE */
    /* Neighbour lists (kernels/grid/neighbour_list.clh), chosen by the device's kind, or by
     * MIZU_LIST_LAYOUT=rows|columns and MIZU_LIST_SUMS=walk|lists: */
    bool list_rows; /* by blocks of eight particles, their k-th entries side by side (every
                     * device), rather than entry k of all particles side by side */
    bool list_sums; /* a pass that writes the lists sums over them after its walk (GPUs) */
    /* WCSPH's fluid lists as masks of each row's slots (GPUs), rather than entries;
     * MIZU_LIST_FORMAT=masks|entries */
    bool list_masks;
    /* The SPH passes eight particles at a time (kernels/sph/sph_lanes.clh): CPUs, or
     * MIZU_SPH_LANES=8 or 1 */
    bool lanes;
    /* A dense grid walk looks its rows up before scanning them (kernels/grid/grid.clh,
     * mz_grid_rows_): CPUs, or MIZU_GRID_ROWS=first or each */
    bool rows_first;
    /* Correctly rounded division and square root in the kernels
     * (-cl-fp32-correctly-rounded-divide-sqrt; a CPU's always are, a GPU's by default are not):
     * the same bits on every such device. 1: every program, 0: none, -1 (MIZU_EXACT_DIVIDE
     * unset): the programs that ask for it (cl_prog_build); only where the device has it. */
    int exact_divide;
    bool divide_rounded; /* the device has it */
} mz_cl;

/* The enum's name for an OpenCL status, e.g. "CL_OUT_OF_RESOURCES". */
const char *cl_status_name(cl_int status);

/* True when status is CL_SUCCESS; otherwise reports "WHAT failed: CL_NAME (code)" and returns false. */
bool cl_ok(cl_int status, const char *what);

/* Open a device. spec: "cpu", "gpu", "P:D" (platform and device indices from `mizu devices`),
 * or NULL for $MIZU_DEVICE, then the first GPU, then the first CPU. Returns 0; -2 after
 * reporting a malformed spec (a usage error); -1 after reporting a missing device or a driver
 * failure. */
int mz_cl_open(mz_cl *cl, const char *spec, bool profiling);
void mz_cl_close(mz_cl *cl);
/* Under mpirun, the node-local rank k: "gpu" and the default then take the k-th GPU of the node
 * (modulo their number); "P:D" and "cpu" keep their meaning. */
void mz_cl_set_gpu_offset(int k);

/* `mizu devices`: every platform and device with its P:D index. Returns the device count. */
int mz_cl_list(FILE *out);

/* Round n up to a multiple of the work-group size (the global size of a 1D launch); 0 for 0. */
size_t mz_cl_global(const mz_cl *cl, size_t n);

/* Launch a 1D kernel over n work-items (kernels bounds-check against their own count); n = 0
 * launches nothing and sets *ev to NULL. */
bool mz_cl_run1d(mz_cl *cl, cl_kernel k, size_t n, cl_event *ev, const char *what);
/* Over work-items begin .. end − 1 (a global offset: get_global_id starts at begin, and the
 * kernel's bound is end). */
bool mz_cl_run_range(mz_cl *cl, cl_kernel k, size_t begin, size_t end, cl_event *ev,
                     const char *what);

cl_mem mz_cl_buffer(mz_cl *cl, cl_mem_flags flags, size_t bytes, void *host, const char *what);

/* The device memory that buffers made by mz_cl_buffer hold, in bytes: now, the most at any time
 * (since the start or mz_cl_memory_reset_peak), and how many buffers now. What the memory
 * estimate (sim_device_bytes) is tested against; MIZU_DEVICE_MEMORY=1 also writes every buffer
 * made and released to stderr. Pinned host memory (mz_cl_pinned) is not counted. */
typedef struct mz_cl_memory_use {
    size_t live, peak, buffers;
} mz_cl_memory_use;
mz_cl_memory_use mz_cl_memory(void);
void mz_cl_memory_reset_peak(void);

/* Release the kernels / buffers of an array that are not NULL (a solver's or the grid's own). */
void mz_cl_release_kernels(const cl_kernel *k, size_t n);
void mz_cl_release_mems(const cl_mem *m, size_t n);

/* Host memory the device copies to and from directly (pinned: a buffer made with
 * CL_MEM_ALLOC_HOST_PTR and mapped once, as NVIDIA's OpenCL guide advises; plain host memory on
 * PoCL). A pinned block of `bytes`, or plain malloc'd memory when the driver refuses (*holder
 * NULL then). Freed by mz_cl_unpin. */
void *mz_cl_pinned(mz_cl *cl, size_t bytes, cl_mem *holder);
void mz_cl_unpin(mz_cl *cl, cl_mem holder, void *p);
/* *p: pinned memory of at least `need` bytes, renewed (contents not kept) with a quarter more
 * when *cap is short. *p, or NULL when none could be had. */
void *mz_cl_pinned_room(mz_cl *cl, void **p, cl_mem *holder, size_t *cap, size_t need);

#endif
