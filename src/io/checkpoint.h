/* Checkpoints: the whole simulation state in one HDF5 file, for `mizu run --resume`.
 *
 *   /                 attrs format "mizu checkpoint", format_version 3
 *   /run              attrs frame (frames simulated), frames_written (output rows then), step,
 *                     time, dt_min, dt_max, frame_steps and frame_time (steps and seconds
 *                     into frame + 1: a run stopped between two steps), particles, solver,
 *                     device, run_id, mizu_version, digest (FNV-1a over every value of the record, util/digest.h)
 *     scene_path      the scene file as given on the command line (string)
 *     scene_given     its text, verbatim (string)
 *     overrides       the --set arguments, each ending in a NUL byte (uint8)
 *     output_path     the output file the run was writing (string)
 *     inputs          digests of the mesh files the scene read (uint64 per body, 0: none)
 *   /state            attr digest: over every part's name and bytes, in order
 *   /state/NAME       every state part (sim_state_parts) as raw bytes (uint8 [bytes])
 *
 * Reading checks both digests and the values themselves (counters, finite times, ids a
 * permutation, body indices in range) before anything reaches the device: a damaged checkpoint
 * is refused ("checkpoint damaged: ..."), never half-restored into a run.
 *
 * The scene is reloaded from its text and overrides exactly as the first run loaded it, and
 * the buffers are restored byte for byte in device order, so the run goes on bit-identically.
 * A checkpoint is written to PATH.tmp, synced, and renamed over PATH: a run killed while
 * writing one leaves the previous checkpoint whole.
 *
 * Distributed runs (sim->slabs; both calls collective): rank 0 writes the file from every
 * rank's owned stretch of each per-particle part (mz_state_part.elem), in rank order: the
 * one-process device order, so the checkpoint is a single run's. A restore checks the whole
 * state on rank 0, then gives rank r the r-th equal stretch (docs/distributed.md). */
#ifndef MZ_CHECKPOINT_H
#define MZ_CHECKPOINT_H
#include "solvers/sim.h"

/* What a checkpoint records beside the state. */
typedef struct mz_ckpt {
    long frame;          /* frames simulated: the state is at the end of this frame, */
    long frame_steps;    /* plus this many steps (frame_time seconds) into the next */
    double frame_time;
    long frames_written; /* rows in the output file at that moment */
    long step;
    double time, dt_min, dt_max;
    size_t particles;
    char *solver, *device;
    char *run_id;        /* the output's /parameters/run@run_id: whose checkpoint this is */
    char *scene_path, *scene_given, *output_path;
    char **overrides;
    size_t n_overrides;
    uint64_t *inputs;    /* digests of the OBJ files the bodies read, in body order (0: none) */
    size_t n_inputs;
} mz_ckpt;

/* The common buffers and the solver's state parts into parts[0..max); how many. */
size_t sim_state_parts(mz_sim *sim, mz_state_part *parts, size_t max);

/* Write the simulation's state and *info (frame, frames_written, run_id, the scene and output;
 * the step counters, particle count, solver, device and input digests are taken from sim). Waits for the device.
 * 0, or -1 after reporting (an earlier checkpoint at path stays as it was). */
int checkpoint_write(const char *path, mz_sim *sim, const mz_ckpt *info);

/* Whether path is a mizu checkpoint, silently: 1 with the output it belongs to in *output_path
 * (malloc'd), else 0. */
int checkpoint_peek(const char *path, char **output_path);

/* Read a checkpoint's record (not the state) into *ck. 0, or -1 after reporting. */
int checkpoint_read(const char *path, mz_ckpt *ck);
/* Put the state back into a simulation created from the same scene: buffers from path, step
 * counters from ck (its record, as checkpoint_read gave it). 0, or -1 after reporting (a part
 * missing or of another size: not this scene's checkpoint). */
int checkpoint_restore(const char *path, const mz_ckpt *ck, mz_sim *sim);
void checkpoint_free(mz_ckpt *ck);

/* The default checkpoint path for an output path: "out.h5" -> "out.ckpt.h5". Caller frees. */
char *checkpoint_default_path(const char *out_path);

#endif
