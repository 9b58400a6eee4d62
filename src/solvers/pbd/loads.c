/* Forces on walls and colliders in the position-based solver (loads.h). */
#include "solvers/pbd/loads.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <stdlib.h>

int pbd_loads_init(pbd_loads *l, mz_sim *sim, cl_program program)
{
    const mz_scene *s = sim->scene;
    *l = (pbd_loads){0};
    l->n_loads = scene_load_count(s);
    size_t n = sim->cap ? sim->cap : 1;
    l->on = l->n_loads > 0;
    size_t per = l->on ? n : 1, nl = l->n_loads ? l->n_loads : 1;
    cl_int *owner = xcalloc(nl, sizeof *owner);
    cl_float4 *about = xcalloc(nl, sizeof *about);
    for (size_t k = 0; k < l->n_loads; k++) {
        mz_load_ref r = scene_load_ref(s, k);
        owner[k] = r.owner;
        about[k] = sim_float4(r.load->about);
    }
    int flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    l->touch = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 32 * per, NULL, "clCreateBuffer(touch)");
    l->wall_corr = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16 * per, NULL,
                                "clCreateBuffer(wall corrections)");
    l->owner = mz_cl_buffer(sim->cl, flags, 4 * nl, owner, "clCreateBuffer(loads)");
    l->about = mz_cl_buffer(sim->cl, flags, 16 * nl, about, "clCreateBuffer(loads)");
    free(owner);
    free(about);
    if (!l->touch || !l->wall_corr || !l->owner || !l->about)
        return -1;
    if (!l->on)
        return 0;
    cl_int err;
    l->k = clCreateKernel(program, "pbd_load_sums", &err);
    if (!cl_ok(err, "clCreateKernel(pbd_load_sums)"))
        return -1;
    sim->loads.sums = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 24 * nl, NULL,
                                   "clCreateBuffer(load sums)");
    return sim->loads.sums ? 0 : -1;
}

bool pbd_loads_begin(pbd_loads *l, mz_sim *sim, double dt)
{
    l->keep = l->on && sim_loads_due(sim, dt);
    if (!l->keep)
        return true;
    cl_float4 zero = {{0, 0, 0, 0}};
    return (sim->slabs || pbd_loads_clear_touch(l, sim)) &&
           cl_ok(clEnqueueFillBuffer(sim->cl->queue, l->wall_corr, &zero, sizeof zero, 0,
                                     16 * sim->n, 0, NULL, NULL),
                 "clEnqueueFillBuffer(wall corrections)");
}

bool pbd_loads_clear_touch(pbd_loads *l, mz_sim *sim)
{
    cl_float4 zero = {{0, 0, 0, 0}};
    return !l->keep || sim->n == 0 ||
           cl_ok(clEnqueueFillBuffer(sim->cl->queue, l->touch, &zero, sizeof zero, 0,
                                     32 * sim->n, 0, NULL, NULL),
                 "clEnqueueFillBuffer(touch)");
}

bool pbd_loads_sum(pbd_loads *l, mz_sim *sim, double dt)
{
    if (!l->keep)
        return true;
    cl_float inv_dt2 = (cl_float)(1.0 / (dt * dt));
    /* a rank: its owned particles (each particle's corrections counted once, by its owner) */
    size_t begin = 0, end = sim->n;
    if (sim->slabs)
        sim_owned(sim, &begin, &end);
    cl_uint first = (cl_uint)begin, n = (cl_uint)end;
    return KARGS(l->k, "pbd_load_sums", A(first), A(n), A(l->owner), A(l->about),
                 A(sim->inv_mass), A(sim->pred), A(l->touch), A(l->wall_corr), A(inv_dt2),
                 A(sim->loads.sums)) &&
           sim_launch_local(sim, l->k, 0, 256 * l->n_loads, 256, MZ_STAGE_OBSERVE,
                            "pbd_load_sums");
}

size_t pbd_loads_bytes(const mz_scene *s, size_t n)
{
    size_t n_loads = scene_load_count(s), per = n_loads ? (n ? n : 1) : 1;
    size_t nl = n_loads ? n_loads : 1;
    /* touch and wall corrections per particle (or stand-ins); owner, about and, measured, the
     * sums per load (pbd_loads_init) */
    return per * (32 + 16) + nl * (4 + 16) + (n_loads ? 24 * nl : 0);
}

void pbd_loads_release(pbd_loads *l)
{
    if (l->k)
        clReleaseKernel(l->k);
    cl_mem ms[] = {l->touch, l->wall_corr, l->owner, l->about};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    *l = (pbd_loads){0};
}
