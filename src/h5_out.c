/* HDF5 output in the H5MD 1.1 layout described in h5_out.h; the XDMF sidecar is xdmf.c's.
 *
 * Every object is addressed by its absolute path from the file, so error messages can name it.
 * HDF5's own error printing is off; failures are reported as "writing PATH: WHAT failed: WHY",
 * WHY being the system's reason when HDF5 recorded one ("No space left on device"). */
#include "h5_out.h"
#include "err.h"
#include "xdmf.h"

#include <hdf5.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* H5Pset_file_locking came with HDF5 1.10.7 and 1.12.1. */
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 11, 0)) || H5_VERSION_GE(1, 12, 1)
#define MZ_FILE_LOCKING_OFF(fapl) H5Pset_file_locking(fapl, 0, 1)
#else
#define MZ_FILE_LOCKING_OFF(fapl) 0
#endif

#ifndef MIZU_VERSION
#define MIZU_VERSION "unknown"
#endif
#ifndef MIZU_GIT_REV
#define MIZU_GIT_REV "unknown"
#endif

#if defined(__clang__)
#define MZ_COMPILER "clang " __VERSION__
#elif defined(__GNUC__)
#define MZ_COMPILER "gcc " __VERSION__
#else
#define MZ_COMPILER "unknown"
#endif

#define TIME_CHUNK 1024            /* frames per chunk of step/time (8 KiB) */
#define MAX_CHUNK_BYTES 0xffffffffu /* HDF5's limit on one chunk */
#define RESERVE_MARGIN (1u << 20)   /* room reserved beyond a frame's data, for metadata */

struct mz_h5_out {
    char *path;
    size_t n;
    unsigned fields;
    hid_t file, step, time;
    hid_t value[MZ_FIELD_COUNT];
    size_t n_rigids;   /* B: rigid bodies with a pose per frame */
    hid_t rigid_com, rigid_quat; /* /observables/rigid/{center_of_mass,orientation}/value */
    float *rigid_buf;  /* a frame's poses split: B × 3 centres, then B × 4 quaternions */
    int fd;            /* the .h5 again, for reserving disk space (HDF5 has its own) */
    long frames;       /* complete frames in the file */
    mz_xdmf *xdmf;     /* the sidecar */
};

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
static void h5_fail(const char *path, const char *fmt, ...) MZ_PRINTF(2, 3);
static void h5_fail(const char *path, const char *fmt, ...)
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
static void close_id(hid_t id)
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

