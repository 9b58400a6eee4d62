#include "solvers/sim.h"

#include "device/cl_prog.h"
#include "device/grid.h"
#include "dist/dist.h"
#include "dist/slabs.h"
#include "solvers/observe.h"
#include "scene/bodies.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* pos, pred, vel (float4 each), inv_mass, id, body. */
#define COMMON_BYTES_PER_PARTICLE (3 * 16 + 3 * 4)

const mz_solver *sim_solver_for(const mz_scene *scene)
{
    if (scene_solver(scene) == MZ_SOLVER_FLIP)
        return &mz_solver_flip;
    if (scene_solver(scene) == MZ_SOLVER_DFSPH)
        return &mz_solver_dfsph;
    return scene_is_sph(scene) ? &mz_solver_sph : &mz_solver_pbd;
}

cl_float4 sim_float4(const double v[3])
{
    return (cl_float4){{(float)v[0], (float)v[1], (float)v[2], 0.0f}};
}

mz_walls_arg sim_walls(const mz_scene *scene)
{
    const mz_boundary *b = &scene->domain.boundary;
    return (mz_walls_arg){sim_float4(scene->domain.min), sim_float4(scene->domain.max),
                          (float)b->stiffness, (float)b->damping, (float)b->acceleration_limit,
                          0.0f};
}

size_t sim_device_bytes(const mz_scene *scene, size_t n)
{
    size_t held, most = sim_solver_for(scene)->device_bytes(scene, n, &held);
    held += observe_device_bytes(scene);
    return n * COMMON_BYTES_PER_PARTICLE + (held > most ? held : most);
}

size_t sim_state_existing(const mz_state_part *all, size_t n, mz_state_part *parts, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++)
        if (all[i].host || *all[i].mem)
            parts[k++] = all[i];
    return k;
}

int sim_check_fits(const mz_cl *cl, const mz_scene *scene, size_t n)
{
    size_t need = sim_device_bytes(scene, n), largest = 16 * n; /* a float4 per particle */
    const char *what = "particle arrays need";
    const mz_solver *solver = sim_solver_for(scene);
    if (solver->largest_buffer) {
        const char *its = NULL;
        size_t bytes = solver->largest_buffer(scene, n, &its);
        if (bytes > largest) {
            largest = bytes;
            what = its;
        }
    }
    if (need > cl->global_mem)
        mz_error("the scene needs about %.3g GB of device memory for its %zu particles; %s has "
                 "%.3g GB. Use a coarser spacing or fewer particles, or a device with more memory "
                 "(mizu devices)",
                 (double)need / 1e9, n, cl->device_name, (double)cl->global_mem / 1e9);
    else if (largest > cl->max_alloc)
        mz_error("the scene's %s %.3g GB in one buffer; %s allocates at most %.3g GB in one "
                 "buffer. Use fewer particles or another device (mizu devices)",
                 what, (double)largest / 1e9, cl->device_name, (double)cl->max_alloc / 1e9);
    else if (largest / 4 > 0xFFFFFFFFu) /* the kernels count a buffer's words in 32 bits */
        mz_error("the scene's %s %.3g GB in one buffer, more than 2^32 words, the most the "
                 "kernels index. Use fewer particles (or several devices: mpirun)",
                 what, (double)largest / 1e9);
    else
        return 0;
    return -1;
}

bool sim_kernels_slabs(const mz_sim *sim)
{
    return sim->plan != NULL || sim->slabs != NULL;
}

