/* The output file's handle and what creating, appending and resuming all use: HDF5 failures
 * reported with the system's reason, attributes, disk space reserved before HDF5 writes, and
 * closing.
 *
 * Every object is addressed by its absolute path from the file, so error messages can name it.
 * HDF5's own error printing is off; failures are reported as "writing PATH: WHAT failed: WHY",
 * WHY being the system's reason when HDF5 recorded one ("No space left on device"). */
#define _GNU_SOURCE /* fallocate's FALLOC_FL_KEEP_SIZE */
#include "io/h5_file.h"

#include "dist/dist.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- error reporting ---- */

typedef struct h5_reason {
    char text[256];
    int have_errno_text;
} h5_reason;

/* HDF5's file drivers put strerror's text in their message as "error message = '...'". */
static herr_t reason_walk(unsigned depth, const H5E_error2_t *e, void *data)
{
    static const char key[] = "error message = '";
    h5_reason *r = data;
    const char *m = e->desc ? strstr(e->desc, key) : NULL;
    if (m && !r->have_errno_text) {
        m += sizeof key - 1;
        snprintf(r->text, sizeof r->text, "%.*s", (int)strcspn(m, "'"), m);
        r->have_errno_text = 1;
    } else if (depth == 0 && e->desc && !r->text[0]) {
        snprintf(r->text, sizeof r->text, "%s", e->desc);
    }
    return 0;
}

/* Report a failed HDF5 call. Call it before any other HDF5 call: each one clears the stack. */
void h5_fail(const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    h5_reason r = {{0}, 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_walk, &r);
    if (r.text[0])
        mz_error("writing %s: %s failed: %s", path, what, r.text);
    else
        mz_error("writing %s: %s failed", path, what);
}

/* ---- small HDF5 helpers ---- */

/* Close an id this module created (never a predefined type). */
bool h5_allocated_early(hid_t d)
{
    hid_t p = d < 0 ? -1 : H5Dget_create_plist(d);
    H5D_alloc_time_t t = H5D_ALLOC_TIME_ERROR;
    bool ok = p >= 0 && H5Pget_alloc_time(p, &t) >= 0 && t == H5D_ALLOC_TIME_EARLY;
    h5_close_id(p);
    return ok;
}

void h5_close_id(hid_t id)
{
    if (id < 0)
        return;
    switch (H5Iget_type(id)) {
    case H5I_GROUP:
    case H5I_DATASET: H5Oclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: break;
    }
}

