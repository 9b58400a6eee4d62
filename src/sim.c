#include "sim.h"

#include "err.h"

#include <stdlib.h>
#include <string.h>

/* pos, pred, vel (float4 each), inv_mass, id, body. */
#define COMMON_BYTES_PER_PARTICLE (3 * 16 + 3 * 4)

const mz_solver *sim_solver_for(const mz_scene *scene)
{
    (void)scene; /* every solver so far is position based */
    return &mz_solver_pbd;
}

size_t sim_device_bytes(const mz_scene *scene, size_t n)
{
    return n * (COMMON_BYTES_PER_PARTICLE + sim_solver_for(scene)->extra_bytes_per_particle);
}

bool set_kernel_args(cl_kernel k, const char *name, const mz_karg *args, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        cl_int s = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].ptr);
        if (s != CL_SUCCESS) {
            mz_error("clSetKernelArg(%s, argument %zu) failed: %s (%d)", name, i,
                     cl_status_name(s), (int)s);
            return false;
        }
    }
    return true;
}

int sim_create(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p)
{
    memset(sim, 0, sizeof *sim);
    sim->cl = cl;
    sim->scene = scene;
    sim->solver = sim_solver_for(scene);
    sim->n = p->n;
    sim->n_u = (cl_uint)p->n;
    cl_mem_flags rw = CL_MEM_READ_WRITE;
    size_t n = p->n;
    sim->pos = mz_cl_buffer(cl, rw, 16 * n, p->pos, "clCreateBuffer(position)");
    sim->pred = mz_cl_buffer(cl, rw, 16 * n, p->pos, "clCreateBuffer(predicted position)");
    sim->vel = mz_cl_buffer(cl, rw, 16 * n, p->vel, "clCreateBuffer(velocity)");
    sim->inv_mass = mz_cl_buffer(cl, rw, 4 * n, p->inv_mass, "clCreateBuffer(inverse mass)");
    sim->id = mz_cl_buffer(cl, rw, 4 * n, p->id, "clCreateBuffer(id)");
    sim->body = mz_cl_buffer(cl, rw, 4 * n, p->body, "clCreateBuffer(body)");
    if (!sim->pos || !sim->pred || !sim->vel || !sim->inv_mass || !sim->id || !sim->body)
        return -1;
    sim->field_buf[MZ_FIELD_POSITION] = sim->pos;
    sim->field_buf[MZ_FIELD_VELOCITY] = sim->vel;
    return sim->solver->init(sim);
}

int sim_substep(mz_sim *sim, double dt)
{
    if (sim->solver->substep(sim, dt) != 0)
        return -1;
    sim->step++;
    sim->time += dt;
    return 0;
}

bool sim_launch(mz_sim *sim, cl_kernel k, size_t n, int stage, const char *kernel_name)
{
    cl_event ev = NULL;
    char what[96];
    snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", kernel_name);
    if (!mz_cl_run1d(sim->cl, k, n, sim->cl->profiling ? &ev : NULL, what))
        return false;
    if (ev) {
        if (sim->n_events == sim->cap_events) {
            sim->cap_events = sim->cap_events ? 2 * sim->cap_events : 64;
            sim->events = xrealloc(sim->events, sim->cap_events * sizeof *sim->events);
            sim->event_stage =
                xrealloc(sim->event_stage, sim->cap_events * sizeof *sim->event_stage);
        }
        sim->events[sim->n_events] = ev;
        sim->event_stage[sim->n_events++] = stage;
    }
    return true;
}

void sim_collect_profile(mz_sim *sim)
{
    for (size_t i = 0; i < sim->n_events; i++) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(sim->events[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                NULL);
        clGetEventProfilingInfo(sim->events[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        int s = sim->event_stage[i];
        if (s >= 0 && s < MZ_MAX_STAGES && t1 >= t0) {
            sim->stages[s].seconds += (double)(t1 - t0) * 1e-9;
            sim->stages[s].launches++;
        }
        clReleaseEvent(sim->events[i]);
    }
    sim->n_events = 0;
}

void sim_release(mz_sim *sim)
{
    if (sim->cl && sim->cl->queue)
        clFinish(sim->cl->queue);
    sim_collect_profile(sim);
    if (sim->solver && sim->solver->release)
        sim->solver->release(sim);
    cl_mem *bufs[] = {&sim->pos, &sim->pred, &sim->vel, &sim->inv_mass, &sim->id, &sim->body};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (*bufs[i])
            clReleaseMemObject(*bufs[i]);
    free(sim->events);
    free(sim->event_stage);
    memset(sim, 0, sizeof *sim);
}
