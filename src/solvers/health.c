/* Blow-up detection (health.h; kernels/common/health.cl). */
#include "solvers/health.h"

#include "build/build.h"
#include "dist/dist.h"
#include "scene/bodies.h"
#include "util/err.h"

#include <math.h>
#include <string.h>

double health_speed_bound(const mz_scene *s, const mz_particles *p)
{
    if (s->sim.max_speed > 0)
        return s->sim.max_speed;
    int dim = s->sim.dimensions;
    double diag2 = 0, g2 = 0, v2 = 0;
    for (int a = 0; a < dim; a++) {
        double d = s->domain.max[a] - s->domain.min[a];
        diag2 += d * d;
        g2 += s->sim.gravity[a] * s->sim.gravity[a];
    }
    for (size_t i = 0; i < p->n; i++) {
        const float *u = &p->vel[4 * i];
        v2 = fmax(v2, (double)u[0] * u[0] + (double)u[1] * u[1] + (double)u[2] * u[2]);
    }
    v2 = dist_max_double(v2); /* a distributed rank holds its share: every rank agrees */
    /* A moving domain adds its own speed, and its acceleration to the fall's. */
    double fs, fa;
    scene_frame_extremes(s, &fs, &fa);
    double fall = sqrt(2.0 * (sqrt(g2) + fa) * sqrt(diag2)) + fs;
    double c0 = scene_is_sph(s) ? scene_speed_of_sound(s) : 0.0;
    return 10.0 * fmax(fmax(fall, sqrt(v2)), fmax(c0, 1.0));
}

int health_init(mz_health *h, mz_sim *sim, double max_speed)
{
    memset(h, 0, sizeof *h);
    h->max_speed = max_speed;
    static const char *const names[] = {"health_scan", "health_detail", NULL};
    cl_kernel *const kernels[] = {&h->scan, &h->detail};
    h->program = sim_build_kernels(sim, "common/health.cl", names, kernels);
    h->worst = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, sizeof(cl_uint), NULL,
                            "clCreateBuffer(health)");
    h->out = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, sizeof h->out_host, NULL,
                          "clCreateBuffer(health detail)");
    return h->program && h->worst && h->out ? 0 : -1;
}

bool health_enqueue(mz_health *h, mz_sim *sim, long frame)
{
    cl_command_queue q = sim->cl->queue;
    cl_uint none = CL_UINT_MAX;
    cl_float max_speed = (cl_float)fmin(h->max_speed, (double)CL_FLT_MAX);
    size_t begin, end; /* the particles this rank owns */
    sim_owned(sim, &begin, &end);
    cl_uint end_u = (cl_uint)end;
    bool ok = cl_ok(clEnqueueFillBuffer(q, h->worst, &none, sizeof none, 0, sizeof none, 0, NULL,
                                        NULL),
                    "clEnqueueFillBuffer(health)") &&
              KARGS(h->scan, "health_scan", A(end_u), A(max_speed), A(sim->pos), A(sim->vel),
                    A(sim->id), A(h->worst)) &&
              KARGS(h->detail, "health_detail", A(end_u), A(sim->pos), A(sim->vel),
                    A(sim->id), A(sim->body), A(h->worst), A(h->out)) &&
              mz_cl_run_range(sim->cl, h->scan, begin, end, NULL,
                              "clEnqueueNDRangeKernel(health_scan)") &&
              mz_cl_run_range(sim->cl, h->detail, begin, end, NULL,
                              "clEnqueueNDRangeKernel(health_detail)") &&
              cl_ok(clEnqueueReadBuffer(q, h->worst, CL_FALSE, 0, sizeof h->worst_host,
                                        &h->worst_host, 0, NULL, NULL),
                    "clEnqueueReadBuffer(health)") &&
              cl_ok(clEnqueueReadBuffer(q, h->out, CL_FALSE, 0, sizeof h->out_host, h->out_host,
                                        0, NULL, NULL),
                    "clEnqueueReadBuffer(health detail)") &&
              cl_ok(clEnqueueMarkerWithWaitList(q, 0, NULL, &h->done),
                    "clEnqueueMarkerWithWaitList(health)");
    h->pending = ok;
    h->frame = frame;
    h->step = sim->step;
    h->time = sim->time;
    return ok;
}

