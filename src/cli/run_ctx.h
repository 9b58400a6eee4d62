/* Inside cli/: what `mizu run` holds (run.c's frame loop) and the output's opening
 * (run_output.c: a new file, or the resumed one checked and cut back). */
#ifndef MZ_RUN_CTX_H
#define MZ_RUN_CTX_H
#include "cli/frames.h"
#include "cli/run.h"
#include "build/build.h"
#include "device/cl_ctx.h"
#include "dist/slabs.h"
#include "io/checkpoint.h"
#include "io/h5_out.h"
#include "scene/scene.h"
#include "solvers/health.h"
#include "solvers/sim.h"


/* Everything a run holds. */
typedef struct run_ctx {
    const mz_run_opts *o;
    mz_scene scene;
    char *path, *ckpt_path;
    char *run_id;    /* the output's (io/h5_out.h): new, or the resumed checkpoint's */
    char *devices;   /* rank 0: "0: device; 1: device; ..." (every rank's) */
    mz_ckpt ck;      /* the checkpoint resumed from (frame 0 when not resuming) */
    bool resumed;
    mz_cl cl;
    mz_sim sim;
    mz_particles parts; /* under mpirun: this rank's share (dist/slabs.h) */
    mz_slab_plan plan;  /* under mpirun */
    mz_health health;
    mz_h5_out *out;
    bool collective;  /* under mpirun: every rank writes the output (h5_out_collective) */
    unsigned fields;
    mz_frames frames; /* on their way to out (frames.h) */
    long checkpoints; /* written by this run */
    long ckpt_failed; /* the frame whose checkpoint could not be written; -1: the last one was */
    float *moving_rest; /* when colliders move: their output's particles as built, owners too */
    size_t n_moving;
} run_ctx;
/* Warn when the frames from first_frame on (uncompressed) exceed the free space of the
 * output's filesystem. */
void run_warn_disk_space(const run_ctx *r, long first_frame);
/* The run id of a new output (malloc'd). */
char *run_new_id(const run_ctx *r);
/* A resumed run's checkpoint against the scene it reloads. 0, or an exit code after reporting. */
int run_check_resume(const run_ctx *r);
/* Rank 0: a new output file, or for --resume the checkpoint's, cut back to its frames. 0, or -1
 * after reporting. */
int run_open_output(run_ctx *r);

#endif
