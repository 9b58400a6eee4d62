#include "device/cl_ctx.h"

#include "util/err.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const char *cl_status_name(cl_int s)
{
    switch (s) {
#define N(x) case x: return #x;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP) N(CL_IMAGE_FORMAT_MISMATCH)
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE) N(CL_MAP_FAILURE)
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET) N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    N(CL_COMPILE_PROGRAM_FAILURE) N(CL_LINKER_NOT_AVAILABLE) N(CL_LINK_PROGRAM_FAILURE)
    N(CL_DEVICE_PARTITION_FAILED) N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    N(CL_INVALID_VALUE) N(CL_INVALID_DEVICE_TYPE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE)
    N(CL_INVALID_CONTEXT) N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE)
    N(CL_INVALID_HOST_PTR) N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    N(CL_INVALID_IMAGE_SIZE) N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY)
    N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE)
    N(CL_INVALID_KERNEL_NAME) N(CL_INVALID_KERNEL_DEFINITION) N(CL_INVALID_KERNEL)
    N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST)
    N(CL_INVALID_EVENT) N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT)
    N(CL_INVALID_BUFFER_SIZE) N(CL_INVALID_MIP_LEVEL) N(CL_INVALID_GLOBAL_WORK_SIZE)
    N(CL_INVALID_PROPERTY) N(CL_INVALID_IMAGE_DESCRIPTOR) N(CL_INVALID_COMPILER_OPTIONS)
    N(CL_INVALID_LINKER_OPTIONS) N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL status";
    }
}

bool cl_ok(cl_int s, const char *what)
{
    if (s == CL_SUCCESS)
        return true;
    mz_error("%s failed: %s (%d)", what, cl_status_name(s), (int)s);
    return false;
}

/* Platform and device lists; the ICD loader says CL_PLATFORM_NOT_FOUND_KHR when none is installed. */
static cl_uint get_platforms(cl_platform_id **out)
{
    cl_uint n = 0;
    cl_int s = clGetPlatformIDs(0, NULL, &n);
    if (s != CL_SUCCESS || n == 0) {
        *out = NULL;
        return 0;
    }
    *out = xcalloc(n, sizeof **out);
    if (clGetPlatformIDs(n, *out, NULL) != CL_SUCCESS)
        n = 0;
    return n;
}

static cl_uint get_devices(cl_platform_id p, cl_device_id **out)
{
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0) {
        *out = NULL;
        return 0;
    }
    *out = xcalloc(n, sizeof **out);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, *out, NULL) != CL_SUCCESS)
        n = 0;
    return n;
}

static cl_device_type device_type(cl_device_id d)
{
    cl_device_type t = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    return t;
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU) return "gpu";
    if (t & CL_DEVICE_TYPE_CPU) return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

/* Under mpirun: the node-local rank, so that "gpu" and the default take the k-th GPU. */
static int gpu_offset;

void mz_cl_set_gpu_offset(int k) { gpu_offset = k > 0 ? k : 0; }

/* How many devices of a type there are (all platforms). */
static int count_devices(cl_device_type wanted)
{
    cl_platform_id *plats;
    cl_uint np = get_platforms(&plats);
    int count = 0;
    for (cl_uint pi = 0; pi < np; pi++) {
        cl_device_id *devs;
        cl_uint nd = get_devices(plats[pi], &devs);
        for (cl_uint di = 0; di < nd; di++)
            count += (device_type(devs[di]) & wanted) != 0;
        free(devs);
    }
    free(plats);
    return count;
}

/* Find a device: wanted = CPU/GPU type (the first match; for GPUs the gpu_offset-th, modulo
 * their number), or explicit indices. */
static bool find_device(cl_device_type wanted, int pi_want, int di_want, mz_cl *cl)
{
    cl_platform_id *plats;
    cl_uint np = get_platforms(&plats);
    bool found = false;
    int skip = 0;
    if (wanted == CL_DEVICE_TYPE_GPU && gpu_offset > 0) {
        int gpus = count_devices(CL_DEVICE_TYPE_GPU);
        skip = gpus > 0 ? gpu_offset % gpus : 0;
    }
    for (cl_uint pi = 0; pi < np && !found; pi++) {
        cl_device_id *devs;
        cl_uint nd = get_devices(plats[pi], &devs);
        for (cl_uint di = 0; di < nd && !found; di++) {
            bool match = wanted ? (device_type(devs[di]) & wanted) != 0
                                : ((int)pi == pi_want && (int)di == di_want);
            if (match && wanted && skip > 0) {
                skip--;
                continue;
            }
            if (match) {
                cl->platform = plats[pi];
                cl->device = devs[di];
                cl->platform_index = (int)pi;
                cl->device_index = (int)di;
                found = true;
            }
        }
        free(devs);
    }
    free(plats);
    return found;
}

