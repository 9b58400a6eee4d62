/* Probes, gauges and forces on solids under mpirun (observe_dist.h). */
#include "solvers/observe_dist.h"

#include "device/grid.h"
#include "dist/dist.h"
#include "dist/slabs.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

typedef struct mz_obs_dist {
    size_t n_points; /* the probes, then the gauges' points */
    /* The sample being assembled: the layers either side of a point's that it sums (2 on the
     * step's grid, probe_sums; 1 after the next build, probe_near), and its cells' sums a
     * point (MZ_PROBE_GROUP or MZ_NEAR_LANES of kernels/grid/probes.cl). */
    int reach;
    size_t group;
    int *layer;      /* per point: its layer along the slab axis, as the device finds it */
    cl_mem parts;    /* per point, group cells' sums (float8): those probe_sums left */
    cl_mem fin_parts, fin_which; /* rank 0: the points to finish, their cells assembled */
    cl_kernel k_finish, k_finish_near, k_layers;
    float *row;      /* the sample row, read back; on rank 0 completed and written again */
    float *gsums;    /* the gauges' points' sums (8 floats each), the same way */
    float *cells;    /* the cells' sums of the points this rank shares, as parts holds them */
    float *fin;      /* rank 0: the cells of the points to finish, group × 8 floats each */
    cl_uint *which;  /* rank 0: those points */
    size_t *fin_at;  /* rank 0: per point, its place among them */
    float *send, *recv;
    size_t send_cap, recv_cap; /* floats */
} mz_obs_dist;

typedef enum { ROLE_NONE, ROLE_WHOLE, ROLE_PART } point_role;

/* What rank r does for a point of layer L: nothing (none of its layers L ± reach is r's),
 * finish it (all of them that are in the grid are r's), or sum its cells of r's layers.
 * probe_sums and probe_near decide alike. */
static point_role role_of(const mz_slabs *s, int reach, int r, int L)
{
    int a = L - reach > 0 ? L - reach : 0;
    int b = L + reach < s->layers - 1 ? L + reach : s->layers - 1;
    if (a >= s->lo[r] && b < s->hi[r])
        return ROLE_WHOLE;
    return b < s->lo[r] || a >= s->hi[r] ? ROLE_NONE : ROLE_PART;
}

/* The sums that travel for point i: a probe's first 6 (weight, pressure, density, velocity),
 * a gauge's point's weight alone; the kernel leaves the others 0, and so does the assembly. */
static size_t sums_of(const mz_observers *o, size_t i) { return i < o->n_probes ? 6 : 1; }

/* Floats a rank sends for point i as it does role k: a finished point's row (a probe's 6
 * values) or weight (a gauge's point), or its cells' sums. */
static size_t floats_for(const mz_observers *o, point_role k, size_t i)
{
    return k == ROLE_WHOLE ? sums_of(o, i) : k == ROLE_PART ? sums_of(o, i) * o->dist->group : 0;
}

/* Floats rank r sends for a sample of points [from, to) and n_loads loads. */
static size_t floats_of(const mz_observers *o, const mz_slabs *s, int r, size_t from, size_t to,
                        size_t n_loads)
{
    size_t n = 6 * n_loads;
    for (size_t i = from; i < to; i++)
        n += floats_for(o, role_of(s, o->dist->reach, r, o->dist->layer[i]), i);
    return n;
}

static float *room(float **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        *cap = n + n / 2;
        *buf = xrealloc(*buf, *cap * sizeof **buf);
    }
    return *buf;
}

/* A device failure in the middle of a collective: every rank ends. */
static void check(bool ok)
{
    if (!ok)
        dist_abort(MZ_EXIT_RUNTIME);
}

int observe_dist_create(mz_observers *o, mz_sim *sim)
{
    if (!sim->slabs || !dist_active() || o->n_probes + o->n_gauges + o->n_loads == 0)
        return 0;
    mz_obs_dist *d = o->dist = xcalloc(1, sizeof *o->dist);
    d->n_points = o->n_probes + o->n_gauge_pts;
    /* room for the larger of the two searches' cells */
    size_t np = d->n_points ? d->n_points : 1, cells = 32 * 128 * np;
    d->layer = xcalloc(np, sizeof *d->layer);
    d->row = xcalloc(o->row, sizeof *d->row);
    d->gsums = xcalloc(8 * (o->n_gauge_pts ? o->n_gauge_pts : 1), sizeof *d->gsums);
    d->fin = xmalloc(cells);
    d->cells = xmalloc(cells);
    d->which = xcalloc(np, sizeof *d->which);
    d->fin_at = xcalloc(np, sizeof *d->fin_at);
    cl_int err;
    d->k_finish = clCreateKernel(o->program, "probe_finish", &err);
    if (!cl_ok(err, "clCreateKernel(probe_finish)"))
        return -1;
    d->k_finish_near = clCreateKernel(o->program, "probe_finish_near", &err);
    if (!cl_ok(err, "clCreateKernel(probe_finish_near)"))
        return -1;
    d->k_layers = clCreateKernel(o->program, "probe_layers", &err);
    if (!cl_ok(err, "clCreateKernel(probe_layers)"))
        return -1;
    d->parts = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, cells, NULL, "clCreateBuffer(probe cells)");
    d->fin_parts = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, cells, NULL,
                                "clCreateBuffer(probe cells)");
    d->fin_which = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 4 * np, NULL,
                                "clCreateBuffer(probe cells)");
    if (!d->parts || !d->fin_parts || !d->fin_which)
        return -1;
    if (d->n_points == 0)
        return 0;
    /* The points' layers, once: the points stand still and the grid's cells with them. */
    cl_uint n = (cl_uint)d->n_points;
    return KARGS(d->k_layers, "probe_layers", A(sim->grid->desc), A(o->points), A(n),
                 A(d->fin_which)) &&
                   sim_launch(sim, d->k_layers, d->n_points, MZ_STAGE_OBSERVE, "probe_layers") &&
                   cl_ok(clEnqueueReadBuffer(sim->cl->queue, d->fin_which, CL_TRUE, 0,
                                             4 * d->n_points, d->layer, 0, NULL, NULL),
                         "clEnqueueReadBuffer(probe layers)")
               ? 0
               : -1;
}

