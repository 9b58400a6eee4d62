/* io/: files mizu writes and reads back: the H5MD output (this header; h5_create.c,
 * h5_frames.c, h5_resume.c over the shared handle of h5_file.c; under mpirun written by every
 * rank through parallel HDF5, h5_collective.c), its XDMF sidecar (xdmf.c),
 * checkpoints (checkpoint.c; a distributed run's in checkpoint_ranks.c) and reading helpers
 * (h5_read.c). May include: solvers/ (the state a checkpoint saves), dist/, build/, device/,
 * scene/, util/.
 *
 * Output: HDF5 in the H5MD 1.1 layout, plus an XDMF sidecar for ParaView/VisIt.
 *
 *   /h5md                       attrs version=[1,1]; groups author (name), creator (name, version)
 *   /particles/all/box          attrs dimension=3, boundary=["none","none","none"]; edges [3]
 *                               (attr unit "m")
 *   /particles/all/id           [N] int32, particle ids (output rows are in id order: row i = id i)
 *   /particles/all/body         [N] int32, index of the scene body that made each particle
 *   /particles/all/phase        [N] int32, MZ_PHASE_* of each particle (0 fluid, 1 cloth,
 *                               2 softbody, 3 rigid)
 *   /particles/all/<field>/     step [F] int64, time [F] float64 (frame / fps: the frame's
 *                               nominal time, not the steps' rounded sum),
 *                               value [F, N, 3] or [F, N] float32, extendible along F,
 *                               one chunk per frame, attr unit
 *   /particles/boundary/        only for SPH with particle walls: box as /particles/all's, and
 *     position                  [B, 3] float32 (attr unit "m"), the domain's walls and the
 *                               colliders without motion as built, a time-independent element
 *                               (all the wall and collider particles when none moves)
 *   /particles/moving_boundary/ only when colliders move: box as /particles/all's, and
 *     position/                 step, time (hard links to /particles/all/position's),
 *                               value [F, M, 3] float32: the moving colliders' particles (in
 *                               the builder's order) at each frame's time, extendible along F,
 *                               one chunk per frame, attr unit "m"
 *   /connectivity/triangles     [M, 3] int32, particle ids (= rows) of the cloth surfaces'
 *                               triangles, attr particles_group = object reference to
 *                               /particles/all; only when there are triangles
 *   /observables/rigid/         only when there are rigid bodies (B > 0):
 *     body                      [B] int32, each rigid's body index (as in /particles/all/body)
 *     center_of_mass/           step, time (hard links to /particles/all/position's),
 *                               value [F, B, 3] float32, attr unit "m"
 *     orientation/              step, time (the same links), value [F, B, 4] float32:
 *                               quaternion (x, y, z, w), scalar last (the order of scipy's
 *                               Rotation.from_quat); it rotates the body's rest offsets (from
 *                               its initial centre of mass, along the world axes) into the
 *                               world: a particle is at center_of_mass + R(q) r, r its rest
 *                               offset. Attrs convention (that sentence), quaternion_order
 *                               "x y z w". Both values extendible along F, one chunk per frame.
 *   /parameters/scene/          given (the scene text), effective (every key as used),
 *                               overrides (the --set arguments), path
 *   /parameters/build/          version, git_revision, compiler, hdf5, device, platform, driver,
 *                               kernel_build_options, devices_by_rank ("0: name; 1: name; ...")
 *                               (scalar strings); attr ranks (the processes of the run: 1, or
 *                               N under mpirun -np N)
 *   /parameters/run             attrs complete (0 until a clean close), frames_written, status,
 *                               run_id (the run that created the file; its checkpoints carry it)
 *
 * The file is flushed after every frame, so a killed run leaves a readable file of the frames
 * written so far; `complete` = 0 tells a reader the run did not finish. OUT.xdmf beside OUT.h5
 * (xdmf.h) is kept valid after every frame. Dataset creation times are not recorded, so two
 * identical runs write byte-identical files. */
