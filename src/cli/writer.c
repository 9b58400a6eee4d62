/* The writer thread (writer.h). */
#include "cli/writer.h"

#include "util/err.h"

static int run(void *arg)
{
    mz_writer *w = arg;
    mtx_lock(&w->lock);
    for (;;) {
        while (!w->job && !w->stop)
            cnd_wait(&w->changed, &w->lock);
        if (!w->job)
            break; /* stop, nothing left */
        void *job = w->job;
        mtx_unlock(&w->lock);
        int rc = w->write(w->ctx, job);
        mtx_lock(&w->lock);
        if (rc != 0)
            w->failed = 1;
        w->job = NULL;
        cnd_broadcast(&w->changed);
    }
    mtx_unlock(&w->lock);
    return 0;
}

int writer_start(mz_writer *w, writer_fn write, void *ctx)
{
    *w = (mz_writer){.write = write, .ctx = ctx};
    if (mtx_init(&w->lock, mtx_plain) != thrd_success) {
        mz_error("cannot start the output writer (mutex)");
        return -1;
    }
    if (cnd_init(&w->changed) != thrd_success) {
        mtx_destroy(&w->lock);
        mz_error("cannot start the output writer (condition)");
        return -1;
    }
    if (thrd_create(&w->thread, run, w) != thrd_success) {
        cnd_destroy(&w->changed);
        mtx_destroy(&w->lock);
        mz_error("cannot start the output writer thread");
        return -1;
    }
    w->started = true;
    return 0;
}

static void wait_idle(mz_writer *w)
{
    while (w->job)
        cnd_wait(&w->changed, &w->lock);
}

int writer_submit(mz_writer *w, void *job)
{
    mtx_lock(&w->lock);
    wait_idle(w);
    int rc = w->failed ? -1 : 0;
    if (rc == 0) {
        w->job = job;
        cnd_broadcast(&w->changed);
    }
    mtx_unlock(&w->lock);
    return rc;
}

int writer_wait(mz_writer *w)
{
    if (!w->started)
        return 0;
    mtx_lock(&w->lock);
    wait_idle(w);
    int rc = w->failed ? -1 : 0;
    mtx_unlock(&w->lock);
    return rc;
}

void writer_stop(mz_writer *w)
{
    if (!w->started)
        return;
    mtx_lock(&w->lock);
    wait_idle(w);
    w->stop = true;
    cnd_broadcast(&w->changed);
    mtx_unlock(&w->lock);
    thrd_join(w->thread, NULL);
    cnd_destroy(&w->changed);
    mtx_destroy(&w->lock);
    w->started = false;
}