/* Creation property list without timestamps: identical runs give identical bytes. */
static hid_t untimed_plist(hid_t cls)
{
    hid_t p = H5Pcreate(cls);
    if (p >= 0 && H5Pset_obj_track_times(p, 0) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

/* Fixed-length UTF-8 string type of len characters plus the NUL (h5py reads it as bytes). */
static hid_t str_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, len + 1) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
                   H5Tset_strpad(t, H5T_STR_NULLTERM) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

static int make_groups(const mz_h5_out *o, const char *const *names)
{
    hid_t gcpl = untimed_plist(H5P_GROUP_CREATE);
    for (; *names; names++) {
        hid_t g = gcpl < 0 ? -1 : H5Gcreate2(o->file, *names, H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (g < 0) {
            h5_fail(o->path, "creating group %s", *names);
            close_id(gcpl);
            return -1;
        }
        H5Gclose(g);
    }
    close_id(gcpl);
    return 0;
}

/* Attribute OBJ@NAME holding n values (n 0: one scalar), replacing any earlier one. */
static int put_attr(const mz_h5_out *o, const char *obj, const char *name, hid_t ftype,
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
    close_id(a);
    close_id(space);
    return ok ? 0 : -1;
}

static int put_str_attr(const mz_h5_out *o, const char *obj, const char *name, const char *s)
{
    s = s ? s : "";
    hid_t t = str_type(strlen(s));
    int rc = put_attr(o, obj, name, t, t, 0, s);
    close_id(t);
    return rc;
}

static int put_int_attr(const mz_h5_out *o, const char *obj, const char *name, int64_t v)
{
    return put_attr(o, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &v);
}

/* Dataset NAME of n rows of cols values (cols 0: [n]; scalar: one value), contiguous. */
static int put_table(const mz_h5_out *o, const char *name, hid_t ftype, hid_t mtype,
                     int scalar, size_t n, size_t cols, const void *v)
{
    hsize_t dims[2] = {n, cols};
    hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(cols ? 2 : 1, dims, NULL);
    hid_t dcpl = untimed_plist(H5P_DATASET_CREATE), d = -1;
    if (space >= 0 && dcpl >= 0 && ftype >= 0 && mtype >= 0)
        d = H5Dcreate2(o->file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int ok = d >= 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
    if (!ok)
        h5_fail(o->path, "writing %s", name);
    close_id(d);
    close_id(dcpl);
    close_id(space);
    return ok ? 0 : -1;
}

/* Dataset NAME of n values (n 0 with scalar: one value), contiguous. */
static int put_dataset(const mz_h5_out *o, const char *name, hid_t ftype, hid_t mtype,
                       int scalar, size_t n, const void *v)
{
    return put_table(o, name, ftype, mtype, scalar, n, 0, v);
}

static int put_str(const mz_h5_out *o, const char *name, const char *s)
{
    s = s ? s : "";
    hid_t t = str_type(strlen(s));
    int rc = put_dataset(o, name, t, t, 1, 0, s);
    close_id(t);
    return rc;
}

/* A list of strings as a [n] dataset of fixed-length strings as long as the longest. */
static int put_str_list(const mz_h5_out *o, const char *name, const char *const *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w = s[i] && strlen(s[i]) > w ? strlen(s[i]) : w;
    char *buf = xcalloc(n ? n : 1, w + 1);
    for (size_t i = 0; i < n; i++)
        if (s[i])
            memcpy(buf + i * (w + 1), s[i], strlen(s[i]));
    hid_t t = str_type(w);
    int rc = put_dataset(o, name, t, t, 0, n, buf);
    close_id(t);
    free(buf);
    return rc;
}

/* ---- file layout ---- */

static int write_h5md(const mz_h5_out *o)
{
    static const char *const groups[] = {"/h5md", "/h5md/author", "/h5md/creator",
                                         "/h5md/modules", "/h5md/modules/units", NULL};
    static const int32_t version[2] = {1, 1}, units_version[2] = {1, 0};
    const char *user = getenv("USER");
    if (!user || !*user)
        user = "unknown";
    return make_groups(o, groups) ||
                   put_attr(o, "/h5md", "version", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, version) ||
                   put_str_attr(o, "/h5md/author", "name", user) ||
                   put_str_attr(o, "/h5md/creator", "name", "mizu") ||
                   put_str_attr(o, "/h5md/creator", "version", MIZU_VERSION) ||
                   put_attr(o, "/h5md/modules/units", "version", H5T_STD_I32LE,
                            H5T_NATIVE_INT32, 2, units_version) ||
                   put_str_attr(o, "/h5md/modules/units", "system", "SI")
               ? -1
               : 0;
}

/* [n] int32 from n uint32 values, or zeros for NULL. */
static int put_per_particle(const mz_h5_out *o, const char *name, const uint32_t *v)
{
    uint32_t *zeros = v ? NULL : xcalloc(o->n, sizeof *zeros);
    int rc = put_dataset(o, name, H5T_STD_I32LE, H5T_NATIVE_UINT32, 0, o->n, v ? v : zeros);
    free(zeros);
    return rc;
}

static int write_particles(const mz_h5_out *o, const mz_h5_meta *m, const mz_h5_static *st)
{
    static const char *const groups[] = {"/particles", "/particles/all", "/particles/all/box",
                                         NULL};
    static const char boundary[3][5] = {"none", "none", "none"};
    double edges[3];
    for (int k = 0; k < 3; k++)
        edges[k] = m->domain_max[k] - m->domain_min[k];
    hid_t t = str_type(4);
    int rc = make_groups(o, groups) ||
             put_int_attr(o, "/particles/all/box", "dimension", 3) ||
             put_attr(o, "/particles/all/box", "boundary", t, t, 3, boundary) ||
             put_dataset(o, "/particles/all/box/edges", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0,
                         3, edges);
    close_id(t);
    if (rc)
        return -1;
    /* Rows are in id order, so id is 0..n-1; it is written for H5MD readers that look for it. */
    int32_t *id = xmalloc(o->n * sizeof *id);
    for (size_t i = 0; i < o->n; i++)
        id[i] = (int32_t)i;
    rc = put_dataset(o, "/particles/all/id", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, o->n, id);
    free(id);
    if (rc)
        return -1;
    return put_per_particle(o, "/particles/all/body", st->body) ||
                   put_per_particle(o, "/particles/all/phase", st->phase)
               ? -1
               : 0;
}

/* H5MD 1.1 connectivity: /connectivity/triangles, [M, 3] particle indices (rows of
 * /particles/all, which are ids), its particles_group attribute an object reference to
 * /particles/all. Nothing without triangles. */
static int write_connectivity(const mz_h5_out *o, const mz_h5_static *st)
{
    static const char *const groups[] = {"/connectivity", NULL};
    static const char name[] = "/connectivity/triangles";
    if (st->n_triangles == 0)
        return 0;
    if (make_groups(o, groups) || put_table(o, name, H5T_STD_I32LE, H5T_NATIVE_UINT32, 0,
                                            st->n_triangles, 3, st->triangles))
        return -1;
    /* An object reference is the object's address in the file: as reproducible as the rest. */
    hobj_ref_t ref;
    if (H5Rcreate(&ref, o->file, "/particles/all", H5R_OBJECT, -1) < 0) {
        h5_fail(o->path, "referring to /particles/all from %s", name);
        return -1;
    }
    return put_attr(o, name, "particles_group", H5T_STD_REF_OBJ, H5T_STD_REF_OBJ, 0, &ref);
}

static int write_parameters(const mz_h5_out *o, const mz_h5_meta *m)
{
    static const char *const groups[] = {"/parameters", "/parameters/scene", "/parameters/build",
                                         "/parameters/run", NULL};
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5[64];
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    return make_groups(o, groups) || put_str(o, "/parameters/scene/given", m->scene_given) ||
                   put_str(o, "/parameters/scene/effective", m->scene_effective) ||
                   put_str_list(o, "/parameters/scene/overrides", m->overrides,
                                m->overrides ? m->n_overrides : 0) ||
                   put_str(o, "/parameters/scene/path", m->scene_path) ||
                   put_str(o, "/parameters/build/version", MIZU_VERSION) ||
                   put_str(o, "/parameters/build/git_revision", MIZU_GIT_REV) ||
                   put_str(o, "/parameters/build/compiler", MZ_COMPILER) ||
                   put_str(o, "/parameters/build/hdf5", hdf5) ||
                   put_str(o, "/parameters/build/device", m->device) ||
                   put_str(o, "/parameters/build/platform", m->platform) ||
                   put_str(o, "/parameters/build/driver", m->driver) ||
                   put_str(o, "/parameters/build/kernel_build_options",
                           m->kernel_build_options) ||
                   put_int_attr(o, "/parameters/run", "complete", 0) ||
                   put_int_attr(o, "/parameters/run", "frames_written", 0) ||
                   put_str_attr(o, "/parameters/run", "status", "running")
               ? -1
               : 0;
}

/* A dataset that grows by one row a frame: dims [0, n, cols] (rank 3), [0, n] (rank 2) or [0]
 * (rank 1), unlimited along the first; chunk [rows0, n, cols] (n cut down only past HDF5's
 * 4 GiB chunk limit). Elements are 4 bytes when rank > 1. */
static hid_t new_series_of(const mz_h5_out *o, const char *name, hid_t ftype, int rank,
                           hsize_t rows0, int gzip_level, hsize_t n, hsize_t cols)
{
    hsize_t dims[3] = {0, n, cols}, maxd[3] = {H5S_UNLIMITED, n, cols};
    hsize_t chunk[3] = {rows0, n, cols};
    size_t row_bytes = rank == 3 ? 4 * (size_t)cols : 4;
    if (rank > 1 && n > MAX_CHUNK_BYTES / row_bytes)
        chunk[1] = MAX_CHUNK_BYTES / row_bytes;
    hid_t space = H5Screate_simple(rank, dims, maxd), dcpl = untimed_plist(H5P_DATASET_CREATE);
    hid_t d = -1;
    int ok = space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0;
    if (ok && gzip_level > 0)
        ok = H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)gzip_level) >= 0;
    if (ok)
        d = H5Dcreate2(o->file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0)
        h5_fail(o->path, "creating %s", name);
    close_id(dcpl);
    close_id(space);
    return d;
}

/* A per-particle series (or a per-frame one, rank 1). */
static hid_t new_series(const mz_h5_out *o, const char *name, hid_t ftype, int rank,
                        hsize_t rows0, int gzip_level)
{
    return new_series_of(o, name, ftype, rank, rows0, gzip_level, o->n, 3);
}

/* Hard links GROUP/step and GROUP/time to position's: H5MD lets elements sampled together
 * share them, and every series then grows (and rolls back) with the one pair. */
static int link_step_time(const mz_h5_out *o, const char *group)
{
    for (int k = 0; k < 2; k++) {
        const char *which = k ? "time" : "step";
        char src[64], name[128];
        snprintf(src, sizeof src, "/particles/all/position/%s", which);
        snprintf(name, sizeof name, "%s/%s", group, which);
        if (H5Lcreate_hard(o->file, src, H5L_SAME_LOC, name, H5P_DEFAULT, H5P_DEFAULT) < 0) {
            h5_fail(o->path, "linking %s", name);
            return -1;
        }
    }
    return 0;
}

static int create_fields(mz_h5_out *o, int gzip_level)
{
    char name[128];
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(o->fields & MZ_FIELD_BIT(f)))
            continue;
        const mz_field_info *fi = &mz_field_infos[f];
        const char *const group[] = {name, NULL};
        snprintf(name, sizeof name, "/particles/all/%s", fi->name);
        if (make_groups(o, group))
            return -1;
        snprintf(name, sizeof name, "/particles/all/%s/value", fi->name);
        o->value[f] = new_series(o, name, H5T_IEEE_F32LE, fi->components == 3 ? 3 : 2, 1,
                                 gzip_level);
        if (o->value[f] < 0 || put_str_attr(o, name, "unit", fi->unit))
            return -1;
        if (f == MZ_FIELD_POSITION) {
            o->step = new_series(o, "/particles/all/position/step", H5T_STD_I64LE, 1,
                                 TIME_CHUNK, 0);
            o->time = new_series(o, "/particles/all/position/time", H5T_IEEE_F64LE, 1,
                                 TIME_CHUNK, 0);
            if (o->step < 0 || o->time < 0 ||
                put_str_attr(o, "/particles/all/position/time", "unit", "s"))
                return -1;
            continue;
        }
        snprintf(name, sizeof name, "/particles/all/%s", fi->name);
        if (link_step_time(o, name))
            return -1;
    }
    return 0;
}

