/* Inside cli/: the frames on their way from the device to the output file. After a frame's
 * steps its state is read back into one of two slots (pinned host memory, behind a marker
 * event); the slot of the frame before is then handed on: in one process to the writer thread
 * (writer.h), which puts it in id order and writes it while the next frame runs; under mpirun
 * through the id blocks (dist/id_blocks.h) to the ranks that hold them, each writing its own
 * block through parallel HDF5 (io/h5_out.h's h5_out_collective), or rank 0 writing them a block
 * at a time when the file cannot be written collectively. */
#ifndef MZ_FRAMES_H
#define MZ_FRAMES_H
#include "cli/writer.h"
#include "io/h5_out.h"
#include "solvers/frame_rows.h"
#include "solvers/observe.h"
#include "solvers/sim.h"

/* One frame in flight from the device: raw arrays in device order (or, by_id, rows in id
 * order: mz_frames), the rigid bodies' poses
 * (8 floats each, as sim->rigid_pose holds them; NULL without rigid bodies), and the event that
 * says the copies are done. */
typedef struct mz_readback {
    float *raw[MZ_FIELD_COUNT]; /* pinned host memory (mz_cl_pinned) */
    uint32_t *id;               /* NULL by_id */
    cl_mem pin_raw[MZ_FIELD_COUNT], pin_id; /* what holds them pinned */
    float *rigid_pose;
    cl_event done;
    long step;
    double time;
    size_t count, cap; /* particles read, room for */
    bool pending;
    /* Probe and gauge samples (up to this frame's step) the writer appends after the frame,
     * rows of sample_row floats; emptied once written or dropped. */
    mz_samples samples;
    size_t sample_row;
} mz_readback;

typedef struct mz_frames {
    mz_cl *cl;
    unsigned fields;   /* MZ_FIELD_BIT mask of the fields written */
    size_t n_total;    /* particles of the whole run */
    mz_h5_out *out;    /* the file (under mpirun NULL on ranks other than 0, unless collective) */
    mz_readback slot[2];
    float *ordered[MZ_FIELD_COUNT];   /* in id order: all rows, or under mpirun this rank's block */
    float *block_raw[MZ_FIELD_COUNT]; /* under mpirun: the block as the device lays it out */
    mz_writer writer;  /* one process only */
    /* One process on a GPU with room (frames.c, rows_by_id): the device puts each frame in id
     * order (solvers/frame_rows.h) and a second queue copies the rows out while the next frame's
     * steps run on the first; the next frame's rows wait for that copy (last_copy). */
    bool by_id;
    mz_frame_rows rows;
    cl_command_queue copy_queue;
    cl_event last_copy;
    double write_s;    /* seconds spent putting frames in order and writing them */
} mz_frames;

/* Slots with room for the particles sim's device holds, and the writer thread in one process.
 * 0, or -1 after reporting. */
int frames_start(mz_frames *fr, mz_cl *cl, mz_sim *sim, unsigned fields, size_t n_total,
                 mz_h5_out *out);
/* Queue sim's state for slot k, stamped with the frame's nominal time (frame / fps: the steps'
 * sum can be a rounding away, 2.99999999999999 s for frame 300 at 100 fps). The writer must be
 * done with the slot (frames_wait). false after reporting a device failure. */
bool frames_enqueue(mz_frames *fr, mz_sim *sim, int k, double time);
/* Hand slot k on to be written (collective under mpirun). 0, or -1 when this or an earlier
 * write failed. */
int frames_finish(mz_frames *fr, int k);
/* Forget slot k's queued frame (it is not to be written). */
void frames_drop(mz_frames *fr, int k);
/* Every frame handed on is on disk: 0, or -1 when one failed. */
int frames_wait(mz_frames *fr);
/* Probes and gauges (solvers/observe.h): their samples up to step `upto` (checked with the
 * frame that ends there) go to the writer with slot k's frame when it is pending, or wait for a
 * later one; the read-back of those taken since starts. Nothing without probes. 0, or -1
 * after a device failure (reported). */
int frames_take_samples(mz_frames *fr, mz_sim *sim, int k, long upto);
/* The samples up to `upto` not handed on, written now, while the writer is idle (at a
 * checkpoint, a stop, the end). 0, or -1 after reporting. */
int frames_write_samples(mz_frames *fr, mz_sim *sim, long upto);
/* Stop the writer and free the slots (after a failure too). */
void frames_release(mz_frames *fr);

#endif
