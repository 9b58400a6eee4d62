/* Probes, gauges and loads on the device (observe.h; the kernels in kernels/grid/probes.cl). */
#include "solvers/observe.h"
#include "device/grid.h"
#include "dist/dist.h"
#include "solvers/observe_dist.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows of samples the device holds before a read-back: a few MiB at most. */
#define ROWS_BYTES (4u << 20)
#define MAX_ROWS 4096
/* The gauges' walls table: k = 0 .. 64 (wall_table). */
#define WALL_TABLE_N 65

/* The weights' mean sum over the fluid's rest lattice (spacing s, d dimensions): their
 * integral over the volume a particle stands for, s^d. At a lattice point the sum differs by a
 * few percent from the mean; the integral holds for any point, on average. */
static double rest_sum(double s, double kh, int dim)
{
    double pi = acos(-1.0);
    double integral = dim == 3 ? 2.0 * pi * kh * kh * kh / 21.0 : pi * kh * kh / 7.0;
    return integral / pow(s, dim);
}

/* The walls' table for gauges (kernels/grid/probes.cl, mz_wall_part): the part of the weights'
 * integral beyond a plane at distance k kh / 64, k = 0 .. 64, by midpoint quadrature. The
 * weight through a plane at distance z is a(z) = 2π ∫_z^1 w(u) u du in 3D (rings) and
 * 2 ∫_0^sqrt(1 − z²) w(sqrt(x² + z²)) dx in 2D (a chord), in units of kh. */
static void wall_table(int dim, cl_float table[WALL_TABLE_N])
{
    enum { N = 400 };
    double pi = acos(-1.0), a[N], total = 0;
    for (int j = 0; j < N; j++) {
        double z = (j + 0.5) / N, sum = 0;
        for (int k = 0; k < N; k++) {
            if (dim == 3) {
                double u = z + (1 - z) * (k + 0.5) / N, q = 1 - u;
                sum += q * q * q * q * (1 + 4 * u) * u * (1 - z) / N;
            } else {
                double half = sqrt(1 - z * z), x = half * (k + 0.5) / N, u = sqrt(x * x + z * z);
                double q = 1 - u;
                sum += q * q * q * q * (1 + 4 * u) * half / N;
            }
        }
        a[j] = (dim == 3 ? 2 * pi : 2) * sum;
        total += 2 * a[j] / N; /* both sides of the plane z = 0 */
    }
    for (int k = 0; k <= 64; k++) {
        double beyond = 0;
        for (int j = 0; j < N; j++)
            if ((j + 0.5) / N > k / 64.0)
                beyond += a[j] / N;
        table[k] = (cl_float)(beyond / total);
    }
}

static cl_mem buffer_of(mz_sim *sim, size_t bytes, const void *host, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                        (void *)host, what);
}

/* Rows of `row` values the device keeps between flushes: about ROWS_BYTES, at most MAX_ROWS. */
static size_t rows_cap(size_t row)
{
    size_t cap = ROWS_BYTES / (4 * row);
    return cap < 1 ? 1 : cap > MAX_ROWS ? MAX_ROWS : cap;
}

/* Values a sample row holds: 6 a probe, 1 a gauge, 6 a load, 3 a moving collider's pose. */
static size_t row_of(const mz_scene *s)
{
    return 6 * s->n_probes + s->n_gauges + 6 * scene_load_count(s) + 3 * scene_pose_count(s);
}

size_t observe_device_bytes(const mz_scene *s)
{
    size_t gauge_pts = 0, ng = s->n_gauges, nl = scene_load_count(s);
    for (size_t g = 0; g < ng; g++)
        gauge_pts += scene_gauge_points(s, &s->gauges[g]);
    size_t pts = s->n_probes + gauge_pts, row = row_of(s);
    if (row == 0)
        return 0; /* nothing observed: sim_create makes no observers */
    /* points; the gauges' sums, first, count, spacing and wall table (make_points); the torque
     * points (make_abouts); the sample rows */
    size_t bytes = 16 * (pts ? pts : 1) + 16 * (nl ? nl : 1) + 4 * row * rows_cap(row);
    if (ng)
        bytes += 2 * 32 * gauge_pts + 3 * 4 * ng + WALL_TABLE_N * sizeof(cl_float);
    return bytes;
}