static cl_program build_kernels(mz_sim *sim, const char *file, const char *const *names,
                                cl_kernel *const *out, bool exact)
{
    char defines[96];
    /* A distributed rank's grid holds a window of layers: its solver kernels query it so, and
     * so do the probes' (built after the solver's init, when the slabs are made). The gradient
     * correction only where a fluid asks for it, and the walls' friction the scene's (MZ_KGC_ON,
     * MZ_FRICTION_OF: kernels/sph/sph_kernels.clh). */
    const mz_scene *s = sim->scene;
    bool kgc = false;
    for (size_t f = 0; f < s->n_fluids; f++)
        kgc = kgc || s->fluids[f].gradient_correction;
    snprintf(defines, sizeof defines, "-DMZ_DIM=%d -DMZ_SLABS=%d -DMZ_KGC=%d -DMZ_FRICTION=%d%s",
             s->sim.dimensions, sim_kernels_slabs(sim), kgc, (int)s->domain.boundary.friction,
             sim_frame_spins(s) ? " -DMZ_SPIN" : "");
    cl_program p = cl_prog_build(sim->cl, file, defines, exact);
    bool ok = p != NULL;
    for (size_t i = 0; ok && names[i]; i++)
        ok = (*out[i] = cl_prog_kernel(p, names[i])) != NULL;
    if (!ok && p) {
        clReleaseProgram(p);
        p = NULL;
    }
    return p;
}

cl_program sim_build_kernels(mz_sim *sim, const char *file, const char *const *names,
                             cl_kernel *const *out)
{
    return build_kernels(sim, file, names, out, false);
}

cl_program sim_build_exact_kernels(mz_sim *sim, const char *file, const char *const *names,
                                   cl_kernel *const *out)
{
    return build_kernels(sim, file, names, out, true);
}

/* A buffer of cap elements of `elem` bytes holding the first n from host. */
static cl_mem upload(mz_cl *cl, size_t elem, size_t cap, size_t n, const void *host,
                     const char *what)
{
    if (cap == n)
        return mz_cl_buffer(cl, CL_MEM_READ_WRITE, elem * n, (void *)host, what);
    cl_mem b = mz_cl_buffer(cl, CL_MEM_READ_WRITE, elem * cap, NULL, what);
    if (b && n > 0 &&
        !cl_ok(clEnqueueWriteBuffer(cl->queue, b, CL_TRUE, 0, elem * n, host, 0, NULL, NULL),
               what)) {
        clReleaseMemObject(b);
        return NULL;
    }
    return b;
}

int sim_create_share(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p,
                     const struct mz_slab_plan *plan)
{
    memset(sim, 0, sizeof *sim);
    sim->cl = cl;
    sim->scene = scene;
    sim->solver = sim_solver_for(scene);
    sim->plan = plan;
    size_t n = p->n, cap = plan && plan->cap > n ? plan->cap : n;
    sim->n = n;
    sim->n_u = (cl_uint)n;
    sim->cap = cap;
    sim->n_total = p->n_total;
    sim->pos = upload(cl, 16, cap, n, p->pos, "clCreateBuffer(position)");
    sim->pred = upload(cl, 16, cap, n, p->pos, "clCreateBuffer(predicted position)");
    sim->vel = upload(cl, 16, cap, n, p->vel, "clCreateBuffer(velocity)");
    sim->inv_mass = upload(cl, 4, cap, n, p->inv_mass, "clCreateBuffer(inverse mass)");
    sim->id = upload(cl, 4, cap, n, p->id, "clCreateBuffer(id)");
    sim->body = upload(cl, 4, cap, n, p->body, "clCreateBuffer(body)");
    if (!sim->pos || !sim->pred || !sim->vel || !sim->inv_mass || !sim->id || !sim->body)
        return -1;
    sim->field[MZ_FIELD_POSITION] = &sim->pos;
    sim->field[MZ_FIELD_VELOCITY] = &sim->vel;
    sim->parts = p;
    int rc = sim->solver->init(sim);
    sim->parts = NULL;
    sim->plan = NULL;
    if (rc == 0 && scene->n_probes + scene->n_gauges + scene_load_count(scene) +
                           scene_pose_count(scene) > 0) {
        sim->obs = xcalloc(1, sizeof *sim->obs);
        rc = observe_create(sim->obs, sim);
    }
    return rc;
}

int sim_create(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p)
{
    return sim_create_share(sim, cl, scene, p, NULL);
}

