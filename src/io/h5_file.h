/* Inside io/: the output file's handle as the files that create (h5_create.c), append to
 * (h5_frames.c) and resume (h5_resume.c) an output share it, and their common helpers
 * (h5_file.c). Not for use outside io/: the rest of mizu sees only io/h5_out.h. */
#ifndef MZ_H5_FILE_H
#define MZ_H5_FILE_H
#include "io/h5_out.h"
#include "io/h5_read.h"
#include "io/xdmf.h"
#include "util/err.h"

#include <hdf5.h>


#define RESERVE_MARGIN (1u << 20)   /* room reserved beyond a frame's data, for metadata */

#define RIGID "/observables/rigid"
/* The moving colliders' particles, a particles group of their own beside the static walls'
 * /particles/boundary: an H5MD element is either a table or a series, never both. */
#define MOVING "/particles/moving_boundary"
#define MOVING_VALUE MOVING "/position/value"
/* Where files written before that kept every boundary particle, a row each frame, when
 * colliders moved (refused on --resume). */
#define OLD_BOUNDARY_VALUE "/particles/boundary/position/value"
#define RIGID_CONVENTION                                                                        \
    "quaternion (x, y, z, w), scalar last (the order scipy.spatial.transform.Rotation.from_quat " \
    "takes); it rotates the body's rest offsets, measured from its initial centre of mass "     \
    "along the world axes, into the world frame: a particle of the body is at "                  \
    "center_of_mass + R(q) r, r its rest offset"


struct mz_h5_out {
    char *path;
    size_t n;
    unsigned fields;
    hid_t file, step, time;
    hid_t value[MZ_FIELD_COUNT];
    size_t n_rigids;   /* B: rigid bodies with a pose per frame */
    hid_t rigid_com, rigid_quat; /* /observables/rigid/{center_of_mass,orientation}/value */
    float *rigid_buf;  /* a frame's poses split: B × 3 centres, then B × 4 quaternions */
    size_t n_boundary; /* wall and collider particles that stay put (0: none) */
    size_t n_moving;   /* moving colliders' particles (0: none; then moving_at is NULL) */
    hid_t moving;      /* MOVING_VALUE when they move, else -1 */
    void (*moving_at)(const void *ctx, double t, float *out); /* mz_h5_static's */
    const void *moving_ctx;
    float *moving_buf; /* a frame's moving positions, 3 floats each */
    int fd;            /* the .h5 again, locked (one writer) and for reserving disk space */
    int owned;         /* this run created or truncated the file: a failed create removes it */
    long frames;       /* complete frames in the file */
    bool in_frame;     /* a frame begun (series one row longer), not yet committed */
    mz_xdmf *xdmf;     /* the sidecar (rank 0 only under mpirun) */
    struct h5_obs *obs; /* /observables/probes and /gauges, or NULL */
    /* Under mpirun, once h5_out_collective opened the file with the mpio driver on every rank:
     * every HDF5 call on the file is made by every rank alike, the frames' rows are written by
     * the ranks of their id blocks in one collective H5Dwrite (dxpl), and every failure is
     * agreed before a frame is committed or rolled back. Rank 0 alone keeps fd (the lock, the
     * disk reservations) and the sidecar. */
    bool par;
    hid_t dxpl;         /* collective transfer (H5FD_MPIO_COLLECTIVE) when par, else H5P_DEFAULT */
    bool alloc_early;   /* series made with HDF5's early allocation (collective writes need it) */
};

/* The sidecar's per-frame views (h5_views.c): /xdmf/<field>/<frame> for each field, and
 * /xdmf/moving_boundary/<frame> when colliders move, a virtual dataset of that frame's row. add:
 * 0, or -1 after reporting. cut: remove those of frames >= frames (a rolled-back or cut-back
 * series), best effort. */
int h5_views_add(mz_h5_out *o, long frame);
void h5_views_cut(mz_h5_out *o, long frames);
/* A resumed output of `frames` frames: views beyond cut, missing ones (a file from before the
 * views) made. 0, or -1 after reporting. */
