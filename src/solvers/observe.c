/* Probes and gauges on the device (observe.h; the kernels in kernels/grid/probes.cl). */
#include "solvers/observe.h"
#include "device/grid.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows of samples the device holds before a read-back: a few MiB at most. */
#define ROWS_BYTES (4u << 20)
#define MAX_ROWS 4096

/* The weights' mean sum over the fluid's rest lattice (spacing s, d dimensions): their
 * integral over the volume a particle stands for, s^d. At a lattice point the sum differs by a
 * few percent from the mean; the integral holds for any point, on average. */
static double rest_sum(double s, double kh, int dim)
{
    double pi = acos(-1.0);
    double integral = dim == 3 ? 2.0 * pi * kh * kh * kh / 21.0 : pi * kh * kh / 7.0;
    return integral / pow(s, dim);
}

static cl_mem buffer_of(mz_sim *sim, size_t bytes, const void *host, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                        (void *)host, what);
}

/* The gauges' points (start + k ds along each), first point and count, and spacing. */
static int make_gauges(mz_observers *o, mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    size_t total = 0;
    for (size_t g = 0; g < o->n_gauges; g++)
        total += scene_gauge_points(s, &s->gauges[g]);
    cl_float4 *pts = xcalloc(total, sizeof *pts);
    cl_uint *first = xcalloc(o->n_gauges, sizeof *first), *count = xcalloc(o->n_gauges, 4);
    cl_float *ds = xcalloc(o->n_gauges, sizeof *ds);
    size_t at = 0;
    for (size_t g = 0; g < o->n_gauges; g++) {
        const mz_gauge *ga = &s->gauges[g];
        size_t m = scene_gauge_points(s, ga);
        double len2 = 0;
        for (int a = 0; a < s->sim.dimensions; a++)
            len2 += (ga->end[a] - ga->start[a]) * (ga->end[a] - ga->start[a]);
        first[g] = (cl_uint)at;
        count[g] = (cl_uint)m;
        ds[g] = (cl_float)(sqrt(len2) / (double)(m - 1));
        for (size_t k = 0; k < m; k++, at++) {
            double t = (double)k / (double)(m - 1), p[3];
            for (int a = 0; a < 3; a++)
                p[a] = a < s->sim.dimensions ? ga->start[a] + t * (ga->end[a] - ga->start[a]) : 0;
            pts[at] = sim_float4(p);
        }
    }
    o->n_gauge_pts = total;
    o->gauge_pts = buffer_of(sim, 16 * total, pts, "clCreateBuffer(gauge points)");
    o->gauge_frac = buffer_of(sim, 4 * total, NULL, "clCreateBuffer(gauge fractions)");
    o->gauge_first = buffer_of(sim, 4 * o->n_gauges, first, "clCreateBuffer(gauges)");
    o->gauge_count = buffer_of(sim, 4 * o->n_gauges, count, "clCreateBuffer(gauges)");
    o->gauge_ds = buffer_of(sim, 4 * o->n_gauges, ds, "clCreateBuffer(gauges)");
    free(pts);
    free(first);
    free(count);
    free(ds);
    return o->gauge_pts && o->gauge_frac && o->gauge_first && o->gauge_count && o->gauge_ds
               ? 0
               : -1;
}

int observe_create(mz_observers *o, mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    memset(o, 0, sizeof *o);
    o->n_probes = s->n_probes;
    o->n_gauges = s->n_gauges;
    if (!sim->grid) {
        mz_error("the %s solver keeps no particle grid to sample probes and gauges from",
                 sim->solver->name);
        return -1;
    }
    o->row = 6 * o->n_probes + o->n_gauges;
    size_t m = o->n_probes + o->n_gauges;
    o->rate = xcalloc(m, sizeof *o->rate);
    for (size_t i = 0; i < m; i++)
        o->rate[i] = i < o->n_probes ? s->probes[i].rate : s->gauges[i - o->n_probes].rate;
    /* The interpolation radius: the fluid's support radius, never wider than a grid cell (the
     * kernels search two cells around a point: see kernels/grid/probes.cl). */
    double kh = fmin(scene_support_radius(s), sim->grid->desc.h);
    o->kh = (float)kh;
    o->inv_rest = (float)(1.0 / rest_sum(s->fluids[0].spacing, kh, s->sim.dimensions));
    o->fluid_bodies = (cl_uint)s->n_fluids;
    static const char *const names[] = {"probe_sample", "gauge_fraction", "gauge_level", NULL};
    cl_kernel *const kernels[] = {&o->k_probe, &o->k_fraction, &o->k_level};
    o->program = sim_build_kernels(sim, "grid/probes.cl", names, kernels);
    if (!o->program)
        return -1;
    if (o->n_probes) {
        cl_float4 *pts = xcalloc(o->n_probes, sizeof *pts);
        for (size_t i = 0; i < o->n_probes; i++) {
            double p[3] = {s->probes[i].position[0], s->probes[i].position[1],
                           s->sim.dimensions == 3 ? s->probes[i].position[2] : 0};
            pts[i] = sim_float4(p);
        }
        o->points = buffer_of(sim, 16 * o->n_probes, pts, "clCreateBuffer(probe points)");
        free(pts);
        if (!o->points)
            return -1;
    }
    if (o->n_gauges && make_gauges(o, sim) != 0)
        return -1;
    o->cap_rows = ROWS_BYTES / (4 * o->row);
    o->cap_rows = o->cap_rows < 1 ? 1 : o->cap_rows > MAX_ROWS ? MAX_ROWS : o->cap_rows;
    o->rows = buffer_of(sim, 4 * o->row * o->cap_rows, NULL, "clCreateBuffer(sample rows)");
    return o->rows ? 0 : -1;
}