void observe_dist_args(const mz_observers *o, const mz_sim *sim, cl_int *own_lo,
                       cl_int *own_hi, cl_mem *parts)
{
    if (!o->dist) {
        *own_lo = *own_hi = 0;
        *parts = o->rows;
        return;
    }
    *own_lo = sim->slabs->lo[sim->slabs->rank];
    *own_hi = sim->slabs->hi[sim->slabs->rank];
    *parts = o->dist->parts;
}

/* This rank's part of the sample into d->send, in point order (floats_for), then the loads' 6
 * floats each. Waits for the device. The floats. */
static size_t pack(mz_observers *o, mz_sim *sim, size_t slot, size_t from, size_t to,
                   bool gauges, size_t n_loads)
{
    mz_obs_dist *d = o->dist;
    const mz_slabs *s = sim->slabs;
    cl_command_queue q = sim->cl->queue;
    float *send = room(&d->send, &d->send_cap, floats_of(o, s, s->rank, from, to, n_loads) + 1);
    bool ok = cl_ok(clEnqueueReadBuffer(q, o->rows, CL_FALSE, 4 * slot * o->row, 4 * o->row,
                                        d->row, 0, NULL, NULL),
                    "clEnqueueReadBuffer(sample row)");
    if (ok && gauges)
        ok = cl_ok(clEnqueueReadBuffer(q, o->gauge_sums, CL_FALSE, 0, 32 * o->n_gauge_pts,
                                       d->gsums, 0, NULL, NULL),
                   "clEnqueueReadBuffer(gauge sums)");
    /* The shared points' cells into d->cells as the device lays them out, a run of consecutive
     * points a read. */
    size_t run = 0, cell_floats = 8 * d->group;
    for (size_t i = from; ok && i <= to; i++) {
        bool part = i < to && role_of(s, o->dist->reach, s->rank, d->layer[i]) == ROLE_PART;
        if (!part && run > 0) {
            size_t first = i - run;
            ok = cl_ok(clEnqueueReadBuffer(q, d->parts, CL_FALSE, 4 * cell_floats * first,
                                           4 * cell_floats * run, d->cells + cell_floats * first,
                                           0, NULL, NULL),
                       "clEnqueueReadBuffer(probe cells)");
            run = 0;
        }
        run += part;
    }
    check(ok && cl_ok(clFinish(q), "clFinish(samples)"));
    float *at = send;
    for (size_t i = from; i < to; i++) {
        point_role k = role_of(s, o->dist->reach, s->rank, d->layer[i]);
        size_t m = sums_of(o, i);
        if (k == ROLE_WHOLE && i < o->n_probes)
            memcpy(at, d->row + 6 * i, 6 * sizeof *at);
        else if (k == ROLE_WHOLE)
            at[0] = d->gsums[8 * (i - o->n_probes)];
        for (size_t c = 0; k == ROLE_PART && c < d->group; c++)
            memcpy(at + m * c, d->cells + cell_floats * i + 8 * c, m * sizeof *at);
        at += floats_for(o, k, i);
    }
    memcpy(at, d->row + 6 * o->n_probes + o->n_gauges, 6 * n_loads * sizeof *at);
    return (size_t)(at - send) + 6 * n_loads;
}

/* Rank 0: every rank's part (recv, in rank order) into d->row, d->gsums and the points to
 * finish. How many of those. */
