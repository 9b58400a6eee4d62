/* Halo values from their owners (slabs.h, slabs_share_begin / _end): a pass's output on the
 * owned particles copied into the other windows that hold them, so that a solver needs one
 * halo layer where recomputing those values itself would need two. */
#include "dist/dist.h"
#include "dist/slabs.h"
#include "util/clock.h"
#include "util/err.h"

#include <stdlib.h>

/* Bytes a particle of the n buffers. */
static size_t record_bytes(const size_t *elem, int n)
{
    size_t rec = 0;
    for (int i = 0; i < n; i++)
        rec += elem[i];
    return rec;
}

/* Counts per rank of slots [span[2r], span[2r + 1]), and the byte offset of each rank's block
 * of records (the buffers' values one buffer after another within a block). */
static size_t blocks(const mz_slabs *s, const size_t *span, uint64_t *count, size_t *off,
                     size_t rec)
{
    size_t at = 0;
    for (int r = 0; r < s->ranks; r++) {
        count[r] = span[2 * r + 1] - span[2 * r];
        off[r] = at;
        at += (size_t)count[r] * rec;
    }
    return at;
}

int slabs_share_begin(mz_slabs *s, const cl_mem *bufs, const size_t *elem, int n)
{
    double t0 = now_seconds();
    mz_cl *cl = s->grid->cl;
    int P = s->ranks;
    size_t rec = record_bytes(elem, n);
    uint64_t *count = xmalloc((size_t)P * sizeof *count);
    size_t *off = xmalloc((size_t)P * sizeof *off);
    size_t bytes = blocks(s, s->give, count, off, rec);
    bool ok = mz_cl_pinned_room(cl, (void **)&s->share_out, &s->share_out_pin,
                                &s->share_out_cap, bytes + 16) != NULL;
    for (int r = 0; r < P && ok; r++) {
        size_t at = off[r];
        for (int i = 0; i < n && ok && count[r] > 0; i++) {
            ok = cl_ok(clEnqueueReadBuffer(cl->queue, bufs[i], CL_FALSE, s->give[2 * r] * elem[i],
                                           (size_t)count[r] * elem[i], s->share_out + at, 0,
                                           NULL, NULL),
                       "clEnqueueReadBuffer(halo values)");
            at += (size_t)count[r] * elem[i];
        }
    }
    /* A marker after the reads: the in-order queue finishes them first. */
    ok = ok && cl_ok(clEnqueueMarkerWithWaitList(cl->queue, 0, NULL, &s->share_read),
                     "clEnqueueMarkerWithWaitList(halo values)") &&
         cl_ok(clFlush(cl->queue), "clFlush(halo values)");
    free(count);
    free(off);
    s->share_s += now_seconds() - t0;
    return ok ? 0 : -1;
}

int slabs_share_end(mz_slabs *s, const cl_mem *bufs, const size_t *elem, int n)
{
    mz_cl *cl = s->grid->cl;
    int P = s->ranks;
    size_t rec = record_bytes(elem, n);
    uint64_t *give = xmalloc((size_t)P * sizeof *give), *take = xmalloc((size_t)P * sizeof *take);
    size_t *give_off = xmalloc((size_t)P * sizeof *give_off);
    size_t *take_off = xmalloc((size_t)P * sizeof *take_off);
    blocks(s, s->give, give, give_off, rec);
    size_t bytes = blocks(s, s->take, take, take_off, rec);
    /* Flushed first: what the caller enqueued since _begin runs while this rank waits. */
    bool ok = s->share_read && cl_ok(clFlush(cl->queue), "clFlush(halo values)") &&
              cl_ok(clWaitForEvents(1, &s->share_read),
                                     "clWaitForEvents(halo values)");
    if (s->share_read)
        clReleaseEvent(s->share_read);
    s->share_read = NULL;
    double t0 = now_seconds(); /* the wait was for the density pass: compute, not sharing */
    ok = ok && mz_cl_pinned_room(cl, (void **)&s->share_in, &s->share_in_pin, &s->share_in_cap,
                                 bytes + 16) != NULL;
    if (!ok) /* the other ranks wait in the all-to-all */
        dist_abort(MZ_EXIT_RUNTIME);
    dist_alltoallv_records(s->share_out, give, s->share_in, take, rec);
    /* Not waited for: the next share starts after the next exchange has drained the queue. */
    for (int r = 0; r < P && ok; r++) {
        size_t at = take_off[r];
        for (int i = 0; i < n && ok && take[r] > 0; i++) {
            ok = cl_ok(clEnqueueWriteBuffer(cl->queue, bufs[i], CL_FALSE,
                                            s->take[2 * r] * elem[i], (size_t)take[r] * elem[i],
                                            s->share_in + at, 0, NULL, NULL),
                       "clEnqueueWriteBuffer(halo values)");
            at += (size_t)take[r] * elem[i];
        }
    }
    free(give);
    free(take);
    free(give_off);
    free(take_off);
    s->share_s += now_seconds() - t0;
    return ok ? 0 : -1;
}

void slabs_share_drop(mz_slabs *s)
{
    if (!s->share_read)
        return;
    clWaitForEvents(1, &s->share_read); /* share_out is read into until then */
    clReleaseEvent(s->share_read);
    s->share_read = NULL;
}