static int choose_device(mz_cl *cl, const char *spec)
{
    const char *origin = "--device";
    if (!spec || !*spec) {
        spec = getenv("MIZU_DEVICE");
        origin = "MIZU_DEVICE";
    }
    if (spec && *spec) {
        int p, d;
        char tail;
        if (!strcmp(spec, "cpu") || !strcmp(spec, "gpu")) {
            cl_device_type t = spec[0] == 'c' ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU;
            if (find_device(t, 0, 0, cl))
                return 0;
            mz_error("%s=%s: no OpenCL %s device found (see `mizu devices`)", origin, spec,
                     spec);
            return -1;
        }
        if (sscanf(spec, "%d:%d%c", &p, &d, &tail) == 2 && p >= 0 && d >= 0) {
            if (find_device(0, p, d, cl))
                return 0;
            mz_error("%s=%s: no device %d on platform %d (see `mizu devices`)", origin, spec, d,
                     p);
            return -1;
        }
        mz_error("%s=%s: expected cpu, gpu or P:D (platform:device, see `mizu devices`)",
                 origin, spec);
        return -2;
    }
    if (find_device(CL_DEVICE_TYPE_GPU, 0, 0, cl) || find_device(CL_DEVICE_TYPE_CPU, 0, 0, cl))
        return 0;
    mz_error("no OpenCL device found: install PoCL (scripts/install-deps.sh) or a GPU driver");
    return -1;
}

/* A tuning variable's choice: yes or no by name, else (unset or neither) the default. */
static bool env_choice(const char *name, const char *yes, const char *no, bool dflt)
{
    const char *v = getenv(name);
    if (v && strcmp(v, yes) == 0)
        return true;
    if (v && strcmp(v, no) == 0)
        return false;
    return dflt;
}

int mz_cl_open(mz_cl *cl, const char *spec, bool profiling)
{
    memset(cl, 0, sizeof *cl);
    int chosen = choose_device(cl, spec);
    if (chosen != 0)
        return chosen;
    cl_device_id d = cl->device;
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof cl->device_name, cl->device_name, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof cl->driver_version, cl->driver_version, NULL);
    clGetDeviceInfo(d, CL_DEVICE_VERSION, sizeof cl->device_version, cl->device_version, NULL);
    clGetPlatformInfo(cl->platform, CL_PLATFORM_NAME, sizeof cl->platform_name,
                      cl->platform_name, NULL);
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof cl->global_mem, &cl->global_mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof cl->max_alloc, &cl->max_alloc, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cl->compute_units,
                    &cl->compute_units, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof cl->max_wg, &cl->max_wg, NULL);
    cl->type = device_type(d);
    /* GPUs want full, aligned groups. CPUs too: left to choose, PoCL takes a divisor of the
     * global size (6,859 = 19^3 particles: 19 groups of 361, which two cores split 10 to 9;
     * 1,126 cells: one group, one core), so groups of 64, a multiple of the lanes' 8: the
     * peer's dam break 5% faster with either solver, the same bits (docs/benchmarks.md). */
    size_t wg = (cl->type & CL_DEVICE_TYPE_GPU) ? 256 : 64;
    cl->wg = cl->max_wg < wg ? cl->max_wg : wg;
    cl->profiling = profiling;
    bool cpu = (cl->type & CL_DEVICE_TYPE_CPU) != 0;
    /* Rows on GPUs too: DFSPH's solves read them 11% faster there than columns (an H200 at
     * 10^7: 0.83 → 0.74 ns a particle-step a solve; WCSPH's two passes the same), whose entry
     * k lies a whole particle count from entry k + 1 (docs/benchmarks.md, session 26). */
    cl->list_rows = env_choice("MIZU_LIST_LAYOUT", "rows", "columns", true);
    cl->list_sums = env_choice("MIZU_LIST_SUMS", "lists", "walk", !cpu);
    /* Masks on GPUs: WCSPH's density pass stores a row of them when its scan ends, where entries
     * are stored as each work-item finds them, scattered (an H100 at 10^7: the density pass
     * 0.48 → 0.33 ns a particle-step, the forces 0.31 → 0.35, docs/benchmarks.md, session
     * 28); CPUs keep entries, which their eight lanes read as vectors. */
    cl->list_masks = env_choice("MIZU_LIST_FORMAT", "masks", "entries", !cpu);
    cl->lanes = env_choice("MIZU_SPH_LANES", "8", "1", cpu);
    /* A walk's rows looked up all at once: the count pass 18% faster on PoCL, 3% slower on an
     * H100 (docs/benchmarks.md, session 27). */
    cl->rows_first = env_choice("MIZU_GRID_ROWS", "first", "each", cpu);
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    cl->divide_rounded = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    const char *exact = getenv("MIZU_EXACT_DIVIDE");
    cl->exact_divide = exact && !strcmp(exact, "1") ? 1 : exact && !strcmp(exact, "0") ? 0 : -1;

    cl_int s;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl->platform,
                                     0};
    cl->ctx = clCreateContext(props, 1, &d, NULL, NULL, &s);
    if (!cl_ok(s, "clCreateContext"))
        return -1;
    cl->queue = clCreateCommandQueue(cl->ctx, d, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &s);
    if (!cl_ok(s, "clCreateCommandQueue")) {
        clReleaseContext(cl->ctx);
        cl->ctx = NULL;
        return -1;
    }
    return 0;
}