/* The points sampled: the probes, then each gauge's (start + k ds along it); each gauge's
 * first point (counted from the gauges' first), count and spacing. */
static int make_points(mz_observers *o, mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    size_t total = 0;
    for (size_t g = 0; g < o->n_gauges; g++)
        total += scene_gauge_points(s, &s->gauges[g]);
    o->n_gauge_pts = total;
    cl_float4 *pts = xcalloc(o->n_probes + total + 1, sizeof *pts);
    for (size_t i = 0; i < o->n_probes; i++) {
        double p[3] = {s->probes[i].position[0], s->probes[i].position[1],
                       s->sim.dimensions == 3 ? s->probes[i].position[2] : 0};
        pts[i] = sim_float4(p);
    }
    size_t ng = o->n_gauges ? o->n_gauges : 1, at = o->n_probes;
    cl_uint *first = xcalloc(ng, sizeof *first), *count = xcalloc(ng, sizeof *count);
    cl_float *ds = xcalloc(ng, sizeof *ds);
    for (size_t g = 0; g < o->n_gauges; g++) {
        const mz_gauge *ga = &s->gauges[g];
        size_t m = scene_gauge_points(s, ga);
        first[g] = (cl_uint)(at - o->n_probes);
        count[g] = (cl_uint)m;
        ds[g] = (cl_float)(scene_gauge_length(s, ga) / (double)(m - 1));
        for (size_t k = 0; k < m; k++, at++) {
            double t = (double)k / (double)(m - 1), p[3];
            for (int a = 0; a < 3; a++)
                p[a] = a < s->sim.dimensions ? ga->start[a] + t * (ga->end[a] - ga->start[a]) : 0;
            pts[at] = sim_float4(p);
        }
    }
    o->points = buffer_of(sim, 16 * (at ? at : 1), pts, "clCreateBuffer(probe and gauge points)");
    bool ok = o->points != NULL;
    if (ok && o->n_gauges) {
        o->gauge_sums = buffer_of(sim, 2 * 32 * total, NULL, "clCreateBuffer(gauge sums)");
        o->gauge_first = buffer_of(sim, 4 * ng, first, "clCreateBuffer(gauges)");
        o->gauge_count = buffer_of(sim, 4 * ng, count, "clCreateBuffer(gauges)");
        o->gauge_ds = buffer_of(sim, 4 * ng, ds, "clCreateBuffer(gauges)");
        cl_float table[WALL_TABLE_N];
        wall_table(s->sim.dimensions, table);
        o->wall_table = buffer_of(sim, sizeof table, table, "clCreateBuffer(gauges)");
        ok = o->gauge_sums && o->gauge_first && o->gauge_count && o->gauge_ds && o->wall_table;
    }
    free(pts);
    free(first);
    free(count);
    free(ds);
    return ok ? 0 : -1;
}

/* Where the sums find slot k's values (kernels/grid/probes.cl, MZ_BY_VALS_*): particle k, or
 * vals[k], its slot before the build, for every buffer when the grid sorts a copy or was only
 * indexed, else for the fields the build does not move. */
#define BY_VALS_PARTICLES 1
#define BY_VALS_DENSITY 2
#define BY_VALS_PRESSURE 4
static cl_int order_of(const mz_sim *sim)
{
    const mz_grid *g = sim->grid;
    if (sim->grid_by_vals || g->indexed)
        return BY_VALS_PARTICLES | BY_VALS_DENSITY | BY_VALS_PRESSURE;
    cl_mem *rho = sim->field[MZ_FIELD_DENSITY], *p = sim->field[MZ_FIELD_PRESSURE];
    return (rho && !grid_moves(g, rho) ? BY_VALS_DENSITY : 0) |
           (p && !grid_moves(g, p) ? BY_VALS_PRESSURE : 0);
}

/* The fields the probes read: the buffer, and whether the solver has it (else any buffer). */
static void fields_of(const mz_sim *sim, cl_mem *rho, cl_int *has_rho, cl_mem *p, cl_int *has_p)
{
    cl_mem *r = sim->field[MZ_FIELD_DENSITY], *q = sim->field[MZ_FIELD_PRESSURE];
    *has_rho = r != NULL;
    *has_p = q != NULL;
    *rho = r ? *r : sim->pos;
    *p = q ? *q : sim->pos;
}