#define RIGID "/observables/rigid"
#define RIGID_CONVENTION                                                                        \
    "quaternion (x, y, z, w), scalar last (the order scipy.spatial.transform.Rotation.from_quat " \
    "takes); it rotates the body's rest offsets, measured from its initial centre of mass "     \
    "along the world axes, into the world frame: a particle of the body is at "                  \
    "center_of_mass + R(q) r, r its rest offset"

/* H5MD observables for the rigid bodies: their body indices, and a centre of mass and an
 * orientation per body and frame. Nothing without rigid bodies. */
static int create_rigids(mz_h5_out *o, const mz_h5_static *st, int gzip_level)
{
    static const char *const groups[] = {"/observables", RIGID, RIGID "/center_of_mass",
                                         RIGID "/orientation", NULL};
    if (o->n_rigids == 0)
        return 0;
    if (make_groups(o, groups) || put_dataset(o, RIGID "/body", H5T_STD_I32LE,
                                              H5T_NATIVE_UINT32, 0, o->n_rigids, st->rigid_body))
        return -1;
    o->rigid_com = new_series_of(o, RIGID "/center_of_mass/value", H5T_IEEE_F32LE, 3, 1,
                                 gzip_level, o->n_rigids, 3);
    if (o->rigid_com < 0 || put_str_attr(o, RIGID "/center_of_mass/value", "unit", "m") ||
        link_step_time(o, RIGID "/center_of_mass"))
        return -1;
    o->rigid_quat = new_series_of(o, RIGID "/orientation/value", H5T_IEEE_F32LE, 3, 1,
                                  gzip_level, o->n_rigids, 4);
    if (o->rigid_quat < 0 ||
        put_str_attr(o, RIGID "/orientation/value", "convention", RIGID_CONVENTION) ||
        put_str_attr(o, RIGID "/orientation/value", "quaternion_order", "x y z w") ||
        link_step_time(o, RIGID "/orientation"))
        return -1;
    o->rigid_buf = xmalloc(7 * o->n_rigids * sizeof *o->rigid_buf);
    return 0;
}

