/* Reopening an output to go on writing it after `mizu run --resume`: every series cut back to
 * the frames the checkpoint was written after, and the sidecar rewritten to match. */
#include "io/h5_file.h"
#include "io/h5_read.h"

#include "util/filelock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open series name of the file (rank 1–3) and cut it to `rows`; its second dimension must be
 * n (rank > 1). The dataset, or -1 after reporting. */
static hid_t reopen_series(mz_h5_out *o, const char *name, hsize_t n, hsize_t rows)
{
    if (H5Lexists(o->file, name, H5P_DEFAULT) <= 0) {
        mz_error("resuming into %s: it has no %s (it was not written by this scene's run)",
                 o->path, name);
        return -1;
    }
    hid_t d = H5Dopen2(o->file, name, H5P_DEFAULT), s = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[3] = {0, 0, 0};
    int rank = s < 0 ? -1 : H5Sget_simple_extent_dims(s, dims, NULL);
    h5_close_id(s);
    if (rank < 1) {
        h5_fail(o->path, "opening %s", name);
    } else if (rank > 1 && dims[1] != n) {
        mz_error("resuming into %s: %s has %llu rows per frame; the run has %llu", o->path,
                 name, (unsigned long long)dims[1], (unsigned long long)n);
    } else if (dims[0] < rows) {
        mz_error("resuming into %s: %s has %llu frames, fewer than the %llu the checkpoint "
                 "was written after", o->path, name, (unsigned long long)dims[0],
                 (unsigned long long)rows);
    } else {
        dims[0] = rows;
        if (H5Dset_extent(d, dims) >= 0)
            return d;
        h5_fail(o->path, "cutting %s back to %llu frames", name, (unsigned long long)rows);
    }
    h5_close_id(d);
    return -1;
}

/* Rows of a dataset written at creation (triangles, wall particles); 0 when absent. */
static size_t rows_of(const mz_h5_out *o, const char *name)
{
    hsize_t dims[3] = {0, 0, 0};
    return h5_dataset_dims(o->file, name, dims) < 1 ? 0 : (size_t)dims[0];
}

/* The sidecar again, naming the frames kept. */
static int rewrite_xdmf(mz_h5_out *o)
{
    size_t n_tri = rows_of(o, "/connectivity/triangles");
    size_t n_boundary = rows_of(o, "/particles/boundary/position");
    char *xdmf = h5_out_xdmf_path(o->path);
    o->xdmf = xdmf_create(xdmf, o->path, o->n, o->fields, n_tri, n_boundary, o->n_moving);
    free(xdmf);
    if (!o->xdmf || o->frames == 0)
        return o->xdmf ? 0 : -1;
    int64_t *step = xmalloc((size_t)o->frames * sizeof *step);
    double *time = xmalloc((size_t)o->frames * sizeof *time);
    int rc = H5Dread(o->step, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, step) < 0 ||
                     H5Dread(o->time, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, time) < 0
                 ? -1
                 : 0;
    if (rc)
        h5_fail(o->path, "reading the frames' steps and times");
    for (long f = 0; rc == 0 && f < o->frames; f++)
        rc = xdmf_append_frame(o->xdmf, f, (long)step[f], time[f]);
    free(step);
    free(time);
    return rc;
}

/* The run id the output was created with ("" when it has none: written before run ids). */
static char *output_run_id(const mz_h5_out *o)
{
    char *id = h5_read_str_attr(o->file, "/parameters/run", "run_id");
    return id ? id : xstrdup("");
}

/* Frames the output holds now (rows of position/step); -1 when it cannot tell. */
static long output_rows(const mz_h5_out *o)
{
    if (H5Lexists(o->file, "/particles/all/position/step", H5P_DEFAULT) <= 0)
        return -1;
    hid_t d = H5Dopen2(o->file, "/particles/all/position/step", H5P_DEFAULT);
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[1] = {0};
    long rows = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
                        H5Sget_simple_extent_dims(sp, dims, NULL) == 1
                    ? (long)dims[0]
                    : -1;
    h5_close_id(sp);
    h5_close_id(d);
    return rows;
}

/* Before anything is cut: the output is the checkpoint's run's (its boundary particles move
 * when this run's do, in the layout this mizu writes), and the resumed run will not end with
 * fewer frames than it holds now. 0, or -1 after reporting. */