static float as_float(cl_uint u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Where to look first, by solver. */
static const char *likely_cause(const mz_scene *s)
{
    if (scene_is_sph(s))
        return s->sim.adaptive ? "the time step is too large for the forces (lower simulation.cfl)"
                               : "the time step is too large (raise simulation.substeps or use "
                                 "simulation.adaptive) or the walls too stiff "
                                 "(domain.boundary.stiffness)";
    if (scene_solver(s) == MZ_SOLVER_PBF)
        return "the time step is too large (raise simulation.substeps or set "
               "simulation.adaptive: a step must not carry a particle more than about a spacing, "
               "and deep water needs dt below 0.35 h/sqrt(|g| depth))";
    if (bodies_count(s) > 0)
        return "the time step is too large for the stiffness (raise simulation.substeps, or the "
               "compliance of stiff constraints)";
    return "the walls are too stiff for the time step (domain.boundary.stiffness, "
           "simulation.substeps)";
}

int health_result(mz_health *h, const mz_sim *sim)
{
    if (!h->pending)
        return 0;
    h->pending = false;
    bool ok = cl_ok(clWaitForEvents(1, &h->done), "clWaitForEvents(health)");
    clReleaseEvent(h->done);
    if (!ok) {
        if (dist_active()) /* the other ranks wait to agree below */
            dist_abort(MZ_EXIT_RUNTIME);
        return -1;
    }
    /* Distributed: the smallest id over all ranks; the rank that holds it reports. */
    long worst = dist_min_long((long)h->worst_host);
    if (worst == (long)CL_UINT_MAX)
        return 0;
    if (worst != (long)h->worst_host)
        return -1;
    const mz_scene *s = sim->scene;
    float x[3], v[3];
    for (int a = 0; a < 3; a++) {
        x[a] = as_float(h->out_host[a]);
        v[a] = as_float(h->out_host[3 + a]);
    }
    cl_uint body = h->out_host[6];
    char where[64];
    if (body < s->n_fluids)
        snprintf(where, sizeof where, "fluids[%u]", body);
    else if (body - s->n_fluids < bodies_count(s))
        bodies_path(s, body - s->n_fluids, where);
    else
        snprintf(where, sizeof where, "body %u", body);
    const char *name = body < s->n_fluids ? s->fluids[body].name
                       : body - s->n_fluids < bodies_count(s)
                           ? bodies_get(s, body - s->n_fluids)->name
                           : NULL;
    double speed = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
    bool finite = isfinite(speed) && isfinite(x[0]) && isfinite(x[1]) && isfinite(x[2]);
    char what[192];
    if (finite && s->sim.max_speed > 0)
        snprintf(what, sizeof what, "moves at %.4g m/s, beyond simulation.max_speed = %.4g m/s",
                 speed, h->max_speed);
    else if (finite)
        snprintf(what, sizeof what, "moves at %.4g m/s, beyond the automatic bound of %.4g m/s "
                 "(simulation.max_speed sets another)", speed, h->max_speed);
    else
        snprintf(what, sizeof what, "has a position or velocity that is not finite");
    mz_error("the simulation blew up in frame %ld (t = %.6g s, step %ld): particle %u of %s%s%s%s "
             "%s; it is at (%.4g, %.4g, %.4g) m with velocity (%.4g, %.4g, %.4g) m/s. Likely "
             "cause: %s",
             h->frame, h->time, h->step, h->worst_host, where, name ? " \"" : "",
             name ? name : "", name ? "\"" : "", what, x[0], x[1], x[2], v[0], v[1], v[2],
             likely_cause(s));
    return -1;
}

void health_release(mz_health *h)
{
    if (h->pending)
        clReleaseEvent(h->done);
    cl_kernel ks[] = {h->scan, h->detail};
    mz_cl_release_kernels(ks, 2);
    cl_mem ms[] = {h->worst, h->out};
    mz_cl_release_mems(ms, 2);
    if (h->program)
        clReleaseProgram(h->program);
    memset(h, 0, sizeof *h);
}
