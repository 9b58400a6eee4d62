/* The adaptive SPH solvers' |v|max and |a|max: per-group maxima on the device, their maximum
 * on the host (max is order-free: exact and deterministic). */
#include "solvers/sph/step_size.h"

#include "util/err.h"

#include <math.h>
#include <stdlib.h>

#define GPU_GROUPS 512

size_t sph_step_size_bytes(void)
{
    return 8 * GPU_GROUPS;
}

int sph_step_size_init(sph_step_size *s, mz_sim *sim)
{
    bool gpu = (sim->cl->type & CL_DEVICE_TYPE_GPU) != 0;
    s->local = gpu ? 256 : SPH_STEP_SIZE_CPU_LOCAL;
    while (s->local > sim->cl->max_wg) /* a power of two the device takes */
        s->local /= 2;
    s->max_groups = gpu ? GPU_GROUPS : 16;
    s->partial = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 8 * s->max_groups, NULL,
                              "clCreateBuffer(step size)");
    s->host = xcalloc(2 * s->max_groups, sizeof(float));
    return s->partial ? 0 : -1;
}

int sph_speed_accel_max(sph_step_size *s, mz_sim *sim, cl_kernel k, cl_mem vel, cl_mem a2,
                        size_t begin, size_t end, int stage, float *v2_max, float *a2_max)
{
    cl_uint end_u = (cl_uint)end;
    size_t groups = (end - begin + s->local - 1) / s->local;
    if (groups > s->max_groups)
        groups = s->max_groups;
    if (groups == 0) /* a rank with no particles still answers */
        groups = 1;
    bool ok = KARGS(k, "speed_accel_max", A(end_u), A(vel), A(a2), A(s->partial)) &&
              cl_ok(clSetKernelArg(k, 4, 8 * s->local, NULL),
                    "clSetKernelArg(speed_accel_max, scratch)") &&
              sim_launch_local(sim, k, begin, groups * s->local, s->local, stage,
                               "speed_accel_max") &&
              cl_ok(clEnqueueReadBuffer(sim->cl->queue, s->partial, CL_TRUE, 0, 8 * groups,
                                        s->host, 0, NULL, NULL),
                    "clEnqueueReadBuffer(step size)");
    if (!ok)
        return -1;
    float v2 = 0, a = 0;
    for (size_t g = 0; g < groups; g++) {
        v2 = fmaxf(v2, s->host[2 * g]);
        a = fmaxf(a, s->host[2 * g + 1]);
    }
    *v2_max = v2;
    *a2_max = a;
    return 0;
}

void sph_step_size_release(sph_step_size *s)
{
    if (s->partial)
        clReleaseMemObject(s->partial);
    free(s->host);
    *s = (sph_step_size){0};
}