/* Room in o->taken for one more sample. */
static void grow_taken(mz_samples *t, size_t row, size_t m)
{
    if (t->count < t->cap)
        return;
    t->cap = t->cap ? 2 * t->cap : 64;
    t->step = xrealloc(t->step, t->cap * sizeof *t->step);
    t->time = xrealloc(t->time, t->cap * sizeof *t->time);
    t->due = xrealloc(t->due, t->cap * m);
    t->rows = xrealloc(t->rows, t->cap * row * sizeof *t->rows);
}

/* The launches of one sample into device row `slot`. */
static bool sample(mz_observers *o, mz_sim *sim, size_t slot, bool probes, bool gauges)
{
    mz_grid *g = sim->grid;
    cl_int by_vals = sim->grid_by_vals;
    cl_mem *rho = sim->field[MZ_FIELD_DENSITY], *p = sim->field[MZ_FIELD_PRESSURE];
    cl_int has_rho = rho != NULL, has_p = p != NULL;
    cl_mem rho_m = rho ? *rho : sim->pos, p_m = p ? *p : sim->pos;
    cl_uint base = (cl_uint)(slot * o->row);
    bool ok = true;
    if (probes) {
        cl_uint n = (cl_uint)o->n_probes;
        ok = KARGS(o->k_probe, "probe_sample", A(n), A(g->desc), A(g->cell_start),
                   A(g->cell_end), A(g->vals), A(by_vals), A(sim->pos), A(sim->vel), A(rho_m),
                   A(has_rho), A(p_m), A(has_p), A(sim->body), A(o->fluid_bodies), A(o->kh),
                   A(o->inv_rest), A(o->points), A(o->rows), A(base)) &&
             sim_launch(sim, o->k_probe, o->n_probes, MZ_STAGE_OBSERVE, "probe_sample");
    }
    if (ok && gauges) {
        cl_uint n = (cl_uint)o->n_gauge_pts, ng = (cl_uint)o->n_gauges;
        cl_uint gbase = base + (cl_uint)(6 * o->n_probes);
        ok = KARGS(o->k_fraction, "gauge_fraction", A(n), A(g->desc), A(g->cell_start),
                   A(g->cell_end), A(g->vals), A(by_vals), A(sim->pos), A(sim->vel),
                   A(sim->body), A(o->fluid_bodies), A(o->kh), A(o->inv_rest),
                   A(o->gauge_pts), A(o->gauge_frac)) &&
             sim_launch(sim, o->k_fraction, o->n_gauge_pts, MZ_STAGE_OBSERVE, "gauge_fraction") &&
             KARGS(o->k_level, "gauge_level", A(ng), A(o->gauge_first), A(o->gauge_count),
                   A(o->gauge_ds), A(o->gauge_frac), A(o->rows), A(gbase)) &&
             sim_launch(sim, o->k_level, o->n_gauges, MZ_STAGE_OBSERVE, "gauge_level");
    }
    return ok;
}

void observe_step(mz_observers *o, mz_sim *sim, double t0)
{
    size_t m = o->n_probes + o->n_gauges;
    unsigned char due[2 * MZ_MAX_OBSERVERS];
    bool probes = false, gauges = false;
    for (size_t i = 0; i < m; i++) {
        double r = o->rate[i];
        /* 1e-9 of a sample period: the steps' summed times round (2.9999999999 for 3). */
        due[i] = r == 0 || floor(sim->time * r + 1e-9) > floor(t0 * r + 1e-9);
        if (due[i] && i < o->n_probes)
            probes = true;
        else if (due[i])
            gauges = true;
    }
    if (o->failed || !(probes || gauges))
        return;
    if (o->used == o->cap_rows && observe_collect(o, sim) != 0)
        return;
    mz_samples *t = &o->taken;
    grow_taken(t, o->row, m);
    if (!sample(o, sim, o->used, probes, gauges)) {
        o->failed = true;
        return;
    }
    t->step[t->count] = sim->step;
    t->time[t->count] = sim->time;
    memcpy(t->due + t->count * m, due, m);
    t->count++;
    o->used++;
}

int observe_collect(mz_observers *o, mz_sim *sim)
{
    if (o->failed)
        return -1;
    if (o->used == 0)
        return 0;
    mz_samples *t = &o->taken;
    float *dst = t->rows + (t->count - o->used) * o->row;
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, o->rows, CL_TRUE, 0,
                                   4 * o->row * o->used, dst, 0, NULL, NULL),
               "clEnqueueReadBuffer(probe and gauge samples)")) {
        o->failed = true;
        return -1;
    }
    o->used = 0;
    return 0;
}

void observe_forget(mz_observers *o, long step)
{
    mz_samples *t = &o->taken;
    size_t m = o->n_probes + o->n_gauges, k = 0;
    while (k < t->count - o->used && t->step[k] <= step)
        k++;
    size_t rest = t->count - k;
    memmove(t->step, t->step + k, rest * sizeof *t->step);
    memmove(t->time, t->time + k, rest * sizeof *t->time);
    memmove(t->due, t->due + k * m, rest * m);
    memmove(t->rows, t->rows + k * o->row, rest * o->row * sizeof *t->rows);
    t->count = rest;
}

void observe_release(mz_observers *o)
{
    cl_kernel ks[] = {o->k_probe, o->k_fraction, o->k_level};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {o->points,      o->gauge_pts, o->gauge_frac, o->gauge_first,
                   o->gauge_count, o->gauge_ds,  o->rows};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (o->program)
        clReleaseProgram(o->program);
    free(o->rate);
    free(o->taken.step);
    free(o->taken.time);
    free(o->taken.due);
    free(o->taken.rows);
    memset(o, 0, sizeof *o);
}
