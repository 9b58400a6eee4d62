/* Rigid bodies inside the position-based solver (kernels/pbd/rigid.cl): the host sets up each body's
 * rest offsets, inertia and momenta from its particles, and launches the per-body stages. Under
 * mpirun the per-particle stages go through rigid_dist.c. */
#include "build/build.h"
#include "scene/bodies.h"
#include "solvers/pbd/pbd.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Layout of mz_rigid in kernels/pbd/rigid.cl. */
typedef struct rigid_dev {
    cl_float4 c, q, c_pred, q_pred, v, L, omega, inv_ia, inv_ib, ia, ib;
    cl_uint first, count, pad0, pad1;
} rigid_dev;

#define RIGID_GROUP 128 /* MZ_RIGID_GROUP in kernels/pbd/rigid.cl */

static cl_float4 f4(double x, double y, double z, double w)
{
    return (cl_float4){{(float)x, (float)y, (float)z, (float)w}};
}

/* Inverse of the symmetric 3×3 m (row-major), by cofactors. */
static void invert3(const double m[9], double out[9])
{
    double c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8],
           c02 = m[3] * m[7] - m[4] * m[6];
    double det = m[0] * c00 + m[1] * c01 + m[2] * c02;
    out[0] = c00 / det;
    out[1] = (m[2] * m[7] - m[1] * m[8]) / det;
    out[2] = (m[1] * m[5] - m[2] * m[4]) / det;
    out[3] = c01 / det;
    out[4] = (m[0] * m[8] - m[2] * m[6]) / det;
    out[5] = (m[2] * m[3] - m[0] * m[5]) / det;
    out[6] = c02 / det;
    out[7] = (m[1] * m[6] - m[0] * m[7]) / det;
    out[8] = (m[0] * m[4] - m[1] * m[3]) / det;
}

/* Body b's particles in slots [first, first + count) of p: centre of mass, rest offsets into r0, inertia of
 * the points (the momentum the particles carry; a body of collinear points, whose tensor is
 * singular, counts each particle as a ball of its contact radius), linear and angular momentum
 * from the particles' velocities. */
static void setup_body(const mz_particles *p, size_t first, size_t count, cl_float4 *r0,
                       rigid_dev *d)
{
    double c[3] = {0, 0, 0}, v[3] = {0, 0, 0}, I[9] = {0}, L[3] = {0, 0, 0};
    double m = 1.0 / p->inv_mass[first];
    for (size_t k = 0; k < count; k++)
        for (int a = 0; a < 3; a++) {
            c[a] += p->pos[4 * (first + k) + a] / (double)count;
            v[a] += p->vel[4 * (first + k) + a] / (double)count;
        }
    for (size_t k = 0; k < count; k++) {
        const float *x = &p->pos[4 * (first + k)], *u = &p->vel[4 * (first + k)];
        double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
        double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                I[3 * a + b] += m * ((a == b ? r2 : 0) - r[a] * r[b]);
        L[0] += m * (r[1] * u[2] - r[2] * u[1]);
        L[1] += m * (r[2] * u[0] - r[0] * u[2]);
        L[2] += m * (r[0] * u[1] - r[1] * u[0]);
        r0[k] = f4(r[0], r[1], r[2], 0);
    }
    double trace = I[0] + I[4] + I[8], rad = p->pos[4 * first + 3];
    double det = I[0] * (I[4] * I[8] - I[5] * I[7]) - I[1] * (I[3] * I[8] - I[5] * I[6]) +
                 I[2] * (I[3] * I[7] - I[4] * I[6]);
    if (!(det > 1e-9 * pow(trace / 3, 3)))
        for (int a = 0; a < 3; a++)
            I[4 * a] += 0.4 * m * rad * rad * (double)count;
    double inv[9];
    invert3(I, inv);
    d->c = d->c_pred = f4(c[0], c[1], c[2], 0);
    d->q = d->q_pred = f4(0, 0, 0, 1);
    d->v = f4(v[0], v[1], v[2], 0);
    d->L = f4(L[0], L[1], L[2], 0);
    d->ia = f4(I[0], I[4], I[8], 0);
    d->ib = f4(I[1], I[2], I[5], 0);
    d->inv_ia = f4(inv[0], inv[4], inv[8], 0);
    d->inv_ib = f4(inv[1], inv[2], inv[5], 0);
    d->first = p->id[first]; /* ids: one process's slots */
    d->count = (cl_uint)count;
}