#ifndef MZ_H5_OUT_H
#define MZ_H5_OUT_H
#include "scene/fields.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mz_h5_meta {
    const char *scene_path;
    const char *scene_given;
    const char *scene_effective;
    const char *const *overrides;
    size_t n_overrides;
    const char *device, *platform, *driver, *kernel_build_options;
    int ranks;                  /* processes of the run (0 is taken as 1) */
    const char *devices_by_rank; /* "0: name; 1: name; ..." (NULL: "0: " device) */
    const char *run_id; /* /parameters/run@run_id: checkpoints name it (io/checkpoint.h) */
    /* The frames will be written collectively (h5_out_collective): the series are made so that
     * parallel HDF5 can (their chunks allocated as they grow). Their data is the same. */
    bool collective;
    double domain_min[3], domain_max[3];
} mz_h5_meta;

/* What does not change over the run, per particle and between particles. */
typedef struct mz_h5_static {
    const uint32_t *body;      /* n body indices in id order, or NULL: all 0 (or body_of) */
    /* Or, without body: the body indices of ids [first, first + count) into out, asked for a
     * block at a time (a distributed run's rank 0 holds no array of all of them). */
    void (*body_of)(const void *ctx, size_t first, size_t count, uint32_t *out);
    const void *body_ctx;
    const uint32_t *phase;     /* n MZ_PHASE_* values, or NULL: all 0 (or phase_of) */
    /* Or, without phase: the phases of ids [first, first + count), as body_of (body_ctx). */
    void (*phase_of)(const void *ctx, size_t first, size_t count, uint32_t *out);
    const uint32_t *triangles; /* 3 particle ids per triangle (cloth surfaces), or NULL */
    size_t n_triangles;        /* 0: no connectivity */
    size_t n_rigids;           /* B rigid bodies with a pose every frame; 0: no /observables */
    const uint32_t *rigid_body; /* B body indices (as in body), required when B > 0 */
    /* SPH wall and collider particles that stay put, 3 floats each, written once (or NULL) */
    const float *boundary;
    size_t n_boundary;          /* 0: no /particles/boundary */
    /* The moving colliders' n_moving particles at time t into out (3 floats each, always in one
     * order), called as each frame is committed: /particles/moving_boundary. 0 / NULL: none. */
    size_t n_moving;
    void (*moving_at)(const void *ctx, double t, float *out);
    const void *moving_ctx;
} mz_h5_static;

typedef struct mz_h5_out mz_h5_out;

/* Create or truncate PATH (and PATH's .xdmf) for n particles and the fields in the mask
 * (MZ_FIELD_BIT). gzip_level 0: no compression. meta and st may be NULL (all empty).
 * NULL after reporting why (mz_error), leaving no file behind. */
mz_h5_out *h5_out_create(const char *path, size_t n, unsigned fields, int gzip_level,
                         const mz_h5_meta *meta, const mz_h5_static *st);

/* Open an output written earlier by the same run to go on writing it (a resumed run): check
 * that its run id is run_id, that it holds at most final_frames frames (the resumed run would
 * otherwise drop some), and that it has n particles, the fields, st's B rigid bodies and st's
 * moving boundary particles (n_moving, moving_at); then cut every series back to its first
 * `frames` frames (frames written after the checkpoint are written again) and rewrite the
 * sidecar. Of st only n_rigids, n_boundary and the moving ones are read. The run record is set to incomplete.
 * NULL after reporting; the file is untouched when a check fails. */
mz_h5_out *h5_out_reopen(const char *path, size_t n, unsigned fields, const mz_h5_static *st,
                         long frames, const char *run_id, long final_frames);

/* Append one frame. data[f] for each field in the mask: components × n floats in id order.
 * rigid_pose: with B rigid bodies, 8 floats per body as the device keeps them (mz_sim's
 * rigid_pose): centre of mass x, y, z, (unused), then quaternion x, y, z, w; NULL when B = 0.
 * Moving boundary particles are placed at `time` (mz_h5_static's moving_at). The particle
 * fields, the poses and the boundary go in together or not at all. Flushes the file and
 * updates the sidecar. 0, or -1 after reporting (the frames before stay). */
