/* cli/: the mizu command: arguments (main.c), `mizu run` with its frame loop (run.c; its output
 * opened or resumed: run_output.c; what it settles first: run_plan.c, and under mpirun
 * run_dist.c), the frames' way to the file (frames.c) and its writer thread (writer.c), `mizu
 * check` (check.c), `mizu info` (info.c), `mizu compare` (compare.c), progress lines and
 * signals. May include every layer below: io/, solvers/, dist/, build/, device/, scene/, util/.
 *
 * The commands that take a scene: `mizu run` (the frame loop) and `mizu check`. */
#ifndef MZ_RUN_H
#define MZ_RUN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct mz_run_opts {
    const char *scene_path;
    const char *scene_text; /* the scene's text when it does not come from scene_path's file */
    const char *out_path;   /* -o; NULL: output.path, then the scene's name with .h5 */
    long frames;            /* --frames; 0: the scene's simulation.frames */
    double until;           /* --until SECONDS; 0: the scene's duration or frames */
    long every;             /* --every N: output.every; 0: the scene's */
    const char *fields;     /* --fields a,b,c: output.fields; NULL: the scene's */
    const char *device;     /* --device; NULL: $MIZU_DEVICE, first GPU, first CPU */
    const char *const *overrides; /* --set PATH=VALUE, in order */
    size_t n_overrides;
    bool quiet, profile;
    long checkpoint_every;       /* --checkpoint-every N frames; 0: only on a signal */
    const char *checkpoint_path; /* --checkpoint; NULL: OUT.ckpt.h5 (or the one resumed) */
    const char *resume_path;     /* --resume CKPT.h5: the scene comes from it */
    bool preview;                /* --preview: draw the set-up to OUT.preview.png first */
} mz_run_opts;

/* The scene of o (its file or scene_text, the overrides and --frames), reporting errors.
 * 0 or MZ_EXIT_USAGE. */
struct mz_scene;
int run_load_scene(const mz_run_opts *o, struct mz_scene *s);
/* Bytes of output, uncompressed, for frames first_frame .. simulation.frames (those written). */
double run_output_bytes(const struct mz_scene *s, size_t n, size_t n_rigids, long first_frame);
/* Host bytes a run of the scene's n particles takes at most: the builder's arrays while
 * building, or after the upload what stays of them and the frames in flight to the output. */
double run_host_bytes(const struct mz_scene *s, size_t n);
/* Whether a run of n particles fits the host memory left (with the device's buffers when the
 * device is a CPU): 0, or -1 after saying what is needed and what limits it. */
struct mz_cl;
int run_check_host_memory(const struct mz_cl *cl, const struct mz_scene *s, size_t n);

/* -o, else output.path, else "<scene name without .json>.h5" in the working directory:
 * malloc'd. */
char *run_output_path(const mz_run_opts *o, const struct mz_scene *s);
/* --preview: the scene's set-up drawn beside the output OUT, saying where on msg. The exit
 * code. */
int run_preview(const mz_run_opts *o, const struct mz_scene *s, const char *out, FILE *msg);

/* Under mpirun (run_dist.c): what a distributed run cannot run yet refused, with one message
 * from rank 0 and the same exit code on every rank (0 or MZ_EXIT_USAGE); and whether the
 * ranks' devices, "0: name; 1: name; ...", are one kind. */
int run_refuse_distributed(const struct mz_scene *s);
bool run_devices_match(const char *list);

/* Each returns the process exit code: 0, 1 (runtime failure) or 2 (usage or scene error). */
int cmd_run(const mz_run_opts *o);
int cmd_check(const mz_run_opts *o);

#endif