size_t rigid_device_bytes(const mz_scene *s)
{
    size_t n = 0, nb = s->n_rigids;
    for (size_t k = 0; k < nb; k++)
        n += s->rigids[k].geom ? s->rigids[k].geom->n : 0;
    /* each body's state and pose; each particle's rest offset and owner (rigid_init) */
    return nb * (sizeof(rigid_dev) + 32) + n * (sizeof(cl_float4) + sizeof(cl_uint));
}

/* The rest offsets, inertia and momenta from all of a body's particles: a rank holds a share of
 * them, so it builds the bodies' particles whole (the same floats as one process's). */
static int setup(mz_sim *sim, pbd_state *st, const mz_particles *p);

int rigid_init(mz_sim *sim, pbd_state *st)
{
    if (!sim->plan)
        return setup(sim, st, sim->parts);
    mz_particles whole;
    build_body_particles(sim->scene, &whole);
    int rc = setup(sim, st, &whole);
    particles_free(&whole);
    return rc;
}

static int setup(mz_sim *sim, pbd_state *st, const mz_particles *p)
{
    const mz_scene *s = sim->scene;
    pbd_rigid *r = &st->rigid;
    size_t nb = s->n_rigids, first_body = s->n_fluids + s->n_cloths + s->n_meshes;
    size_t first = p->n;
    while (first > 0 && p->phase[first - 1] == MZ_PHASE_RIGID)
        first--; /* rigids come last */
    size_t n = p->n - first;
    rigid_dev *dev = xcalloc(nb, sizeof *dev);
    cl_float4 *r0 = xcalloc(n, sizeof *r0);
    cl_uint *owner = xcalloc(n, sizeof *owner);
    cl_float *pose = xcalloc(8 * nb, sizeof *pose);
    for (size_t b = 0, i = first; b < nb; b++) {
        size_t count = 0;
        while (i + count < p->n && p->body[i + count] == first_body + b)
            count++;
        setup_body(p, i, count, &r0[i - first], &dev[b]);
        for (size_t k = 0; k < count; k++)
            owner[i - first + k] = (cl_uint)b;
        memcpy(&pose[8 * b], &dev[b].c, sizeof(cl_float4));
        memcpy(&pose[8 * b + 4], &dev[b].q, sizeof(cl_float4));
        i += count;
    }
    r->nb = (cl_uint)nb;
    r->n = (cl_uint)n;
    r->first = n ? p->id[first] : 0;
    mz_cl *cl = sim->cl;
    r->bodies = mz_cl_buffer(cl, CL_MEM_READ_WRITE, nb * sizeof *dev, dev,
                             "clCreateBuffer(rigid bodies)");
    r->r0 = mz_cl_buffer(cl, CL_MEM_READ_ONLY, n * sizeof *r0, r0,
                         "clCreateBuffer(rigid rest offsets)");
    r->owner = mz_cl_buffer(cl, CL_MEM_READ_ONLY, n * sizeof *owner, owner,
                            "clCreateBuffer(rigid owners)");
    sim->rigid_pose = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 32 * nb, pose,
                                   "clCreateBuffer(rigid poses)");
    sim->n_rigids = nb;
    free(dev);
    free(r0);
    free(owner);
    free(pose);
    if (!r->bodies || !r->r0 || !r->owner || !sim->rigid_pose)
        return -1;
    static const char *const names[] = {"rigid_predict", "rigid_place", "rigid_match",
                                        "rigid_update", "rigid_velocity", NULL};
    cl_kernel *const kernels[] = {&r->predict, &r->place, &r->match, &r->update, &r->velocity};
    r->program = sim_build_kernels(sim, "pbd/rigid.cl", names, kernels);
    if (!r->program)
        return -1;
    cl_float dt = 0.0f, keep = 1.0f; /* set per substep */
    cl_uint at = 0;                  /* pred is by id from 0 */
    mz_frame_arg frame = sim_frame(s, sim->time); /* set per substep */
    cl_float4 lo = sim_float4(s->domain.min), hi = sim_float4(s->domain.max);
    return KARGS(r->predict, "rigid_predict", A(r->nb), A(dt), A(keep), A(frame),
                 A(r->bodies)) &&
                   KARGS(r->place, "rigid_place", A(r->n), A(r->first), A(r->owner), A(r->r0),
                         A(r->bodies), A(sim->pred)) &&
                   KARGS(r->match, "rigid_match", A(r->first), A(lo), A(hi), A(r->r0),
                         A(r->bodies), A(sim->pred), A(at)) &&
                   KARGS(r->update, "rigid_update", A(r->nb), A(dt), A(r->bodies),
                         A(sim->rigid_pose)) &&
                   KARGS(r->velocity, "rigid_velocity", A(r->n), A(r->first), A(r->owner),
                         A(r->r0), A(r->bodies), A(sim->vel))
               ? 0
               : -1;
}