hid_t h5_untimed_plist(hid_t cls)
{
    hid_t p = H5Pcreate(cls);
    if (p >= 0 && H5Pset_obj_track_times(p, 0) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

hid_t h5_str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

/* Attribute OBJ@NAME holding n values (n 0: one scalar), replacing any earlier one. */
int h5_put_attr(const mz_h5_out *o, const char *obj, const char *name, hid_t ftype,
                    hid_t mtype, size_t n, const void *v)
{
    hsize_t dim = n;
    hid_t space = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_SCALAR), a = -1;
    int ok = space >= 0 && ftype >= 0 && mtype >= 0;
    if (ok && H5Aexists_by_name(o->file, obj, name, H5P_DEFAULT) > 0)
        ok = H5Adelete_by_name(o->file, obj, name, H5P_DEFAULT) >= 0;
    if (ok)
        a = H5Acreate_by_name(o->file, obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT);
    ok = a >= 0 && H5Awrite(a, mtype, v) >= 0;
    if (!ok)
        h5_fail(o->path, "writing attribute %s@%s", obj, name);
    h5_close_id(a);
    h5_close_id(space);
    return ok ? 0 : -1;
}

int h5_put_str_attr(const mz_h5_out *o, const char *obj, const char *name, const char *s)
{
    s = s ? s : "";
    hid_t t = h5_str_type();
    int rc = h5_put_attr(o, obj, name, t, t, 0, &s);
    h5_close_id(t);
    return rc;
}

int h5_put_int_attr(const mz_h5_out *o, const char *obj, const char *name, int64_t v)
{
    return h5_put_attr(o, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &v);
}

/* ---- the handle ---- */

mz_h5_out *h5_file_new(const char *path, size_t n, unsigned fields, const mz_h5_static *st)
{
    mz_h5_out *o = xcalloc(1, sizeof *o);
    o->path = xstrdup(path);
    o->n = n;
    o->fields = fields | MZ_FIELD_BIT(MZ_FIELD_POSITION);
    o->file = o->step = o->time = o->rigid_com = o->rigid_quat = o->moving = -1;
    if (st) {
        o->n_rigids = st->n_rigids;
        o->n_boundary = st->n_boundary;
        o->moving_at = st->n_moving ? st->moving_at : NULL;
        o->n_moving = o->moving_at ? st->n_moving : 0;
        o->moving_ctx = st->moving_ctx;
    }
    o->fd = -1;
    o->dxpl = H5P_DEFAULT;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        o->value[f] = -1;
    return o;
}

int h5_file_discard(mz_h5_out *o, int failed_create)
{
    int rc = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        h5_close_id(o->value[f]);
    h5_close_id(o->step);
    h5_close_id(o->time);
    h5_close_id(o->rigid_com);
    h5_close_id(o->rigid_quat);
    h5_close_id(o->moving);
    free(o->rigid_buf);
    free(o->moving_buf);
    h5_obs_free(o->obs);
    if (o->par)
        h5_close_id(o->dxpl);
    /* After a failed creation the first message said it all. (Collective when par.) */
    if (o->file >= 0 && H5Fclose(o->file) < 0) {
        if (!failed_create)
            h5_fail(o->path, "closing");
        rc = -1;
    }
    /* Collective writes leave reserved blocks past the end (h5_file_reserve): every rank's
     * writes are done once the close returns, and truncating to the size frees them. */
    struct stat st;
    if (o->par && o->fd >= 0 && fstat(o->fd, &st) == 0)
        (void)!ftruncate(o->fd, st.st_size);
    if (o->fd >= 0)
        close(o->fd);
    if (xdmf_close(o->xdmf, failed_create))
        rc = -1;
    if (failed_create && o->owned)
        remove(o->path);
    free(o->path);
    free(o);
    return rc;
}

bool h5_rank0(const mz_h5_out *o) { return !o->par || dist_rank() == 0; }

int h5_agree(const mz_h5_out *o, int rc)
{
    return o->par ? (dist_max_int(rc != 0) ? -1 : 0) : rc;
}

/* Give back reserved space HDF5 did not use. Not while the file is collective: the mpio driver
 * cannot say the file's size (H5Fget_filesize fails), and the reservation there leaves the
 * size alone (h5_file_reserve); the blocks past the end are given back at the close. */
void h5_file_trim(const mz_h5_out *o)
{
    if (o->par)
        return;
    hsize_t size;
    if (H5Fget_filesize(o->file, &size) >= 0 && ftruncate(o->fd, (off_t)size) != 0)
        mz_warn("writing %s: giving back reserved space: %s", o->path, strerror(errno));
}

/* Reserve disk space for what the next flush may add (bytes of data and a margin for
 * metadata) before HDF5 writes any of it. A flush that fails half way for lack of space leaves
 * the superblock's end-of-file ahead of the data, and HDF5 then refuses the whole file as
 * "truncated"; failing here instead keeps every frame before. */
int h5_file_reserve(const mz_h5_out *o, unsigned long long bytes, const char *what)
{
    struct stat st;
    if (o->par) {
        /* Rank 0 reserves for every rank, blocks past the end without changing the size (which
         * the mpio driver sets itself), and says whether there was room. */
        int err = 0;
        if (dist_rank() == 0) {
            off_t len = (off_t)(bytes + RESERVE_MARGIN);
            struct rlimit lim;
            err = fstat(o->fd, &st) != 0 ? errno : 0;
            /* posix_fallocate refuses to grow a file past the process's size limit; blocks
             * past the end are not checked against it, so the limit is checked here (the
             * ranks share rank 0's, as mpirun passes it on). */
            if (!err && getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
                (unsigned long long)st.st_size + (unsigned long long)len > lim.rlim_cur)
                err = EFBIG;
            if (!err && fallocate(o->fd, FALLOC_FL_KEEP_SIZE, st.st_size, len) != 0)
                err = errno == EINVAL || errno == EOPNOTSUPP ? 0 : errno;
            if (err)
                mz_error("writing %s: no room for %s: %s", o->path, what, strerror(err));
        }
        dist_bcast(&err, sizeof err);
        return err ? -1 : 0;
    }
    int err = fstat(o->fd, &st) != 0 ? errno
                                     : xdmf_reserve_space(o->fd, st.st_size,
                                                  (off_t)(bytes + RESERVE_MARGIN));
    if (!err)
        return 0;
    mz_error("writing %s: no room for %s: %s", o->path, what, strerror(err));
    h5_file_trim(o); /* a failed reservation may have taken part of the space */
    return -1;
}

void h5_out_no_exit_handler(void) { H5dont_atexit(); }

char *h5_out_xdmf_path(const char *h5_path) { return xdmf_path_for(h5_path); }

long h5_out_frames(const mz_h5_out *o)
{
    return o ? o->frames : 0;
}

const char *h5_out_path(const mz_h5_out *o)
{
    return o->path;
}

int h5_out_close(mz_h5_out *o, bool complete, const char *status)
{
    if (!o)
        return 0;
    int rc = 0;
    char rec[256];
    if (o->par) { /* every rank writes the record: rank 0's */
        int c = complete;
        snprintf(rec, sizeof rec, "%s", status ? status : "");
        dist_bcast(&c, sizeof c);
        dist_bcast(rec, sizeof rec);
        complete = c != 0;
        status = rec;
    }
    h5_out_abort_frame(o); /* a frame begun and never committed is not kept */
    /* Without room the record is left as it is (complete 0), rather than risk the file. */
    if (h5_file_reserve(o, 0, "the run's end record") ||
        h5_put_int_attr(o, "/parameters/run", "complete", complete ? 1 : 0) ||
        h5_put_str_attr(o, "/parameters/run", "status", status))
        rc = -1;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing");
        rc = -1;
    }
    h5_file_trim(o);
    return h5_file_discard(o, 0) || rc ? -1 : 0;
}
