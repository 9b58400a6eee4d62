/* The frames on their way to the output file (frames.h). */
#include "cli/frames.h"

#include "cli/signals.h"
#include "dist/dist.h"
#include "dist/id_blocks.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_components(mz_field f) { return mz_field_infos[f].components == 3 ? 4 : 1; }

static void free_slot(mz_cl *cl, mz_readback *rb)
{
    if (rb->id)
        mz_cl_unpin(cl, rb->pin_id, rb->id);
    rb->id = NULL;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (rb->raw[f])
            mz_cl_unpin(cl, rb->pin_raw[f], rb->raw[f]);
    memset(rb->raw, 0, sizeof rb->raw);
    observe_samples_free(&rb->samples);
}

/* Bytes a particle of a slot: device layout and ids, or rows in id order (by_id). */
static double slot_bytes(unsigned fields, bool by_id)
{
    if (by_id)
        return (double)frame_rows_bytes(fields, 1);
    double per = 4;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (fields & MZ_FIELD_BIT(f))
            per += 4.0 * device_components(f);
    return per;
}

/* Whether the device has room for `bytes` more beside the run's buffers. NVIDIA's OpenCL backs
 * each pinned buffer with device memory of its size too (measured on an H200: 7.5 × 10^8
 * particles, 86.2 GB of buffers counted, 116.9 GB used by the driver, the slots' 30 GB the
 * difference; at 10^9 the first forces launch failed to allocate). */
static bool device_room(const mz_cl *cl, double bytes)
{
    return (double)mz_cl_memory().live + bytes < 0.9 * (double)cl->global_mem;
}

/* Whether the two slots of n particles may be pinned: on a GPU only where the device has room
 * for them beside the run's buffers, else they are plain host memory (the copy is staged by the
 * driver, slower, and the run fits). A CPU device's pinned memory is host memory. */
static bool slots_pinned(const mz_cl *cl, unsigned fields, bool by_id, size_t n)
{
    return (cl->type & CL_DEVICE_TYPE_CPU) ||
           device_room(cl, 2 * slot_bytes(fields, by_id) * (double)n);
}

/* Whether the device puts frames in id order: one process (ranks exchange blocks by id
 * instead), a GPU (a CPU device reorders on the same cores as the host would, for the price of
 * a buffer), and room for the rows and the pinned slots beside the run's buffers.
 * MIZU_FRAME_ROWS=device or host decides instead, in one process (tests, benchmarks). */
static bool rows_by_id(const mz_cl *cl, unsigned fields, size_t n)
{
    if (dist_active() || n == 0)
        return false;
    const char *force = getenv("MIZU_FRAME_ROWS");
    if (force && (!strcmp(force, "device") || !strcmp(force, "host")))
        return !strcmp(force, "device");
    return !(cl->type & CL_DEVICE_TYPE_CPU) &&
           device_room(cl, 3 * slot_bytes(fields, true) * (double)n);
}

/* One array of a slot: pinned (pin: the device copies a frame out by DMA instead of staging
 * it; the copy sits on the in-order queue, before the next frame's steps) or plain. */
static void *slot_array(mz_cl *cl, size_t bytes, bool pin, cl_mem *holder)
{
    *holder = NULL;
    return pin ? mz_cl_pinned(cl, bytes, holder) : xmalloc(bytes ? bytes : 16);
}

/* Room for n particles in a readback (its contents are not kept). */
static void size_slot(mz_cl *cl, mz_readback *rb, unsigned fields, bool by_id, size_t n)
{
    free_slot(cl, rb);
    bool pin = slots_pinned(cl, fields, by_id, n);
    rb->cap = n;
    if (!by_id)
        rb->id = slot_array(cl, 4 * n, pin, &rb->pin_id);
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (fields & MZ_FIELD_BIT(f)) {
            int c = by_id ? mz_field_infos[f].components : device_components(f);
            rb->raw[f] = slot_array(cl, 4 * (size_t)c * n, pin, &rb->pin_raw[f]);
        }
}

/* The rigid bodies' poses of the same instant as the particles: queued with them on q, never
 * read later. Nothing without rigid bodies. */
static bool read_poses(cl_command_queue q, const mz_sim *sim, mz_readback *rb)
{
    return sim->n_rigids == 0 ||
           cl_ok(clEnqueueReadBuffer(q, sim->rigid_pose, CL_FALSE, 0,
                                     8 * sizeof(cl_float) * sim->n_rigids, rb->rigid_pose, 0,
                                     NULL, NULL),
                 "clEnqueueReadBuffer(rigid_pose)");
}