static size_t unpack(mz_observers *o, const mz_slabs *s, size_t from, size_t to,
                     size_t n_loads)
{
    mz_obs_dist *d = o->dist;
    size_t cell_floats = 8 * d->group, nfin = 0;
    for (size_t i = from; i < to; i++) {
        bool whole = false;
        for (int r = 0; r < s->ranks && !whole; r++)
            whole = role_of(s, o->dist->reach, r, d->layer[i]) == ROLE_WHOLE;
        if (!whole) {
            d->fin_at[i] = nfin;
            d->which[nfin++] = (cl_uint)i;
        }
    }
    memset(d->fin, 0, nfin * cell_floats * sizeof *d->fin);
    float *loads = d->row + 6 * o->n_probes + o->n_gauges;
    const float *p = d->recv;
    for (int r = 0; r < s->ranks; r++) {
        for (size_t i = from; i < to; i++) {
            point_role k = role_of(s, o->dist->reach, r, d->layer[i]);
            size_t m = sums_of(o, i);
            if (k == ROLE_WHOLE && i < o->n_probes) {
                memcpy(d->row + 6 * i, p, 6 * sizeof *p);
            } else if (k == ROLE_WHOLE) {
                float *g = d->gsums + 8 * (i - o->n_probes);
                memset(g, 0, 8 * sizeof *g);
                g[0] = p[0];
            }
            /* Each cell is one rank's, zero in the others': the sum is that rank's, exactly. */
            float *cells = d->fin + d->fin_at[i] * cell_floats;
            for (size_t c = 0; k == ROLE_PART && c < d->group; c++)
                for (size_t q = 0; q < m; q++)
                    cells[8 * c + q] += p[m * c + q];
            p += floats_for(o, k, i);
        }
        /* The ranks' forces, added in rank order: the same ranks give the same bits. */
        for (size_t c = 0; c < 6 * n_loads; c++)
            loads[c] = r == 0 ? p[c] : loads[c] + p[c];
        p += 6 * n_loads;
    }
    return nfin;
}

void observe_dist_assemble(mz_observers *o, mz_sim *sim, size_t slot, bool probes, bool gauges,
                           bool loads, bool near)
{
    mz_obs_dist *d = o->dist;
    const mz_slabs *s = sim->slabs;
    bool three = sim->scene->sim.dimensions == 3;
    d->reach = near ? 1 : 2;
    d->group = near ? (three ? 32 : 16) : (three ? 128 : 32);
    cl_kernel finish = near ? d->k_finish_near : d->k_finish;
    size_t from = probes ? 0 : o->n_probes;
    size_t to = gauges ? o->n_probes + o->n_gauge_pts : probes ? o->n_probes : 0;
    size_t n_loads = loads ? o->n_loads : 0;
    from = from < to ? from : to;
    size_t mine = pack(o, sim, slot, from, to, gauges, n_loads);
    size_t total = 0;
    if (s->rank == 0)
        for (int r = 0; r < s->ranks; r++)
            total += floats_of(o, s, r, from, to, n_loads);
    room(&d->recv, &d->recv_cap, total + 1);
    dist_gather_bytes(d->send, 4 * mine, d->recv);
    if (s->rank != 0)
        return;
    size_t nfin = unpack(o, s, from, to, n_loads);
    cl_command_queue q = sim->cl->queue;
    /* Non-blocking: the next sample's read-back waits for these before the host buffers are
     * filled again (one in-order queue). */
    bool ok = cl_ok(clEnqueueWriteBuffer(q, o->rows, CL_FALSE, 4 * slot * o->row, 4 * o->row,
                                         d->row, 0, NULL, NULL),
                    "clEnqueueWriteBuffer(sample row)");
    if (ok && gauges)
        ok = cl_ok(clEnqueueWriteBuffer(q, o->gauge_sums, CL_FALSE, 0, 32 * o->n_gauge_pts,
                                        d->gsums, 0, NULL, NULL),
                   "clEnqueueWriteBuffer(gauge sums)");
    if (ok && nfin > 0) {
        cl_uint base = (cl_uint)(slot * o->row), np = (cl_uint)o->n_probes;
        cl_mem gsums = o->gauge_sums ? o->gauge_sums : o->rows;
        ok = cl_ok(clEnqueueWriteBuffer(q, d->fin_parts, CL_FALSE, 0,
                                        4 * 8 * d->group * nfin, d->fin, 0, NULL, NULL),
                   "clEnqueueWriteBuffer(probe cells)") &&
             cl_ok(clEnqueueWriteBuffer(q, d->fin_which, CL_FALSE, 0, 4 * nfin, d->which, 0,
                                        NULL, NULL),
                   "clEnqueueWriteBuffer(probe cells)") &&
             KARGS(finish, "probe_finish", A(d->fin_parts), A(d->fin_which), A(np),
                   A(o->inv_rest), A(o->rows), A(base), A(gsums)) &&
             sim_launch_local(sim, finish, 0, nfin * d->group, d->group, MZ_STAGE_OBSERVE,
                              "probe_finish");
    }
    check(ok);
}

void observe_dist_release(mz_observers *o, mz_cl *cl)
{
    mz_obs_dist *d = o->dist;
    if (!d)
        return;
    if (cl && cl->queue) /* the writes from the host buffers below */
        clFinish(cl->queue);
    cl_kernel ks[] = {d->k_finish, d->k_finish_near, d->k_layers};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {d->parts, d->fin_parts, d->fin_which};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    free(d->layer);
    free(d->row);
    free(d->gsums);
    free(d->fin);
    free(d->cells);
    free(d->which);
    free(d->fin_at);
    free(d->send);
    free(d->recv);
    free(d);
    o->dist = NULL;
}