/* The points a sample sums: the probes, the gauges' points or both (the points buffer holds
 * the probes, then the gauges' points), [*from, *to). */
static void points_of(const mz_observers *o, bool probes, bool gauges, size_t *from, size_t *to)
{
    *from = probes ? 0 : o->n_probes;
    *to = gauges ? o->n_probes + o->n_gauge_pts : o->n_probes;
}

/* The points the loads' torques are taken about. */
static int make_abouts(mz_observers *o, mz_sim *sim)
{
    cl_float4 *about = xcalloc(o->n_loads ? o->n_loads : 1, sizeof *about);
    for (size_t k = 0; k < o->n_loads; k++)
        about[k] = sim_float4(scene_load_ref(sim->scene, k).load->about);
    o->about = buffer_of(sim, 16 * (o->n_loads ? o->n_loads : 1), about,
                         "clCreateBuffer(torque points)");
    free(about);
    return o->about ? 0 : -1;
}

int observe_create(mz_observers *o, mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    memset(o, 0, sizeof *o);
    o->n_probes = s->n_probes;
    o->n_gauges = s->n_gauges;
    o->n_loads = scene_load_count(s);
    o->n_motion = scene_pose_count(s);
    if (!sim->grid && o->n_probes + o->n_gauges > 0) {
        mz_error("the %s solver keeps no particle grid to sample probes and gauges from",
                 sim->solver->name);
        return -1;
    }
    if (o->n_loads > 0 && sim->loads.n == 0 && !sim->loads.sums) {
        mz_error("the %s solver measures no forces on solids", sim->solver->name);
        return -1;
    }
    o->row = row_of(s);
    size_t m = o->n_probes + o->n_gauges + o->n_loads + o->n_motion;
    o->rate = xcalloc(m, sizeof *o->rate);
    o->due_now = xcalloc(m, 1);
    size_t i = 0;
    for (size_t k = 0; k < o->n_probes; k++)
        o->rate[i++] = s->probes[k].rate;
    for (size_t k = 0; k < o->n_gauges; k++)
        o->rate[i++] = s->gauges[k].rate;
    for (size_t k = 0; k < o->n_loads; k++)
        o->rate[i++] = scene_load_ref(s, k).load->rate;
    for (size_t k = 0; k < o->n_motion; k++) { /* at the solid's forces' rate, or per frame */
        size_t c;
        scene_pose_law(s, k, &c);
        const mz_load *l = c < s->n_colliders ? (s->colliders[c].has_forces
                                                      ? &s->colliders[c].forces : NULL)
                           : s->domain.boundary.has_forces ? &s->domain.boundary.forces
                                                           : NULL;
        o->rate[i++] = l ? l->rate : s->sim.fps;
    }
    /* The interpolation radius: the fluid's support radius, never wider than a grid cell (the
     * kernels search one or two cells around a point: see kernels/grid/probes.cl). */
    if (s->n_fluids > 0) { /* (probes and gauges need a fluid; poses and forces do not) */
        double kh = sim->grid ? fmin(scene_support_radius(s), sim->grid->desc.h)
                              : scene_support_radius(s);
        o->kh = (float)kh;
        o->inv_rest = (float)(1.0 / rest_sum(s->fluids[0].spacing, kh, s->sim.dimensions));
    }
    o->fluid_bodies = (cl_uint)s->n_fluids;
    o->lo = sim_float4(s->domain.min);
    o->hi = sim_float4(s->domain.max);
    static const char *const names[] = {"probe_sums",  "probe_near",  "gauge_level",
                                        "load_sums",   "motion_rows", NULL};
    cl_kernel *const kernels[] = {&o->k_sums, &o->k_near, &o->k_level, &o->k_loads,
                                  &o->k_motion};
    o->program = sim_build_kernels(sim, "grid/probes.cl", names, kernels);
    if (!o->program)
        return -1;
    o->deferred = sim->solver->grid_now && sim->grid && o->n_probes + o->n_gauges > 0;
    /* A rank's exchange carries only the buffers its grid moves: the probes read them in the
     * grid's order (the solver registers the densities and pressures when there are probes). */
    if (o->deferred && sim->slabs && o->n_probes > 0 && (order_of(sim) & ~BY_VALS_PARTICLES)) {
        mz_error("internal: the %s solver's densities or pressures do not travel with the "
                 "particles for the probes",
                 sim->solver->name);
        return -1;
    }
    if (make_points(o, sim) != 0 || make_abouts(o, sim) != 0 || observe_dist_create(o, sim) != 0)
        return -1;
    o->cap_rows = rows_cap(o->row);
    o->rows = buffer_of(sim, 4 * o->row * o->cap_rows, NULL, "clCreateBuffer(sample rows)");
    o->stage = mz_cl_pinned(sim->cl, 4 * o->row * o->cap_rows, &o->stage_pin);
    return o->rows && o->stage ? 0 : -1;
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

/* The loads' sums into device row `slot`: a work-group per load. */
static bool sample_loads(mz_observers *o, mz_sim *sim, size_t slot)
{
    cl_uint base = (cl_uint)(slot * o->row + 6 * o->n_probes + o->n_gauges);
    const mz_load_elems *e = &sim->loads;
    if (e->sums) /* the solver summed them */
        return cl_ok(clEnqueueCopyBuffer(sim->cl->queue, e->sums, o->rows, 0, 4 * (size_t)base,
                                         24 * o->n_loads, 0, NULL, NULL),
                     "clEnqueueCopyBuffer(load sums)");
    return KARGS(o->k_loads, "load_sums", A(e->at), A(e->force), A(e->first), A(e->count),
                 A(o->about), A(o->rows), A(base)) &&
           sim_launch_local(sim, o->k_loads, 0, 256 * o->n_loads, 256, MZ_STAGE_OBSERVE,
                            "load_sums");
}

/* kernels/grid/probes.cl's mz_motion_rows. */
typedef struct motion_rows_arg {
    cl_float4 v[MZ_MAX_POSES];
} motion_rows_arg;

/* The moving colliders' and the domain's poses at sim->time into device row `slot`. */
static bool sample_motion(mz_observers *o, mz_sim *sim, size_t slot)
{
    const mz_scene *s = sim->scene;
    motion_rows_arg now;
    memset(&now, 0, sizeof now);
    for (size_t k = 0; k < o->n_motion; k++) {
        size_t c;
        const mz_motion *m = scene_pose_law(s, k, &c);
        double v[3];
        motion_eval(m, sim->time, v);
        for (int a = 0; a < 3; a++)
            now.v[k].s[a] = (cl_float)(m->type == MZ_MOTION_TRANSLATION ? v[0] * m->unit[a]
                                       : a == 0                         ? v[0]
                                                                        : 0);
    }
    cl_uint base = (cl_uint)(slot * o->row + 6 * o->n_probes + o->n_gauges + 6 * o->n_loads);
    cl_uint n = (cl_uint)o->n_motion;
    return KARGS(o->k_motion, "motion_rows", A(now), A(n), A(o->rows), A(base)) &&
           sim_launch(sim, o->k_motion, o->n_motion, MZ_STAGE_OBSERVE, "motion_rows");
}

/* probe_sums on the step's grid over the points due, for device row `slot`; the gauges'
 * points' sums at the start of gauge_sums. */
static bool sample_sums(mz_observers *o, mz_sim *sim, size_t slot, bool probes, bool gauges)
{
    if (!probes && !gauges)
        return true;
    mz_grid *g = sim->grid;
    cl_int order = order_of(sim), has_rho, has_p;
    cl_mem rho, p;
    fields_of(sim, &rho, &has_rho, &p, &has_p);
    cl_uint base = (cl_uint)(slot * o->row), np = (cl_uint)o->n_probes;
    size_t group = sim->scene->sim.dimensions == 3 ? 128 : 32; /* MZ_PROBE_GROUP */
    size_t from, to;
    points_of(o, probes, gauges, &from, &to);
    cl_mem gsums = o->gauge_sums ? o->gauge_sums : o->rows, parts;
    cl_int own_lo, own_hi;
    observe_dist_args(o, sim, &own_lo, &own_hi, &parts);
    return KARGS(o->k_sums, "probe_sums", A(g->desc), A(g->cell_words), A(g->cell_first),
                 A(g->vals), A(order), A(sim->pos), A(sim->vel), A(rho), A(has_rho), A(p),
                 A(has_p), A(sim->body), A(o->fluid_bodies), A(o->kh), A(o->inv_rest),
                 A(o->points), A(np), A(o->rows), A(base), A(gsums), A(own_lo), A(own_hi),
                 A(parts)) &&
           sim_launch_local(sim, o->k_sums, from * group, (to - from) * group, group,
                            MZ_STAGE_OBSERVE, "probe_sums");
}

/* probe_near, on a grid just built (or indexed) from the positions sampled, over the points
 * due for device row `slot`, with the levels of the sample before whose gauges wait for them
 * (o->levels): the gauges' points' sums go to the half of gauge_sums those do not use. In one
 * process this sample's levels then wait in turn; a rank's sums are assembled first
 * (observe_dist.h), and rank 0 finds the levels after. */
static bool sample_near(mz_observers *o, mz_sim *sim, size_t slot, bool probes, bool gauges)
{
    mz_grid *g = sim->grid;
    cl_int order = order_of(sim), has_rho, has_p;
    cl_mem rho, p;
    fields_of(sim, &rho, &has_rho, &p, &has_p);
    cl_uint base = (cl_uint)(slot * o->row), np = (cl_uint)o->n_probes;
    size_t from, to, per = sim->scene->sim.dimensions == 3 ? 4 : 8; /* MZ_NEAR_POINTS */
    points_of(o, probes, gauges, &from, &to);
    cl_uint first = (cl_uint)from, end = (cl_uint)to;
    cl_uint groups = (cl_uint)((to - from + per - 1) / per);
    size_t levels = o->levels.on ? o->n_gauges : 0;
    cl_uint sums_in = o->levels.on ? o->levels.sums : 0;
    cl_uint sums_out = o->levels.on && sums_in == 0 ? (cl_uint)o->n_gauge_pts : 0;
    cl_uint level_base = (cl_uint)(o->levels.slot * o->row + 6 * o->n_probes);
    cl_mem gsums = o->gauge_sums ? o->gauge_sums : o->rows, parts;
    cl_mem gfirst = o->gauge_first ? o->gauge_first : o->rows;
    cl_mem gcount = o->gauge_count ? o->gauge_count : o->rows;
    cl_mem gds = o->gauge_ds ? o->gauge_ds : o->rows;
    cl_mem table = o->wall_table ? o->wall_table : o->rows;
    cl_int own_lo, own_hi;
    observe_dist_args(o, sim, &own_lo, &own_hi, &parts);
    if (!KARGS(o->k_near, "probe_near", A(g->desc), A(g->cell_words), A(g->cell_first),
               A(g->vals), A(order), A(sim->pos), A(sim->vel), A(rho), A(has_rho), A(p),
               A(has_p), A(sim->body), A(o->fluid_bodies), A(o->kh), A(o->inv_rest),
               A(o->points), A(np), A(first), A(end), A(o->rows), A(base), A(gsums),
               A(sums_out), A(own_lo), A(own_hi), A(parts), A(groups), A(gfirst), A(gcount),
               A(gds), A(sums_in), A(o->lo), A(o->hi), A(table), A(level_base)) ||
        !sim_launch_local(sim, o->k_near, 0, (groups + levels) * 128, 128, MZ_STAGE_OBSERVE,
                          "probe_near"))
        return false;
    o->levels.on = gauges && !o->dist;
    o->levels.slot = slot;
    o->levels.sums = sums_out;
    return true;
}

/* The gauges' levels into device row `slot` from their points' sums at gauge_sums[sums ..]. */
static bool sample_levels(mz_observers *o, mz_sim *sim, size_t slot, cl_uint sums)
{
    cl_uint np = (cl_uint)o->n_probes;
    cl_uint gbase = (cl_uint)(slot * o->row + 6 * o->n_probes);
    return KARGS(o->k_level, "gauge_level", A(o->gauge_first), A(o->gauge_count),
                 A(o->gauge_ds), A(o->gauge_sums), A(sums), A(o->inv_rest), A(o->points), A(np),
                 A(o->lo), A(o->hi), A(o->kh), A(o->wall_table), A(o->rows), A(gbase)) &&
           sim_launch_local(sim, o->k_level, 0, 256 * o->n_gauges, 256, MZ_STAGE_OBSERVE,
                            "gauge_level");
}

/* Whether an observer of rate r is due after a step from t0 to t1. 1e-9 of a sample period:
 * the steps' summed times round (2.9999999999 for 3). */
static bool due_at(double r, double t0, double t1)
{
    return r == 0 || floor(t1 * r + 1e-9) > floor(t0 * r + 1e-9);
}

bool observe_loads_due(const mz_observers *o, double t0, double t1)
{
    for (size_t k = 0; k < o->n_loads; k++)
        if (due_at(o->rate[o->n_probes + o->n_gauges + k], t0, t1))
            return true;
    return false;
}

/* A sample's part that failed: every rank stops (the others would wait for this one in the
 * next sample's assembly). */
static void failed(mz_observers *o)
{
    if (o->dist)
        dist_abort(MZ_EXIT_RUNTIME);
    o->failed = true;
}

void observe_after_build(mz_observers *o, mz_sim *sim)
{
    if (!o->waiting.on || o->failed)
        return;
    size_t slot = o->waiting.slot;
    bool probes = o->waiting.probes, gauges = o->waiting.gauges;
    o->waiting.on = false;
    bool ok = sample_near(o, sim, slot, probes, gauges);
    if (ok && o->dist)
        observe_dist_assemble(o, sim, slot, probes, gauges, false, true);
    if (!ok || (o->dist && gauges && dist_rank() == 0 && !sample_levels(o, sim, slot, 0)))
        failed(o);
}

/* The waiting sample, on the grid the solver gives now (mz_solver.grid_now). 0, or -1. */
static int sample_waiting_now(mz_observers *o, mz_sim *sim)
{
    if (!o->waiting.on || o->failed)
        return o->failed ? -1 : 0;
    if (sim->solver->grid_now(sim) != 0) {
        failed(o);
        return -1;
    }
    observe_after_build(o, sim);
    return o->failed ? -1 : 0;
}

void observe_step(mz_observers *o, mz_sim *sim, double t0)
{
    size_t m = o->n_probes + o->n_gauges + o->n_loads + o->n_motion;
    size_t loads_at = o->n_probes + o->n_gauges, motion_at = loads_at + o->n_loads;
    unsigned char *due = o->due_now;
    bool probes = false, gauges = false, loads = false, motion = false;
    for (size_t i = 0; i < m; i++) {
        due[i] = due_at(o->rate[i], t0, sim->time);
        probes |= due[i] && i < o->n_probes;
        gauges |= due[i] && i >= o->n_probes && i < loads_at;
        loads |= due[i] && i >= loads_at && i < motion_at;
        motion |= due[i] && i >= motion_at;
    }
    if (o->failed || !(probes || gauges || loads || motion))
        return;
    /* (A grid_now solver's step builds its grid: nothing waits from the step before.) */
    if (sample_waiting_now(o, sim) != 0)
        return;
    if (o->used == o->cap_rows && observe_flush(o, sim) != 0)
        return;
    mz_samples *t = &o->taken;
    grow_taken(t, o->row, m);
    /* The loads and poses now; the probes and gauges now on the step's grid, or after the next
     * build. Under mpirun rank 0's row is the sample, assembled from every rank's part before
     * the gauges' levels are found from their points. */
    bool now = !o->deferred, sums = now && (probes || gauges);
    bool ok = (!sums || sample_sums(o, sim, o->used, probes, gauges)) &&
              (!loads || sample_loads(o, sim, o->used));
    if (ok && o->dist && (sums || loads))
        observe_dist_assemble(o, sim, o->used, sums && probes, sums && gauges, loads, false);
    if (!ok ||
        (sums && gauges && (!o->dist || dist_rank() == 0) &&
         !sample_levels(o, sim, o->used, 0)) ||
        (motion && !sample_motion(o, sim, o->used))) {
        failed(o);
        return;
    }
    if (!now && (probes || gauges)) {
        o->waiting.on = true;
        o->waiting.slot = o->used;
        o->waiting.probes = probes;
        o->waiting.gauges = gauges;
    }
    t->step[t->count] = sim->step;
    t->time[t->count] = sim->time;
    memcpy(t->due + t->count * m, due, m);
    t->count++;
    o->used++;
    o->samples++;
}

/* The read-back in flight, waited for and copied into o->taken. */
static int land(mz_observers *o)
{
    if (o->staged == 0)
        return 0;
    bool ok = cl_ok(clWaitForEvents(1, &o->staged_done), "clWaitForEvents(samples)");
    clReleaseEvent(o->staged_done);
    o->staged_done = NULL;
    if (!ok) {
        o->failed = true;
        return -1;
    }
    memcpy(o->taken.rows + o->on_host * o->row, o->stage, o->staged * o->row * sizeof *o->stage);
    o->on_host += o->staged;
    o->staged = 0;
    return 0;
}

int observe_flush(mz_observers *o, mz_sim *sim)
{
    if (o->failed || land(o) != 0)
        return -1;
    /* Levels that wait for a next launch: their own, before their row is read. */
    if (o->levels.on && !sample_levels(o, sim, o->levels.slot, o->levels.sums)) {
        o->failed = true;
        return -1;
    }
    o->levels.on = false;
    /* A sample whose sums wait for the next build stays, its row (loads and poses so far)
     * moved to the first slot once the rows before it are read (one in-order queue). */
    size_t ready = o->used - o->waiting.on;
    if (ready == 0)
        return 0;
    cl_command_queue q = sim->cl->queue;
    bool ok = cl_ok(clEnqueueReadBuffer(q, o->rows, CL_FALSE, 0, 4 * o->row * ready, o->stage,
                                        0, NULL, &o->staged_done),
                    "clEnqueueReadBuffer(probe and gauge samples)");
    o->staged = ok ? ready : 0;
    if (ok && o->waiting.on) {
        ok = cl_ok(clEnqueueCopyBuffer(q, o->rows, o->rows, 4 * o->row * o->waiting.slot, 0,
                                       4 * o->row, 0, NULL, NULL),
                   "clEnqueueCopyBuffer(waiting sample)");
        o->waiting.slot = 0;
    }
    if (!ok) {
        o->failed = true;
        return -1;
    }
    o->used -= ready;
    return 0;
}

int observe_collect(mz_observers *o, mz_sim *sim)
{
    return sample_waiting_now(o, sim) != 0 || observe_flush(o, sim) != 0 || land(o) != 0 ? -1
                                                                                          : 0;
}

size_t observe_upto(const mz_observers *o, long step)
{
    size_t k = 0;
    while (k < o->on_host && o->taken.step[k] <= step)
        k++;
    return k;
}

void observe_forget(mz_observers *o, long step)
{
    mz_samples *t = &o->taken;
    size_t m = o->n_probes + o->n_gauges + o->n_loads + o->n_motion, k = observe_upto(o, step);
    size_t rest = t->count - k;
    o->on_host -= k;
    memmove(t->step, t->step + k, rest * sizeof *t->step);
    memmove(t->time, t->time + k, rest * sizeof *t->time);
    memmove(t->due, t->due + k * m, rest * m);
    memmove(t->rows, t->rows + k * o->row, rest * o->row * sizeof *t->rows);
    t->count = rest;
}

void observe_take(mz_observers *o, long step, mz_samples *dst)
{
    const mz_samples *t = &o->taken;
    size_t m = o->n_probes + o->n_gauges + o->n_loads + o->n_motion, c = observe_upto(o, step);
    for (size_t k = 0; k < c; k++) {
        grow_taken(dst, o->row, m);
        dst->step[dst->count] = t->step[k];
        dst->time[dst->count] = t->time[k];
        memcpy(dst->due + dst->count * m, t->due + k * m, m);
        memcpy(dst->rows + dst->count * o->row, t->rows + k * o->row, o->row * sizeof *t->rows);
        dst->count++;
    }
    observe_forget(o, step);
}

void observe_samples_free(mz_samples *t)
{
    free(t->step);
    free(t->time);
    free(t->due);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

void observe_release(mz_observers *o, mz_cl *cl)
{
    if (o->staged_done) {
        clWaitForEvents(1, &o->staged_done);
        clReleaseEvent(o->staged_done);
    }
    observe_dist_release(o, cl);
    if (o->stage)
        mz_cl_unpin(cl, o->stage_pin, o->stage);
    cl_kernel ks[] = {o->k_sums, o->k_near, o->k_level, o->k_loads, o->k_motion};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {o->points,     o->gauge_sums, o->gauge_first, o->gauge_count,
                   o->gauge_ds,   o->wall_table, o->rows,        o->about};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (o->program)
        clReleaseProgram(o->program);
    free(o->rate);
    free(o->due_now);
    observe_samples_free(&o->taken);
    memset(o, 0, sizeof *o);
}