/* by_id: the fields into rows on the device, then copied out on the copy queue while the next
 * frame runs; rb->done completes with the copies. The rigid poses, read on the first queue,
 * are done before the copies start. */
static bool enqueue_rows(mz_frames *fr, mz_sim *sim, mz_readback *rb)
{
    cl_command_queue q = sim->cl->queue;
    cl_event ready = NULL;
    bool ok = frame_rows_enqueue(&fr->rows, sim, fr->fields, fr->last_copy);
    if (ok)
        ok = read_poses(q, sim, rb);
    ok = ok && cl_ok(clEnqueueMarkerWithWaitList(q, 0, NULL, &ready), "clEnqueueMarkerWithWaitList") &&
         cl_ok(clFlush(q), "clFlush");
    for (int f = 0; ok && f < MZ_FIELD_COUNT; f++) {
        if (!(fr->fields & MZ_FIELD_BIT(f)))
            continue;
        size_t bytes = 4 * (size_t)mz_field_infos[f].components * rb->count;
        char what[64];
        snprintf(what, sizeof what, "clEnqueueReadBuffer(%s rows)", mz_field_infos[f].name);
        ok = cl_ok(clEnqueueReadBuffer(fr->copy_queue, fr->rows.rows, CL_FALSE,
                                       4 * fr->rows.first[f], bytes, rb->raw[f], 1, &ready, NULL),
                   what);
    }
    if (ready)
        clReleaseEvent(ready);
    ok = ok && cl_ok(clEnqueueMarkerWithWaitList(fr->copy_queue, 0, NULL, &rb->done),
                     "clEnqueueMarkerWithWaitList") &&
         cl_ok(clFlush(fr->copy_queue), "clFlush");
    if (ok) {
        if (fr->last_copy)
            clReleaseEvent(fr->last_copy);
        clRetainEvent(rb->done);
        fr->last_copy = rb->done;
    }
    return ok;
}

bool frames_enqueue(mz_frames *fr, mz_sim *sim, int k, double time)
{
    mz_readback *rb = &fr->slot[k];
    unsigned fields = fr->fields;
    size_t begin, end; /* this rank's particles (all of them in one process) */
    sim_owned(sim, &begin, &end);
    size_t n = end - begin;
    if (n > rb->cap) /* a distributed rank's share grew */
        size_slot(sim->cl, rb, fields, fr->by_id, n + n / 4);
    rb->count = n;
    if (fr->by_id) {
        rb->step = sim->step;
        rb->time = time;
        rb->pending = enqueue_rows(fr, sim, rb);
        return rb->pending;
    }
    cl_command_queue q = sim->cl->queue;
    bool ok = cl_ok(clEnqueueReadBuffer(q, sim->id, CL_FALSE, 4 * begin, 4 * n, rb->id, 0, NULL,
                                        NULL),
                    "clEnqueueReadBuffer(id)");
    for (int f = 0; ok && f < MZ_FIELD_COUNT; f++) {
        if (!(fields & MZ_FIELD_BIT(f)))
            continue;
        size_t elem = 4 * (size_t)device_components(f), bytes = elem * n;
        char what[64];
        snprintf(what, sizeof what, "clEnqueueReadBuffer(%s)", mz_field_infos[f].name);
        ok = cl_ok(clEnqueueReadBuffer(q, *sim->field[f], CL_FALSE, elem * begin, bytes,
                                       rb->raw[f], 0, NULL, NULL),
                   what);
    }
    if (ok)
        ok = read_poses(q, sim, rb);
    /* In-order queue: a marker completes after every copy above. */
    ok = ok && cl_ok(clEnqueueMarkerWithWaitList(q, 0, NULL, &rb->done), "clEnqueueMarkerWithWaitList") &&
         cl_ok(clFlush(q), "clFlush");
    rb->step = sim->step;
    rb->time = time;
    rb->pending = ok;
    return ok;
}

void frames_drop(mz_frames *fr, int k)
{
    mz_readback *rb = &fr->slot[k];
    if (rb->pending) {
        clWaitForEvents(1, &rb->done);
        clReleaseEvent(rb->done);
    }
    rb->pending = false;
    rb->samples.count = 0;
}