int sim_plan_slabs(const mz_scene *scene, struct mz_slab_plan *plan)
{
    const mz_solver *sv = sim_solver_for(scene);
    double h;
    int halo;
    if (!sv->slab_geometry) {
        mz_error("the %s solver does not run distributed", sv->name);
        return -1;
    }
    sv->slab_geometry(scene, &h, &halo);
    return slabs_plan(plan, scene, h, halo);
}

bool sim_loads_due(const mz_sim *sim, double dt)
{
    return sim->obs && observe_loads_due(sim->obs, sim->time, sim->time + dt);
}

void sim_count_step(mz_sim *sim, double dt)
{
    double t0 = sim->time;
    sim->dt_min = sim->step ? fmin(sim->dt_min, dt) : dt;
    sim->dt_max = sim->step ? fmax(sim->dt_max, dt) : dt;
    sim->step++;
    sim->time += dt;
    sim->frame_steps++;
    sim->frame_time += dt;
    if (sim->obs)
        observe_step(sim->obs, sim, t0);
}

void sim_grid_built(mz_sim *sim)
{
    if (sim->obs)
        observe_after_build(sim->obs, sim);
}

bool sim_frame_left(const mz_sim *sim, double frame_dt)
{
    return frame_dt - sim->frame_time > 1e-9 * frame_dt;
}

double sim_frame_step(const mz_sim *sim, double frame_dt, double want)
{
    double left = frame_dt - sim->frame_time;
    if (want >= left)
        return left;
    return left - want < 0.25 * want ? 0.5 * left : want;
}

int sim_substep(mz_sim *sim, double dt)
{
    if (sim->solver->substep(sim, dt) != 0)
        return -1;
    sim_count_step(sim, dt);
    return 0;
}

bool sim_stop_here(mz_sim *sim) { return pace_step(&sim->pace, sim->cl->queue); }

int sim_fixed_steps(mz_sim *sim, double frame_dt)
{
    int k = scene_steps_per_frame(sim->scene);
    while (sim->frame_steps < k) {
        if (sim_substep(sim, frame_dt / k) != 0)
            return -1;
        if (sim->frame_steps < k && sim_stop_here(sim))
            return 1;
    }
    return 0;
}

int sim_advance_frame(mz_sim *sim, double frame_dt)
{
    int rc = sim->solver->advance ? sim->solver->advance(sim, frame_dt)
                                  : sim_fixed_steps(sim, frame_dt);
    if (rc == 0) {
        sim->frame_steps = 0;
        sim->frame_time = 0;
    }
    return rc;
}

const char *sim_check_progress(const mz_scene *scene, long frame_steps, double frame_time)
{
    double frame_dt = scene_frame_dt(scene);
    if (frame_steps < 0 || !isfinite(frame_time) || frame_time < 0 || frame_time >= frame_dt ||
        (frame_steps == 0) != (frame_time == 0))
        return "the progress into the frame is out of range";
    if (scene_is_sph(scene) && scene->sim.adaptive)
        return NULL;
    /* Fixed steps: the time must be exactly what frame_steps steps add up to. */
    int k = scene_steps_per_frame(scene);
    double t = 0;
    for (long i = 0; i < frame_steps && i < k; i++)
        t += frame_dt / k;
    return frame_steps < k && t == frame_time ? NULL
                                              : "the progress into the frame is not a step boundary";
}

/* The kernel table's entry for a kernel launched in a stage (made on its first launch), or -1
 * when the table is full. */
static int kernel_stat(mz_sim *sim, const char *name, int stage)
{
    for (int i = 0; i < sim->n_kernels; i++)
        if (sim->kernels[i].stage == stage && strncmp(sim->kernels[i].name, name,
                                                      sizeof sim->kernels[i].name - 1) == 0)
            return i;
    if (sim->n_kernels == MZ_MAX_KERNEL_STATS)
        return -1;
    mz_kernel_stat *k = &sim->kernels[sim->n_kernels];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->stage = stage;
    return sim->n_kernels++;
}