bool rigid_predict(mz_sim *sim, pbd_state *st, float dt, float keep, const mz_frame_arg *frame)
{
    pbd_rigid *r = &st->rigid;
    return cl_ok(clSetKernelArg(r->predict, 1, sizeof dt, &dt), "clSetKernelArg(rigid_predict)") &&
           cl_ok(clSetKernelArg(r->predict, 3, sizeof *frame, frame),
                 "clSetKernelArg(rigid_predict)") &&
           cl_ok(clSetKernelArg(r->predict, 2, sizeof keep, &keep),
                 "clSetKernelArg(rigid_predict)") &&
           sim_launch(sim, r->predict, r->nb, STAGE_PREDICT, "rigid_predict") &&
           (st->dist.on ? rigid_dist_place(sim, st)
                        : sim_launch(sim, r->place, r->n, STAGE_PREDICT, "rigid_place"));
}

bool rigid_match(mz_sim *sim, pbd_state *st)
{
    pbd_rigid *r = &st->rigid;
    /* distributed: on every rank, over every body's particles gathered from their owners */
    return (!st->dist.on || rigid_dist_gather(sim, st)) &&
           sim_launch_local(sim, r->match, 0, (size_t)r->nb * RIGID_GROUP, RIGID_GROUP,
                            STAGE_SHAPE, "rigid_match") &&
           (!st->dist.on || rigid_dist_scatter(sim, st));
}

bool rigid_update(mz_sim *sim, pbd_state *st, float dt)
{
    pbd_rigid *r = &st->rigid;
    return cl_ok(clSetKernelArg(r->update, 1, sizeof dt, &dt), "clSetKernelArg(rigid_update)") &&
           sim_launch(sim, r->update, r->nb, STAGE_UPDATE, "rigid_update") &&
           (st->dist.on ? rigid_dist_velocity(sim, st)
                        : sim_launch(sim, r->velocity, r->n, STAGE_UPDATE, "rigid_velocity"));
}

void rigid_release(mz_sim *sim, pbd_rigid *r)
{
    cl_kernel ks[] = {r->predict, r->place, r->match, r->update, r->velocity};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    cl_mem ms[] = {r->bodies, r->owner, r->r0, sim->rigid_pose};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    sim->rigid_pose = NULL;
    sim->n_rigids = 0;
    rigid_dist_release(&r->dist);
    if (r->program)
        clReleaseProgram(r->program);
}