int h5_out_write_frame(mz_h5_out *o, long step, double time,
                       const float *const data[MZ_FIELD_COUNT], const float *rigid_pose);

/* The same in pieces, for rows that arrive a block at a time (a distributed run's ranks):
 * begin grows every series by the frame's row; write_rows writes rows [first, first + count)
 * of each field (data[f]: components × count floats); commit writes the step, time and poses,
 * flushes and updates the sidecar. A failure rolls the frame back (as does abort_frame), and
 * rows never written read as zeros until commit. Each 0, or -1 after reporting. When the file
 * is collective (h5_out_collective) every rank calls each of them, write_rows with its own id
 * block's rows (collective writes), and each one's result is agreed among the ranks. */
int h5_out_begin_frame(mz_h5_out *o);
int h5_out_write_rows(mz_h5_out *o, size_t first, size_t count,
                      const float *const data[MZ_FIELD_COUNT]);
int h5_out_commit_frame(mz_h5_out *o, long step, double time, const float *rigid_pose);
void h5_out_abort_frame(mz_h5_out *o);

/* Under mpirun (more than one rank; collective, every rank calls it): go on with the output
 * through parallel HDF5. Rank 0 holds *out, made by h5_out_create (with meta->collective) or
 * h5_out_reopen; the other ranks NULL. Unless the file's series cannot be written collectively
 * (a file made by one process, or before this, when resumed) or MIZU_COLLECTIVE_OUTPUT=0 is in
 * rank 0's environment, rank 0 closes its HDF5 handle (keeping the lock and the sidecar) and
 * every rank opens the file with the mpio driver: *out is then set on every rank (the layout
 * from rank 0's), and from here on every rank makes every call on it (begin, write_rows with its
 * own id block's rows, commit, abort, close: each agreed among the ranks). Otherwise *out stays
 * rank 0's alone, as before. The scene's observables (h5_out_add_observables, or cut back by
 * h5_out_reopen_observables) go along: every rank then appends the samples
 * (h5_out_write_samples), rank 0 writing the rows. 0; or -1 on every rank after reporting,
 * *out closed (and a file this run created removed). A build without parallel HDF5: nothing,
 * 0. */
struct mz_scene;
int h5_out_collective(mz_h5_out **out, const char *path, const struct mz_scene *s);
/* Whether o is written collectively (every rank holds it). */
bool h5_out_is_collective(const mz_h5_out *o);

/* The scene's probes, gauges and forces on solids (/observables/probes, /observables/gauges,
 * /observables/colliders, /observables/walls: h5_observables.c), after h5_out_create; on a resumed output (after h5_out_reopen) opened
 * and cut back to the samples of steps up to `step`, the checkpoint's. Nothing without any.
 * 0, or -1 after reporting. */
struct mz_samples;
int h5_out_add_observables(mz_h5_out *o, const struct mz_scene *s);
int h5_out_reopen_observables(mz_h5_out *o, const struct mz_scene *s, long step);
/* Append the first `count` samples of t (rows of `row` floats, as solvers/observe.h lays them
 * out): each observer's due ones, then flush. When the file is collective every rank calls it
 * with the same samples (their rows only rank 0's are written). 0, or -1 after reporting
 * (agreed when collective). */
int h5_out_write_samples(mz_h5_out *o, const struct mz_samples *t, size_t count, size_t row);

long h5_out_frames(const mz_h5_out *o);
const char *h5_out_path(const mz_h5_out *o);

/* Record the outcome (complete: the run finished; status: a short line such as "finished" or
 * "stopped by SIGTERM at frame 12"), flush and close. 0, or -1 after reporting. */
int h5_out_close(mz_h5_out *o, bool complete, const char *status);

/* Call first thing in main: mizu closes its files itself, and HDF5 1.10's exit handler crashes
 * on a file whose close failed (a full disk), turning exit 1 into a segfault. */
void h5_out_no_exit_handler(void);

/* The sidecar's path for an output path: "out.h5" -> "out.xdmf". Caller frees. */
char *h5_out_xdmf_path(const char *h5_path);

#endif