static void keep_event(mz_sim *sim, cl_event ev, int stage, const char *kernel_name)
{
    if (ev) {
        if (sim->n_events == sim->cap_events) {
            sim->cap_events = sim->cap_events ? 2 * sim->cap_events : 64;
            sim->events = xrealloc(sim->events, sim->cap_events * sizeof *sim->events);
            sim->event_stage =
                xrealloc(sim->event_stage, sim->cap_events * sizeof *sim->event_stage);
            sim->event_kernel =
                xrealloc(sim->event_kernel, sim->cap_events * sizeof *sim->event_kernel);
        }
        sim->events[sim->n_events] = ev;
        sim->event_kernel[sim->n_events] = kernel_stat(sim, kernel_name, stage);
        sim->event_stage[sim->n_events++] = stage;
    }
}

bool sim_launch(mz_sim *sim, cl_kernel k, size_t n, int stage, const char *kernel_name)
{
    return sim_launch_range(sim, k, 0, n, stage, kernel_name);
}

bool sim_launch_local(mz_sim *sim, cl_kernel k, size_t offset, size_t global, size_t local,
                      int stage, const char *kernel_name)
{
    cl_event ev = NULL;
    char what[96];
    snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", kernel_name);
    if (!cl_ok(clEnqueueNDRangeKernel(sim->cl->queue, k, 1, offset ? &offset : NULL, &global,
                                      local ? &local : NULL, 0, NULL,
                                      sim->cl->profiling ? &ev : NULL),
               what))
        return false;
    keep_event(sim, ev, stage, kernel_name);
    return true;
}

bool sim_launch_range(mz_sim *sim, cl_kernel k, size_t begin, size_t end, int stage,
                      const char *kernel_name)
{
    cl_event ev = NULL;
    char what[96];
    snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", kernel_name);
    if (!mz_cl_run_range(sim->cl, k, begin, end, sim->cl->profiling ? &ev : NULL, what))
        return false;
    keep_event(sim, ev, stage, kernel_name);
    return true;
}

void sim_ring(const mz_sim *sim, int ring, size_t *begin, size_t *end)
{
    if (!sim->slabs) {
        *begin = 0;
        *end = sim->n;
        return;
    }
    *begin = sim->slabs->ring_begin[ring];
    *end = sim->slabs->ring_end[ring];
}

void sim_owned(const mz_sim *sim, size_t *begin, size_t *end) { sim_ring(sim, 0, begin, end); }

void sim_set_count(mz_sim *sim, size_t n)
{
    sim->n = n;
    sim->n_u = (cl_uint)n;
}

void sim_profile_grid(mz_sim *sim, struct mz_grid *g, int stage)
{
    if (!sim->cl->profiling)
        return;
    clFinish(sim->cl->queue);
    grid_collect_profile(g);
    sim->stages[stage].seconds += 1e-3 * g->last_build_ms;
    sim->stages[stage].launches++;
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
            if (sim->event_kernel[i] >= 0) {
                mz_stage_stat *k = &sim->kernels[sim->event_kernel[i]].t;
                k->seconds += (double)(t1 - t0) * 1e-9;
                k->launches++;
            }
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
    if (sim->obs) {
        observe_release(sim->obs, sim->cl);
        free(sim->obs);
    }
    if (sim->solver && sim->solver->release)
        sim->solver->release(sim);
    cl_mem *bufs[] = {&sim->pos,         &sim->pred,         &sim->vel,
                      &sim->inv_mass,    &sim->id,           &sim->body,
                      &sim->loads.at,    &sim->loads.force,  &sim->loads.first,
                      &sim->loads.count, &sim->loads.sums};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (*bufs[i])
            clReleaseMemObject(*bufs[i]);
    free(sim->events);
    free(sim->event_stage);
    free(sim->event_kernel);
    pace_release(&sim->pace);
    memset(sim, 0, sizeof *sim);
}