/* Device layout (vec3 as 4 floats) to output rows (3). */
static void to_rows(int f, const float *raw, size_t n, float *rows)
{
    int cd = device_components(f), co = mz_field_infos[f].components;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < co; k++)
            rows[i * co + k] = raw[i * cd + k];
}

/* Under mpirun: every rank's particles to the rank of their id block; then, with the file open
 * on every rank through parallel HDF5 (h5_out_collective), every rank writes its block's rows in
 * one collective write per field, the frame committed or rolled back by all; otherwise rank 0
 * writes the blocks one after another (receiving each in turn into its own rows: no rank holds
 * more than a block). Collective. */
static int write_blocks(mz_frames *r, mz_readback *rb)
{
    size_t N = r->n_total;
    const void *src[MZ_FIELD_COUNT];
    void *dst[MZ_FIELD_COUNT];
    size_t elem[MZ_FIELD_COUNT];
    int k = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (r->fields & MZ_FIELD_BIT(f)) {
            src[k] = rb->raw[f];
            dst[k] = r->block_raw[f];
            elem[k++] = 4 * (size_t)device_components(f);
        }
    id_blocks_exchange(N, rb->count, rb->id, k, src, elem, dst);
    int me = dist_rank(), P = dist_size();
    size_t rows = id_block_first(N, me + 1) - id_block_first(N, me);
    const float *data[MZ_FIELD_COUNT] = {0};
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (r->fields & MZ_FIELD_BIT(f)) {
            to_rows(f, r->block_raw[f], rows, r->ordered[f]);
            data[f] = r->ordered[f];
        }
    if (h5_out_is_collective(r->out)) {
        size_t first = id_block_first(N, me);
        if (h5_out_begin_frame(r->out) || h5_out_write_rows(r->out, first, rows, data))
            return -1;
        return h5_out_commit_frame(r->out, rb->step, rb->time, rb->rigid_pose);
    }
    if (me != 0) {
        for (int f = 0; f < MZ_FIELD_COUNT; f++)
            if (data[f])
                dist_send_bytes(0, data[f], 4 * (size_t)mz_field_infos[f].components * rows);
        return 0;
    }
    int rc = h5_out_begin_frame(r->out);
    for (int q = 0; q < P; q++) {
        size_t first = id_block_first(N, q), count = id_block_first(N, q + 1) - first;
        for (int f = 0; q > 0 && f < MZ_FIELD_COUNT; f++) /* received even after a failure */
            if (data[f])
                dist_recv_bytes(q, r->ordered[f],
                                4 * (size_t)mz_field_infos[f].components * count);
        rc = rc ? rc : h5_out_write_rows(r->out, first, count, data);
    }
    return rc ? rc : h5_out_commit_frame(r->out, rb->step, rb->time, rb->rigid_pose);
}

/* Wait for a readback, put it in id order, append it to the file (the writer thread's job in
 * one process). */
static int write_readback(void *ctx, void *job)
{
    mz_frames *r = ctx;
    mz_readback *rb = job;
    bool ok = cl_ok(clWaitForEvents(1, &rb->done), "clWaitForEvents(readback)");
    clReleaseEvent(rb->done);
    if (!ok) {
        if (dist_active()) /* the other ranks wait in the exchange */
            dist_abort(MZ_EXIT_RUNTIME);
        return -1;
    }
    double t0 = now_seconds();
    int rc = 0;
    signals_writing(true);
    if (dist_active()) {
        rc = write_blocks(r, rb);
        /* The samples are rank 0's rows (solvers/observe_dist.h); when the file is collective
         * every rank joins the writes with the same steps and times. */
        if (rc == 0 && r->out)
            rc = h5_out_write_samples(r->out, &rb->samples, rb->samples.count, rb->sample_row);
        rb->samples.count = 0;
    } else {
        const float *data[MZ_FIELD_COUNT] = {0};
        for (int f = 0; f < MZ_FIELD_COUNT; f++) {
            if (!(r->fields & MZ_FIELD_BIT(f)))
                continue;
            if (r->by_id) { /* rows already */
                data[f] = rb->raw[f];
                continue;
            }
            int cd = device_components(f), co = mz_field_infos[f].components;
            for (size_t i = 0; i < rb->count; i++)
                for (int k = 0; k < co; k++)
                    r->ordered[f][(size_t)rb->id[i] * co + k] = rb->raw[f][i * cd + k];
            data[f] = r->ordered[f];
        }
        rc = h5_out_write_frame(r->out, rb->step, rb->time, data, rb->rigid_pose);
        if (rc == 0)
            rc = h5_out_write_samples(r->out, &rb->samples, rb->samples.count, rb->sample_row);
        rb->samples.count = 0;
    }
    signals_writing(false);
    r->write_s += now_seconds() - t0;
    return rc;
}