void h5_out_no_exit_handler(void) { H5dont_atexit(); }

char *h5_out_xdmf_path(const char *h5_path) { return xdmf_path_for(h5_path); }

/* ---- create, write, close ---- */

static int check_args(const char *path, const char *xdmf, size_t n, int gzip_level,
                      const mz_h5_static *st)
{
    if (n == 0)
        mz_error("writing %s: there are no particles to write", path);
    else if (n > INT32_MAX)
        mz_error("writing %s: %zu particles is more than the %d the file's int32 ids allow",
                 path, n, INT32_MAX);
    else if (gzip_level < 0 || gzip_level > 9)
        mz_error("writing %s: gzip level %d is not in 0..9", path, gzip_level);
    else if (gzip_level > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
        mz_error("writing %s: this HDF5 library has no gzip (deflate) filter", path);
    else if (!strcmp(path, xdmf))
        mz_error("writing %s: the output must not be named .xdmf (the sidecar is)", path);
    else if (st->n_triangles > 0 && !st->triangles)
        mz_error("writing %s: %zu triangles but no triangle list", path, st->n_triangles);
    else if (st->n_triangles > (size_t)INT32_MAX)
        mz_error("writing %s: %zu triangles is more than the %d the file allows", path,
                 st->n_triangles, INT32_MAX);
    else if (st->n_rigids > 0 && !st->rigid_body)
        mz_error("writing %s: %zu rigid bodies but no list of their body indices", path,
                 st->n_rigids);
    else if (st->n_rigids > (size_t)INT32_MAX / 8)
        mz_error("writing %s: %zu rigid bodies is more than the file allows", path,
                 st->n_rigids);
    else {
        for (size_t k = 0; k < st->n_rigids; k++)
            if (st->rigid_body[k] > (uint32_t)INT32_MAX) {
                mz_error("writing %s: rigid body %zu has body index %lu, beyond int32", path, k,
                         (unsigned long)st->rigid_body[k]);
                return -1;
            }
        for (size_t k = 0; k < 3 * st->n_triangles; k++)
            if (st->triangles[k] >= n) {
                mz_error("writing %s: triangle %zu names particle %lu, but there are %zu "
                         "particles",
                         path, k / 3, (unsigned long)st->triangles[k], n);
                return -1;
            }
        return 0;
    }
    return -1;
}

/* Close everything and free o; after a failed creation the files are removed too.
 * 0, or -1 after reporting a failed close. */
static int discard(mz_h5_out *o, int failed_create)
{
    int rc = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        close_id(o->value[f]);
    close_id(o->step);
    close_id(o->time);
    close_id(o->rigid_com);
    close_id(o->rigid_quat);
    free(o->rigid_buf);
    /* After a failed creation the first message said it all. */
    if (o->file >= 0 && H5Fclose(o->file) < 0) {
        if (!failed_create)
            h5_fail(o->path, "closing");
        rc = -1;
    }
    if (o->fd >= 0)
        close(o->fd);
    if (xdmf_close(o->xdmf, failed_create))
        rc = -1;
    if (failed_create)
        remove(o->path);
    free(o->path);
    free(o);
    return rc;
}

mz_h5_out *h5_out_create(const char *path, size_t n, unsigned fields, int gzip_level,
                         const mz_h5_meta *meta, const mz_h5_static *st)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    static const mz_h5_static no_static;
    st = st ? st : &no_static;
    char *xdmf = h5_out_xdmf_path(path);
    if (check_args(path, xdmf, n, gzip_level, st)) {
        free(xdmf);
        return NULL;
    }
    /* HDF5's own reason for a failed create is poor; open(2) gives the system's. */
    int fd = open(path, O_WRONLY | O_CREAT, 0666);
    if (fd < 0) {
        mz_error("cannot create %s: %s", path, strerror(errno));
        free(xdmf);
        return NULL;
    }
    close(fd);
    mz_h5_out *o = xcalloc(1, sizeof *o);
    o->path = xstrdup(path);
    o->n = n;
    o->fields = fields | MZ_FIELD_BIT(MZ_FIELD_POSITION);
    o->file = o->step = o->time = o->rigid_com = o->rigid_quat = -1;
    o->n_rigids = st->n_rigids;
    o->fd = -1;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        o->value[f] = -1;
    static const mz_h5_meta no_meta;
    meta = meta ? meta : &no_meta;

    o->xdmf = xdmf_create(xdmf, path, n, o->fields, st->n_triangles);
    free(xdmf);
    if (!o->xdmf)
        goto fail;
    /* No file lock, so that `mizu info`, h5py and ParaView can read the file during the run. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0)
        o->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (o->file < 0)
        h5_fail(path, "creating the HDF5 file");
    close_id(fapl);
    if (o->file < 0)
        goto fail;
    if ((o->fd = open(path, O_WRONLY)) < 0) {
        mz_error("cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    if (write_h5md(o) || write_particles(o, meta, st) || write_connectivity(o, st) ||
        write_parameters(o, meta) || create_fields(o, gzip_level) ||
        create_rigids(o, st, gzip_level))
        goto fail;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(path, "flushing");
        goto fail;
    }
    return o;
fail:
    discard(o, 1);
    return NULL;
}

/* ---- reopen for a resumed run ---- */

static void trim(const mz_h5_out *o);

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
    close_id(s);
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
    close_id(d);
    return -1;
}