int h5_views_resume(mz_h5_out *o, long frames);

/* Report a failed HDF5 call. Call it before any other HDF5 call: each one clears the stack. */
void h5_fail(const char *path, const char *fmt, ...) MZ_PRINTF(2, 3);
/* Close an id this module created (never a predefined type); -1 is ignored. */
void h5_close_id(hid_t id);
/* Whether dataset d allocates its chunks when it grows (H5D_ALLOC_TIME_EARLY), as a collective
 * run's series must: parallel HDF5 1.10 writes collectively only into allocated chunks. */
bool h5_allocated_early(hid_t d);
/* A creation property list of class cls (group or dataset) that stores no modification times,
 * so that two runs write the same bytes. -1 on failure. */
hid_t h5_untimed_plist(hid_t cls);
/* The string type of every string mizu writes in its outputs: variable-length UTF-8, which
 * h5py, pyh5md and ParaView read as text (fixed-length strings come back as bytes). Memory
 * buffers for it are char * pointers, one per string. */
hid_t h5_str_type(void);
/* Attribute OBJ@NAME holding n values (n 0: one scalar), replacing any earlier one; a string or
 * an int64 scalar. 0, or -1 after reporting. */
int h5_put_attr(const mz_h5_out *o, const char *obj, const char *name, hid_t ftype,
                hid_t mtype, size_t n, const void *v);
int h5_put_str_attr(const mz_h5_out *o, const char *obj, const char *name, const char *s);
int h5_put_int_attr(const mz_h5_out *o, const char *obj, const char *name, int64_t v);

/* Groups names[] (NULL-terminated, parents first), untimed. 0, or -1 after reporting. */
int h5_make_groups(const mz_h5_out *o, const char *const *names);
/* A dataset that grows by rows: dims [0, n, cols] (rank 3), [0, n] (rank 2) or [0] (rank 1),
 * unlimited along the first; chunk [rows0, n, cols] (n cut down only past HDF5's 4 GiB chunk
 * limit). Elements are 4 bytes when rank > 1. The dataset, or -1 after reporting. */
hid_t h5_series_create(const mz_h5_out *o, const char *name, hid_t ftype, int rank,
                       hsize_t rows0, int gzip_level, hsize_t n, hsize_t cols);

/* The probes' and gauges' series (h5_observables.c): closed and freed. */
struct h5_obs;
void h5_obs_free(struct h5_obs *obs);
/* The scene's observables' series opened as they are (h5_out_collective: on every rank once
 * the file is open with the mpio driver). 0, or -1 after reporting. */
int h5_obs_open(mz_h5_out *o, const struct mz_scene *s);
/* Whether every one of them was made with HDF5's early allocation (collective writes need it);
 * true without any. */
bool h5_obs_early(const struct h5_obs *obs);

/* A handle with nothing open yet (every id -1); of st (may be NULL) the rigid bodies' count,
 * the static boundary particles' count and the moving ones' count and placement. */
mz_h5_out *h5_file_new(const char *path, size_t n, unsigned fields, const mz_h5_static *st);
/* Close everything and free o; after a failed creation the files are removed too, the .h5 only
 * when this run created or truncated it (o->owned).
 * 0, or -1 after reporting a failed close. */
int h5_file_discard(mz_h5_out *o, int failed_create);
/* Give back reserved space HDF5 did not use. */
void h5_file_trim(const mz_h5_out *o);
/* Under mpirun with the file collective (o->par): true on rank 0, which alone touches fd and
 * the sidecar and writes the rows of one-per-frame values; always true otherwise. */
bool h5_rank0(const mz_h5_out *o);
/* o->par: the failure flag every rank agrees on (any rank's), else rc itself. */
int h5_agree(const mz_h5_out *o, int rc);

/* Reserve disk space for the next flush (bytes of data and a margin) before HDF5 writes any of
 * it. 0, or -1 after reporting that there is no room for `what`. */
int h5_file_reserve(const mz_h5_out *o, unsigned long long bytes, const char *what);

#endif