void mz_cl_close(mz_cl *cl)
{
    const char *env = getenv("MIZU_DEVICE_MEMORY");
    if (cl->ctx && env && strcmp(env, "1") == 0) {
        mz_cl_memory_use u = mz_cl_memory();
        fprintf(stderr, "mizu: device memory: at most %zu bytes held; %zu in %zu buffers still\n",
                u.peak, u.live, u.buffers);
    }
    if (cl->queue) {
        clFinish(cl->queue);
        clReleaseCommandQueue(cl->queue);
    }
    if (cl->ctx)
        clReleaseContext(cl->ctx);
    cl->queue = NULL;
    cl->ctx = NULL;
}

int mz_cl_list(FILE *out)
{
    cl_platform_id *plats;
    cl_uint np = get_platforms(&plats);
    int count = 0;
    for (cl_uint pi = 0; pi < np; pi++) {
        char pname[256] = "", pver[256] = "";
        clGetPlatformInfo(plats[pi], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VERSION, sizeof pver, pver, NULL);
        fprintf(out, "platform %u: %s (%s)\n", pi, pname, pver);
        cl_device_id *devs;
        cl_uint nd = get_devices(plats[pi], &devs);
        for (cl_uint di = 0; di < nd; di++) {
            char name[256] = "", cver[128] = "";
            cl_ulong mem = 0;
            cl_uint cu = 0;
            clGetDeviceInfo(devs[di], CL_DEVICE_NAME, sizeof name, name, NULL);
            clGetDeviceInfo(devs[di], CL_DEVICE_OPENCL_C_VERSION, sizeof cver, cver, NULL);
            clGetDeviceInfo(devs[di], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            clGetDeviceInfo(devs[di], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            fprintf(out, "  %u:%u  %-4s %s, %u compute units, %.1f GiB, %s\n", pi, di,
                    type_name(device_type(devs[di])), name, cu,
                    (double)mem / (1024.0 * 1024.0 * 1024.0), cver);
            count++;
        }
        free(devs);
    }
    free(plats);
    if (count == 0)
        fprintf(out, "no OpenCL devices found (install PoCL: scripts/install-deps.sh)\n");
    return count;
}

size_t mz_cl_global(const mz_cl *cl, size_t n)
{
    if (!cl->wg || n == 0)
        return n;
    return (n + cl->wg - 1) / cl->wg * cl->wg;
}

bool mz_cl_run1d(mz_cl *cl, cl_kernel k, size_t n, cl_event *ev, const char *what)
{
    return mz_cl_run_range(cl, k, 0, n, ev, what);
}

bool mz_cl_run_range(mz_cl *cl, cl_kernel k, size_t begin, size_t end, cl_event *ev,
                     const char *what)
{
    if (end <= begin) { /* nothing to do; OpenCL rejects an empty launch */
        if (ev)
            *ev = NULL;
        return true;
    }
    size_t global = mz_cl_global(cl, end - begin);
    size_t local = cl->wg;
    cl_int s = clEnqueueNDRangeKernel(cl->queue, k, 1, begin ? &begin : NULL, &global,
                                      local ? &local : NULL, 0, NULL, ev);
    return cl_ok(s, what);
}

/* Device memory held by the buffers mz_cl_buffer made: each buffer's size is counted when it is
 * made and taken off when OpenCL destroys it (a destructor callback, which the driver may call
 * from its own thread: hence atomics). */
static atomic_size_t mem_live, mem_peak, mem_buffers;

typedef struct mem_record {
    size_t bytes;
    bool log;
    char what[56];
} mem_record;

static void CL_CALLBACK mem_released(cl_mem m, void *user)
{
    (void)m;
    mem_record *r = user;
    atomic_fetch_sub(&mem_live, r->bytes);
    atomic_fetch_sub(&mem_buffers, 1);
    if (r->log)
        fprintf(stderr, "mizu: device memory -%zu %s\n", r->bytes, r->what);
    free(r);
}

static void mem_count(cl_mem m, size_t bytes, const char *what)
{
    const char *env = getenv("MIZU_DEVICE_MEMORY");
    mem_record *r = xmalloc(sizeof *r);
    r->bytes = bytes;
    r->log = env && strcmp(env, "1") == 0;
    snprintf(r->what, sizeof r->what, "%s", what ? what : "?");
    size_t live = atomic_fetch_add(&mem_live, bytes) + bytes;
    atomic_fetch_add(&mem_buffers, 1);
    size_t peak = atomic_load(&mem_peak);
    while (live > peak && !atomic_compare_exchange_weak(&mem_peak, &peak, live))
        ;
    if (r->log)
        fprintf(stderr, "mizu: device memory +%zu %s (%zu held)\n", bytes, r->what, live);
    if (clSetMemObjectDestructorCallback(m, mem_released, r) != CL_SUCCESS) {
        atomic_fetch_sub(&mem_live, bytes); /* cannot follow it: count it not at all */
        atomic_fetch_sub(&mem_buffers, 1);
        free(r);
    }
}

mz_cl_memory_use mz_cl_memory(void)
{
    return (mz_cl_memory_use){atomic_load(&mem_live), atomic_load(&mem_peak),
                              atomic_load(&mem_buffers)};
}

void mz_cl_memory_reset_peak(void) { atomic_store(&mem_peak, atomic_load(&mem_live)); }

cl_mem mz_cl_buffer(mz_cl *cl, cl_mem_flags flags, size_t bytes, void *host, const char *what)
{
    cl_int s;
    bytes = bytes ? bytes : 16;
    cl_mem m = clCreateBuffer(cl->ctx, flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes, host,
                              &s);
    if (!cl_ok(s, what))
        return NULL;
    mem_count(m, bytes, what);
    return m;
}

void *mz_cl_pinned(mz_cl *cl, size_t bytes, cl_mem *holder)
{
    cl_int st;
    bytes = bytes ? bytes : 16;
    *holder = clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &st);
    void *p = st == CL_SUCCESS ? clEnqueueMapBuffer(cl->queue, *holder, CL_TRUE,
                                                    CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                                    NULL, NULL, &st)
                               : NULL;
    if (!p || st != CL_SUCCESS) { /* not fatal: pageable memory copies too, only slower */
        if (*holder)
            clReleaseMemObject(*holder);
        *holder = NULL;
        return xmalloc(bytes);
    }
    return p;
}

void mz_cl_unpin(mz_cl *cl, cl_mem holder, void *p)
{
    if (!holder) {
        free(p);
        return;
    }
    cl_event ev = NULL;
    if (clEnqueueUnmapMemObject(cl->queue, holder, p, 0, NULL, &ev) == CL_SUCCESS && ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clReleaseMemObject(holder);
}

void *mz_cl_pinned_room(mz_cl *cl, void **p, cl_mem *holder, size_t *cap, size_t need)
{
    if (need > *cap || !*p) {
        if (*p)
            mz_cl_unpin(cl, *holder, *p);
        *cap = need + need / 4;
        *p = mz_cl_pinned(cl, *cap, holder);
    }
    return *p;
}

void mz_cl_release_kernels(const cl_kernel *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (k[i])
            clReleaseKernel(k[i]);
}

void mz_cl_release_mems(const cl_mem *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
}