int frames_finish(mz_frames *fr, int k)
{
    mz_readback *rb = &fr->slot[k];
    rb->pending = false;
    if (fr->writer.started)
        return writer_submit(&fr->writer, rb);
    return dist_max_int(write_readback(fr, rb) != 0) ? -1 : 0;
}

int frames_wait(mz_frames *fr) { return writer_wait(&fr->writer); }

int frames_take_samples(mz_frames *fr, mz_sim *sim, int k, long upto)
{
    mz_observers *ob = sim->obs;
    if (!ob)
        return 0;
    /* Those up to upto were read back while the frame after ran: they land now. */
    if (observe_flush(ob, sim) != 0)
        return -1;
    if (fr->slot[k].pending) {
        observe_take(ob, upto, &fr->slot[k].samples);
        fr->slot[k].sample_row = ob->row;
    }
    return 0;
}

int frames_write_samples(mz_frames *fr, mz_sim *sim, long upto)
{
    mz_observers *ob = sim->obs;
    if (!ob)
        return 0;
    /* Under mpirun every rank keeps the samples' steps and times (rank 0 the rows): each
     * forgets them here, and writes them when it holds the file. Agreed. */
    int rc = observe_collect(ob, sim);
    if (rc == 0 && fr->out)
        rc = h5_out_write_samples(fr->out, &ob->taken, observe_upto(ob, upto), ob->row);
    observe_forget(ob, upto);
    return dist_max_int(rc != 0) ? -1 : 0;
}

int frames_start(mz_frames *fr, mz_cl *cl, mz_sim *sim, unsigned fields, size_t n_total,
                 mz_h5_out *out)
{
    *fr = (mz_frames){.cl = cl, .fields = fields, .n_total = n_total, .out = out};
    if (rows_by_id(cl, fields, sim->n)) {
        cl_int err;
        fr->copy_queue = clCreateCommandQueue(cl->ctx, cl->device, 0, &err);
        if (!cl_ok(err, "clCreateCommandQueue(frame copies)") ||
            frame_rows_init(&fr->rows, sim, fields) != 0)
            return -1;
        fr->by_id = true;
    }
    for (int b = 0; b < 2; b++) {
        size_slot(cl, &fr->slot[b], fields, fr->by_id, sim->cap);
        if (sim->n_rigids > 0)
            fr->slot[b].rigid_pose = xmalloc(8 * sizeof(cl_float) * sim->n_rigids);
    }
    size_t n = n_total;
    if (dist_active()) /* blocks differ by one at most: rank 0 takes each in turn */
        n = n / (size_t)dist_size() + 1;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if ((fields & MZ_FIELD_BIT(f)) && !fr->by_id) {
            fr->ordered[f] = xmalloc(4 * (size_t)mz_field_infos[f].components * (n ? n : 1));
            if (dist_active())
                fr->block_raw[f] = xmalloc(4 * (size_t)device_components(f) * (n ? n : 1));
        }
    return dist_active() ? 0 : writer_start(&fr->writer, write_readback, fr);
}

void frames_release(mz_frames *fr)
{
    writer_stop(&fr->writer);
    /* A failed run can leave frames queued into the slots: let the device finish first. */
    if (fr->cl && fr->cl->queue)
        clFinish(fr->cl->queue);
    if (fr->copy_queue) {
        clFinish(fr->copy_queue);
        clReleaseCommandQueue(fr->copy_queue);
    }
    if (fr->last_copy)
        clReleaseEvent(fr->last_copy);
    frame_rows_free(&fr->rows);
    for (int b = 0; b < 2; b++) {
        if (fr->slot[b].pending)
            clReleaseEvent(fr->slot[b].done);
        free_slot(fr->cl, &fr->slot[b]);
        free(fr->slot[b].rigid_pose);
    }
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        free(fr->ordered[f]);
        free(fr->block_raw[f]);
    }
    memset(fr, 0, sizeof *fr);
}