/* The sidecar again, naming the frames kept. */
static int rewrite_xdmf(mz_h5_out *o)
{
    size_t n_tri = 0;
    if (H5Lexists(o->file, "/connectivity/triangles", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(o->file, "/connectivity/triangles", H5P_DEFAULT);
        hid_t s = d < 0 ? -1 : H5Dget_space(d);
        hsize_t dims[2] = {0, 0};
        if (s >= 0)
            H5Sget_simple_extent_dims(s, dims, NULL);
        n_tri = (size_t)dims[0];
        close_id(s);
        close_id(d);
    }
    char *xdmf = h5_out_xdmf_path(o->path);
    o->xdmf = xdmf_create(xdmf, o->path, o->n, o->fields, n_tri);
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

mz_h5_out *h5_out_reopen(const char *path, size_t n, unsigned fields, size_t n_rigids,
                         long frames)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    mz_h5_out *o = xcalloc(1, sizeof *o);
    o->path = xstrdup(path);
    o->n = n;
    o->fields = fields | MZ_FIELD_BIT(MZ_FIELD_POSITION);
    o->file = o->step = o->time = o->rigid_com = o->rigid_quat = -1;
    o->n_rigids = n_rigids;
    o->fd = -1;
    o->frames = frames;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        o->value[f] = -1;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (access(path, R_OK | W_OK) != 0)
        mz_error("cannot resume into %s: %s", path, strerror(errno));
    else if (fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0 &&
             (o->file = H5Fopen(path, H5F_ACC_RDWR, fapl)) < 0)
        h5_fail(path, "opening the output to resume it");
    close_id(fapl);
    if (o->file < 0)
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
    if ((o->fd = open(path, O_WRONLY)) < 0) {
        mz_error("cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    char status[64];
    snprintf(status, sizeof status, "resumed after frame %ld", frames);
    if (put_int_attr(o, "/parameters/run", "frames_written", frames) ||
        put_int_attr(o, "/parameters/run", "complete", 0) ||
        put_str_attr(o, "/parameters/run", "status", status) || rewrite_xdmf(o))
        goto fail;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(path, "flushing");
        goto fail;
    }
    trim(o);
    return o;
fail:
    discard(o, 0);
    return NULL;
}

/* Grow series d by one row and write row `row` from v. */
static int append_row(const mz_h5_out *o, hid_t d, const char *name, hid_t mtype,
                      const void *v)
{
    hsize_t dims[3], start[3] = {0}, count[3];
    hid_t fs = H5Dget_space(d), ms = -1;
    int rank = fs < 0 ? -1 : H5Sget_simple_extent_dims(fs, dims, NULL);
    close_id(fs);
    fs = -1;
    if (rank < 1 || rank > 3)
        goto fail;
    for (int k = 0; k < rank; k++)
        count[k] = dims[k];
    start[0] = dims[0];
    count[0] = 1;
    dims[0]++;
    if (H5Dset_extent(d, dims) < 0 || (fs = H5Dget_space(d)) < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
        (ms = H5Screate_simple(rank, count, NULL)) < 0 ||
        H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, v) < 0)
        goto fail;
    close_id(ms);
    close_id(fs);
    return 0;
fail:
    h5_fail(o->path, "writing frame %ld of %s", o->frames, name);
    close_id(ms);
    close_id(fs);
    return -1;
}

/* After a failed frame: shrink every series back to the complete frames, so that readers never
 * see a half-written one. Best effort: the disk may still be full. */
static void roll_back(mz_h5_out *o)
{
    hid_t sets[MZ_FIELD_COUNT + 4] = {o->step, o->time, o->rigid_com, o->rigid_quat};
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        sets[f + 4] = o->value[f];
    for (int k = 0; k < MZ_FIELD_COUNT + 4; k++) {
        hsize_t dims[3];
        hid_t s = sets[k] < 0 ? -1 : H5Dget_space(sets[k]);
        if (s >= 0 && H5Sget_simple_extent_dims(s, dims, NULL) > 0 &&
            dims[0] > (hsize_t)o->frames) {
            dims[0] = (hsize_t)o->frames;
            H5Dset_extent(sets[k], dims);
        }
        close_id(s);
    }
    int64_t fw = o->frames;
    hid_t a = H5Aopen_by_name(o->file, "/parameters/run", "frames_written", H5P_DEFAULT,
                              H5P_DEFAULT);
    if (a >= 0)
        H5Awrite(a, H5T_NATIVE_INT64, &fw);
    close_id(a);
    H5Fflush(o->file, H5F_SCOPE_GLOBAL);
}

/* Give back reserved space HDF5 did not use. */
static void trim(const mz_h5_out *o)
{
    hsize_t size;
    if (H5Fget_filesize(o->file, &size) >= 0 && ftruncate(o->fd, (off_t)size) != 0)
        mz_warn("writing %s: giving back reserved space: %s", o->path, strerror(errno));
}

/* Reserve disk space for what the next flush may add (bytes of data and a margin for
 * metadata) before HDF5 writes any of it. A flush that fails half way for lack of space leaves
 * the superblock's end-of-file ahead of the data, and HDF5 then refuses the whole file as
 * "truncated"; failing here instead keeps every frame before. */
static int reserve(const mz_h5_out *o, unsigned long long bytes, const char *what)
{
    struct stat st;
    int err = fstat(o->fd, &st) != 0 ? errno
                                     : xdmf_reserve_space(o->fd, st.st_size,
                                                  (off_t)(bytes + RESERVE_MARGIN));
    if (!err)
        return 0;
    mz_error("writing %s: no room for %s: %s", o->path, what, strerror(err));
    trim(o); /* a failed reservation may have taken part of the space */
    return -1;
}

int h5_out_write_frame(mz_h5_out *o, long step, double time,
                       const float *const data[MZ_FIELD_COUNT], const float *rigid_pose)
{
    unsigned long long bytes = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(o->fields & MZ_FIELD_BIT(f)))
            continue;
        if (!data[f]) {
            mz_error("writing %s: frame %ld has no %s data", o->path, o->frames,
                     mz_field_infos[f].name);
            return -1;
        }
        bytes += 4ull * (unsigned)mz_field_infos[f].components * o->n;
    }
    if (o->n_rigids > 0 && !rigid_pose) {
        mz_error("writing %s: frame %ld has no rigid body poses", o->path, o->frames);
        return -1;
    }
    bytes += 4ull * 7 * o->n_rigids;
    char what[64];
    snprintf(what, sizeof what, "frame %ld", o->frames);
    if (reserve(o, bytes, what))
        return -1;
    int64_t step64 = step;
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        char name[96];
        snprintf(name, sizeof name, "/particles/all/%s/value", mz_field_infos[f].name);
        if ((o->fields & MZ_FIELD_BIT(f)) &&
            append_row(o, o->value[f], name, H5T_NATIVE_FLOAT, data[f]))
            goto fail;
    }
    if (o->n_rigids > 0) {
        float *com = o->rigid_buf, *quat = o->rigid_buf + 3 * o->n_rigids;
        for (size_t b = 0; b < o->n_rigids; b++) {
            memcpy(com + 3 * b, rigid_pose + 8 * b, 3 * sizeof *com);
            memcpy(quat + 4 * b, rigid_pose + 8 * b + 4, 4 * sizeof *quat);
        }
        if (append_row(o, o->rigid_com, RIGID "/center_of_mass/value", H5T_NATIVE_FLOAT, com) ||
            append_row(o, o->rigid_quat, RIGID "/orientation/value", H5T_NATIVE_FLOAT, quat))
            goto fail;
    }
    if (append_row(o, o->step, "/particles/all/position/step", H5T_NATIVE_INT64, &step64) ||
        append_row(o, o->time, "/particles/all/position/time", H5T_NATIVE_DOUBLE, &time) ||
        put_int_attr(o, "/parameters/run", "frames_written", o->frames + 1))
        goto fail;
    /* The flush makes the frame durable: a killed run keeps every frame before it. */
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing frame %ld", o->frames);
        goto fail;
    }
    trim(o);
    o->frames++;
    /* The sidecar only ever names frames already on disk. */
    return xdmf_append_frame(o->xdmf, o->frames - 1, step, time);
fail:
    roll_back(o);
    trim(o);
    return -1;
}

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
    /* Without room the record is left as it is (complete 0), rather than risk the file. */
    if (reserve(o, 0, "the run's end record") ||
        put_int_attr(o, "/parameters/run", "complete", complete ? 1 : 0) ||
        put_str_attr(o, "/parameters/run", "status", status))
        rc = -1;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing");
        rc = -1;
    }
    trim(o);
    return discard(o, 0) || rc ? -1 : 0;
}