static int check_reopen(const mz_h5_out *o, const char *run_id, long final_frames)
{
    char *id = output_run_id(o);
    long rows = output_rows(o);
    hsize_t mdims[3] = {0, 0, 0}; /* the moving colliders' particles, a row each frame */
    bool moves = h5_dataset_dims(o->file, MOVING_VALUE, mdims) == 3;
    int rc = -1;
    if (strcmp(id, run_id) != 0)
        mz_error("cannot resume into %s: it was written by another run (run id %s; the "
                 "checkpoint's is %s). Give -o the checkpoint's own output, or a new path",
                 o->path, id[0] ? id : "none", run_id);
    else if (rows < 0)
        mz_error("cannot resume into %s: it has no readable frame series", o->path);
    else if (h5_exists(o->file, OLD_BOUNDARY_VALUE))
        mz_error("cannot resume into %s: it keeps its moving boundary in the layout of an "
                 "earlier mizu (every wall particle a row each frame in %s); give -o a new "
                 "path", o->path, OLD_BOUNDARY_VALUE);
    else if (moves != (o->moving_at != NULL))
        mz_error("cannot resume into %s: its boundary particles %s and this run's %s (it was not "
                 "written by this scene's run)", o->path, moves ? "move" : "do not move",
                 moves ? "do not" : "do");
    else if (moves && mdims[1] != o->n_moving)
        mz_error("cannot resume into %s: it has %llu moving boundary particles and this run "
                 "%zu (it was not written by this scene's run)", o->path,
                 (unsigned long long)mdims[1], o->n_moving);
    else if (rows > final_frames)
        mz_error("cannot resume into %s: it holds %ld frames and the resumed run would end with "
                 "%ld, dropping the rest (give --frames for at least as many, or a new -o)",
                 o->path, rows, final_frames);
    else
        rc = 0;
    free(id);
    return rc;
}

/* The moving colliders' series, cut back like the frames: it must hold as many particles as
 * this run moves. 0, or -1 after reporting. */
static int reopen_moving(mz_h5_out *o, long frames)
{
    if (!o->moving_at)
        return 0;
    o->moving = reopen_series(o, MOVING_VALUE, o->n_moving, (hsize_t)frames);
    if (o->moving < 0)
        return -1;
    o->moving_buf = xmalloc(3 * o->n_moving * sizeof *o->moving_buf);
    return 0;
}

mz_h5_out *h5_out_reopen(const char *path, size_t n, unsigned fields, const mz_h5_static *st,
                         long frames, const char *run_id, long final_frames)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    size_t n_rigids = st ? st->n_rigids : 0;
    mz_h5_out *o = h5_file_new(path, n, fields, st);
    o->frames = frames;
    /* The lock first: a run still writing the file keeps it. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if ((o->fd = open(path, O_RDWR)) < 0)
        mz_error("cannot resume into %s: %s", path, strerror(errno));
    else if (file_lock(o->fd, path, "output") == 0 && fapl >= 0 &&
             MZ_FILE_LOCKING_OFF(fapl) >= 0 &&
             (o->file = H5Fopen(path, H5F_ACC_RDWR, fapl)) < 0)
        h5_fail(path, "opening the output to resume it");
    h5_close_id(fapl);
    if (o->file < 0 || check_reopen(o, run_id, final_frames) != 0)
        goto fail;
    char name[96];
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(o->fields & MZ_FIELD_BIT(f)))
            continue;
        snprintf(name, sizeof name, "/particles/all/%s/value", mz_field_infos[f].name);
        if ((o->value[f] = reopen_series(o, name, n, (hsize_t)frames)) < 0)
            goto fail;
    }
    o->step = reopen_series(o, "/particles/all/position/step", 0, (hsize_t)frames);
    o->time = o->step < 0 ? -1 : reopen_series(o, "/particles/all/position/time", 0,
                                               (hsize_t)frames);
    if (o->time < 0)
        goto fail;
    if (n_rigids > 0) {
        o->rigid_com = reopen_series(o, RIGID "/center_of_mass/value", n_rigids, (hsize_t)frames);
        o->rigid_quat = o->rigid_com < 0 ? -1
                                         : reopen_series(o, RIGID "/orientation/value", n_rigids,
                                                         (hsize_t)frames);
        if (o->rigid_quat < 0)
            goto fail;
        o->rigid_buf = xmalloc(7 * n_rigids * sizeof *o->rigid_buf);
    }
    if (reopen_moving(o, frames))
        goto fail;
    char status[64];
    snprintf(status, sizeof status, "resumed after frame %ld", frames);
    if (h5_put_int_attr(o, "/parameters/run", "frames_written", frames) ||
        h5_put_int_attr(o, "/parameters/run", "complete", 0) ||
        h5_put_str_attr(o, "/parameters/run", "status", status) ||
        h5_views_resume(o, frames) || rewrite_xdmf(o))
        goto fail;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(path, "flushing");
        goto fail;
    }
    h5_file_trim(o);
    return o;
fail:
    h5_file_discard(o, 0);
    return NULL;
}
