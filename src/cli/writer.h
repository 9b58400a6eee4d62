/* A writer thread: a single-process run hands each frame's finished readback to it and goes on
 * driving the device, so that putting a frame in id order and writing it to HDF5 overlaps the
 * next frame's steps instead of holding them up. One job at a time: submitting waits for the
 * one before. Under mpirun frames are written on the main thread (their blocks travel through
 * MPI collectives). */
#ifndef MZ_WRITER_H
#define MZ_WRITER_H
#include <stdbool.h>
#include <threads.h>

typedef int (*writer_fn)(void *ctx, void *job); /* 0, or -1 after reporting */

typedef struct mz_writer {
    thrd_t thread;
    mtx_t lock;
    cnd_t changed;
    writer_fn write;
    void *ctx;
    void *job;   /* submitted, not yet written (NULL: idle) */
    int failed;  /* a write returned non-zero: later jobs are refused */
    bool stop, started;
} mz_writer;

/* Start the thread. 0, or -1 after reporting. */
int writer_start(mz_writer *w, writer_fn write, void *ctx);
/* Wait until the writer is idle, then hand it job. -1 (job not taken) when a write failed. */
int writer_submit(mz_writer *w, void *job);
/* Wait until every submitted job is written: 0, or -1 when any write failed. */
int writer_wait(mz_writer *w);
/* Wait, then end the thread (no-op if it never started). */
void writer_stop(mz_writer *w);

#endif
