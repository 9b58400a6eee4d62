/* A new output file: the H5MD 1.1 layout described in h5_out.h, written once at the start, and
 * the series that frames are appended to (h5_frames.c). */
#include "io/h5_file.h"

#include "util/filelock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int h5_make_groups(const mz_h5_out *o, const char *const *names)
{
    hid_t gcpl = h5_untimed_plist(H5P_GROUP_CREATE);
    for (; *names; names++) {
        hid_t g = gcpl < 0 ? -1 : H5Gcreate2(o->file, *names, H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (g < 0) {
            h5_fail(o->path, "creating group %s", *names);
            h5_close_id(gcpl);
            return -1;
        }
        H5Gclose(g);
    }
    h5_close_id(gcpl);
    return 0;
}

/* Dataset NAME of n rows of cols values (cols 0: [n]; scalar: one value), contiguous. */
static int put_table(const mz_h5_out *o, const char *name, hid_t ftype, hid_t mtype,
                     int scalar, size_t n, size_t cols, const void *v)
{
    hsize_t dims[2] = {n, cols};
    hid_t space = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(cols ? 2 : 1, dims, NULL);
    hid_t dcpl = h5_untimed_plist(H5P_DATASET_CREATE), d = -1;
    if (space >= 0 && dcpl >= 0 && ftype >= 0 && mtype >= 0)
        d = H5Dcreate2(o->file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int ok = d >= 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
    if (!ok)
        h5_fail(o->path, "writing %s", name);
    h5_close_id(d);
    h5_close_id(dcpl);
    h5_close_id(space);
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
    hid_t t = h5_str_type();
    int rc = put_dataset(o, name, t, t, 1, 0, &s);
    h5_close_id(t);
    return rc;
}

/* A list of strings as a [n] dataset (n may be 0: an empty list is a dataset of no rows). */
static int put_str_list(const mz_h5_out *o, const char *name, const char *const *s, size_t n)
{
    const char **v = xcalloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = s[i] ? s[i] : "";
    hid_t t = h5_str_type();
    int rc = put_dataset(o, name, t, t, 0, n, v);
    h5_close_id(t);
    free(v);
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
    return h5_make_groups(o, groups) ||
                   h5_put_attr(o, "/h5md", "version", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, version) ||
                   h5_put_str_attr(o, "/h5md/author", "name", user) ||
                   h5_put_str_attr(o, "/h5md/creator", "name", "mizu") ||
                   h5_put_str_attr(o, "/h5md/creator", "version", MIZU_VERSION) ||
                   h5_put_attr(o, "/h5md/modules/units", "version", H5T_STD_I32LE,
                            H5T_NATIVE_INT32, 2, units_version) ||
                   h5_put_str_attr(o, "/h5md/modules/units", "system", "SI")
               ? -1
               : 0;
}

/* Fills out[0 .. count) with the column's values of rows first .. first + count. */
typedef void (*column_fn)(const void *ctx, size_t first, size_t count, uint32_t *out);

static void column_ids(const void *ctx, size_t first, size_t count, uint32_t *out)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        out[i] = (uint32_t)(first + i);
}

static void column_array(const void *ctx, size_t first, size_t count, uint32_t *out)
{
    if (ctx)
        memcpy(out, (const uint32_t *)ctx + first, count * sizeof *out);
    else
        memset(out, 0, count * sizeof *out);
}

/* A [n] int32 column written a million rows at a time, so that no caller needs all n values
 * at once (a distributed run's rank 0 holds only its share). Contiguous: the same bytes as one
 * write. */
static int put_column(const mz_h5_out *o, const char *name, column_fn fill, const void *ctx)
{
    enum { ROWS = 1 << 20 };
    hsize_t dims[1] = {o->n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = h5_untimed_plist(H5P_DATASET_CREATE), d = -1;
    if (space >= 0 && dcpl >= 0)
        d = H5Dcreate2(o->file, name, H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    uint32_t *buf = xmalloc((o->n < ROWS ? o->n + 1 : ROWS) * sizeof *buf);
    bool ok = d >= 0;
    for (size_t first = 0; ok && first < o->n; first += ROWS) {
        hsize_t start[1] = {first}, count[1] = {o->n - first < ROWS ? o->n - first : ROWS};
        fill(ctx, first, (size_t)count[0], buf);
        hid_t ms = H5Screate_simple(1, count, NULL);
        ok = ms >= 0 && H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dwrite(d, H5T_NATIVE_UINT32, ms, space, H5P_DEFAULT, buf) >= 0;
        h5_close_id(ms);
    }
    if (!ok)
        h5_fail(o->path, "writing %s", name);
    free(buf);
    h5_close_id(d);
    h5_close_id(dcpl);
    h5_close_id(space);
    return ok ? 0 : -1;
}

/* GROUP/box of an H5MD particles group: the domain, 3D, no periodic boundary. */
static int write_box(const mz_h5_out *o, const char *group, const mz_h5_meta *m)
{
    static const char *const boundary[3] = {"none", "none", "none"};
    char box[96], edges_name[112];
    snprintf(box, sizeof box, "%s/box", group);
    snprintf(edges_name, sizeof edges_name, "%s/edges", box);
    const char *const groups[] = {group, box, NULL};
    double edges[3];
    for (int k = 0; k < 3; k++)
        edges[k] = m->domain_max[k] - m->domain_min[k];
    hid_t t = h5_str_type();
    int rc = h5_make_groups(o, groups) || h5_put_int_attr(o, box, "dimension", 3) ||
             h5_put_attr(o, box, "boundary", t, t, 3, boundary) ||
             put_dataset(o, edges_name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 3, edges) ||
             h5_put_str_attr(o, edges_name, "unit", "m");
    h5_close_id(t);
    return rc ? -1 : 0;
}

static int write_particles(const mz_h5_out *o, const mz_h5_meta *m, const mz_h5_static *st)
{
    static const char *const groups[] = {"/particles", NULL};
    if (h5_make_groups(o, groups) || write_box(o, "/particles/all", m))
        return -1;
    /* Rows are in id order, so id is 0..n-1; it is written for H5MD readers that look for it. */
    return put_column(o, "/particles/all/id", column_ids, NULL) ||
                   (st->body_of ? put_column(o, "/particles/all/body", st->body_of, st->body_ctx)
                                : put_column(o, "/particles/all/body", column_array, st->body)) ||
                   (st->phase_of
                        ? put_column(o, "/particles/all/phase", st->phase_of, st->body_ctx)
                        : put_column(o, "/particles/all/phase", column_array, st->phase))
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
    if (h5_make_groups(o, groups) || put_table(o, name, H5T_STD_I32LE, H5T_NATIVE_UINT32, 0,
                                            st->n_triangles, 3, st->triangles))
        return -1;
    /* An object reference is the object's address in the file: as reproducible as the rest. */
    hobj_ref_t ref;
    if (H5Rcreate(&ref, o->file, "/particles/all", H5R_OBJECT, -1) < 0) {
        h5_fail(o->path, "referring to /particles/all from %s", name);
        return -1;
    }
    return h5_put_attr(o, name, "particles_group", H5T_STD_REF_OBJ, H5T_STD_REF_OBJ, 0, &ref);
}

/* SPH's walls and colliders as boundary particles, so that a viewer shows the tank and the
 * obstacles: those that stay put in /particles/boundary, a time-independent H5MD element
 * written once; the moving colliders' in /particles/moving_boundary, its box here and its
 * series once the frames' step and time exist (create_moving_boundary). Only the moving
 * particles are written every frame: the walls repeated made up half of a sloshing tank's
 * output. Nothing without boundary particles. */
static int write_boundary(const mz_h5_out *o, const mz_h5_meta *m, const mz_h5_static *st)
{
    static const char name[] = "/particles/boundary/position";
    if (st->n_boundary > 0 &&
        (write_box(o, "/particles/boundary", m) ||
         put_table(o, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 0, st->n_boundary, 3,
                   st->boundary) ||
         h5_put_str_attr(o, name, "unit", "m")))
        return -1;
    return o->moving_at ? write_box(o, MOVING, m) : 0;
}

/* The sidecar's per-frame views live in /xdmf/<field>/ (h5_views.c); made here, untimed, so
 * that the file stays the same bytes run after run. */
static int make_view_groups(const mz_h5_out *o)
{
    const char *names[MZ_FIELD_COUNT + 3] = {"/xdmf"};
    char buf[MZ_FIELD_COUNT][48];
    int k = 1;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (o->fields & MZ_FIELD_BIT(f)) {
            snprintf(buf[f], sizeof buf[f], "/xdmf/%s", mz_field_infos[f].name);
            names[k++] = buf[f];
        }
    if (o->moving_at)
        names[k++] = "/xdmf/moving_boundary";
    names[k] = NULL;
    return h5_make_groups(o, names);
}

static int write_parameters(const mz_h5_out *o, const mz_h5_meta *m)
{
    static const char *const groups[] = {"/parameters", "/parameters/scene", "/parameters/build",
                                         "/parameters/run", NULL};
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5[64];
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    char one[300];
    snprintf(one, sizeof one, "0: %s", m->device);
    return h5_make_groups(o, groups) || put_str(o, "/parameters/scene/given", m->scene_given) ||
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
                   put_str(o, "/parameters/build/devices_by_rank",
                           m->devices_by_rank ? m->devices_by_rank : one) ||
                   h5_put_int_attr(o, "/parameters/build", "ranks", m->ranks > 0 ? m->ranks : 1) ||
                   h5_put_int_attr(o, "/parameters/run", "complete", 0) ||
                   h5_put_int_attr(o, "/parameters/run", "frames_written", 0) ||
                   h5_put_str_attr(o, "/parameters/run", "status", "running") ||
                   h5_put_str_attr(o, "/parameters/run", "run_id", m->run_id)
               ? -1
               : 0;
}

hid_t h5_series_create(const mz_h5_out *o, const char *name, hid_t ftype, int rank,
                           hsize_t rows0, int gzip_level, hsize_t n, hsize_t cols)
{
    hsize_t dims[3] = {0, n, cols}, maxd[3] = {H5S_UNLIMITED, n, cols};
    hsize_t chunk[3] = {rows0, n, cols};
    size_t row_bytes = rank == 3 ? 4 * (size_t)cols : 4;
    /* Collective series: chunks of at most 256 MiB. HDF5 1.10's MPI-IO describes a chunk by an
     * MPI datatype with int byte counts: a row of 2 x 10^8 particles' positions in one 2.4 GB
     * chunk aborted every rank in MPI_Type_create_hindexed when the series grew (reproduced
     * with 2 ranks here; 1 GiB and 256 MiB chunks pass, the smaller growing 3.6x faster). */
    size_t max_chunk = o->alloc_early ? (size_t)256 << 20 : MAX_CHUNK_BYTES;
    if (rank > 1 && n > max_chunk / row_bytes)
        chunk[1] = max_chunk / row_bytes;
    hid_t space = H5Screate_simple(rank, dims, maxd), dcpl = h5_untimed_plist(H5P_DATASET_CREATE);
    hid_t d = -1;
    int ok = space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0;
    if (ok && gzip_level > 0)
        ok = H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)gzip_level) >= 0;
    /* Collective writes (h5_out_collective) need each row's chunk allocated when the series
     * grows: with HDF5's default (incremental) allocation, 1.10.8's collective write of an
     * unallocated chunk fails (unfiltered) or hangs (gzip). */
    if (ok && o->alloc_early)
        ok = H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0;
    /* ... and no fill values written when a row is allocated (every row is written whole
     * after): growing 2.4 GB took 1.2 s writing them, none without. Filtered series keep the
     * default (HDF5 compresses a fill chunk once). */
    if (ok && o->alloc_early && gzip_level == 0)
        ok = H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0;
    if (ok)
        d = H5Dcreate2(o->file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0)
        h5_fail(o->path, "creating %s", name);
    h5_close_id(dcpl);
    h5_close_id(space);
    return d;
}

/* A per-particle series (or a per-frame one, rank 1). */
static hid_t new_series(const mz_h5_out *o, const char *name, hid_t ftype, int rank,
                        hsize_t rows0, int gzip_level)
{
    return h5_series_create(o, name, ftype, rank, rows0, gzip_level, o->n, 3);
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
        if (h5_make_groups(o, group))
            return -1;
        snprintf(name, sizeof name, "/particles/all/%s/value", fi->name);
        o->value[f] = new_series(o, name, H5T_IEEE_F32LE, fi->components == 3 ? 3 : 2, 1,
                                 gzip_level);
        if (o->value[f] < 0 || h5_put_str_attr(o, name, "unit", fi->unit))
            return -1;
        if (f == MZ_FIELD_POSITION) {
            o->step = new_series(o, "/particles/all/position/step", H5T_STD_I64LE, 1,
                                 TIME_CHUNK, 0);
            o->time = new_series(o, "/particles/all/position/time", H5T_IEEE_F64LE, 1,
                                 TIME_CHUNK, 0);
            if (o->step < 0 || o->time < 0 ||
                h5_put_str_attr(o, "/particles/all/position/time", "unit", "s"))
                return -1;
            continue;
        }
        snprintf(name, sizeof name, "/particles/all/%s", fi->name);
        if (link_step_time(o, name))
            return -1;
    }
    return 0;
}

/* H5MD observables for the rigid bodies: their body indices, and a centre of mass and an
 * orientation per body and frame. Nothing without rigid bodies. */
static int create_rigids(mz_h5_out *o, const mz_h5_static *st, int gzip_level)
{
    static const char *const groups[] = {"/observables", RIGID, RIGID "/center_of_mass",
                                         RIGID "/orientation", NULL};
    if (o->n_rigids == 0)
        return 0;
    if (h5_make_groups(o, groups) || put_dataset(o, RIGID "/body", H5T_STD_I32LE,
                                              H5T_NATIVE_UINT32, 0, o->n_rigids, st->rigid_body))
        return -1;
    o->rigid_com = h5_series_create(o, RIGID "/center_of_mass/value", H5T_IEEE_F32LE, 3, 1,
                                 gzip_level, o->n_rigids, 3);
    if (o->rigid_com < 0 || h5_put_str_attr(o, RIGID "/center_of_mass/value", "unit", "m") ||
        link_step_time(o, RIGID "/center_of_mass"))
        return -1;
    o->rigid_quat = h5_series_create(o, RIGID "/orientation/value", H5T_IEEE_F32LE, 3, 1,
                                  gzip_level, o->n_rigids, 4);
    if (o->rigid_quat < 0 ||
        h5_put_str_attr(o, RIGID "/orientation/value", "convention", RIGID_CONVENTION) ||
        h5_put_str_attr(o, RIGID "/orientation/value", "quaternion_order", "x y z w") ||
        link_step_time(o, RIGID "/orientation"))
        return -1;
    o->rigid_buf = xmalloc(7 * o->n_rigids * sizeof *o->rigid_buf);
    return 0;
}

/* Moving colliders: MOVING/position as a time-dependent element beside the frames, its step
 * and time theirs. */
static int create_moving_boundary(mz_h5_out *o, int gzip_level)
{
    static const char *const groups[] = {MOVING "/position", NULL};
    if (!o->moving_at)
        return 0;
    if (h5_make_groups(o, groups))
        return -1;
    o->moving = h5_series_create(o, MOVING_VALUE, H5T_IEEE_F32LE, 3, 1, gzip_level,
                                 o->n_moving, 3);
    if (o->moving < 0 || h5_put_str_attr(o, MOVING_VALUE, "unit", "m") ||
        link_step_time(o, MOVING "/position"))
        return -1;
    o->moving_buf = xmalloc(3 * o->n_moving * sizeof *o->moving_buf);
    return 0;
}

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
    else if (st->n_boundary > 0 && !st->boundary)
        mz_error("writing %s: %zu boundary particles but no positions", path, st->n_boundary);
    else if (st->n_moving > 0 && !st->moving_at)
        mz_error("writing %s: %zu moving boundary particles but no placement", path,
                 st->n_moving);
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

/* Whether an existing file at path may be replaced: only an earlier mizu output (it has
 * /parameters/run with a `complete` attribute) or an empty file; anything else, such as the
 * scene given by mistake as -o, is refused. */
static bool replaceable(const char *path, int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        return true;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        mz_error("cannot write %s: not a regular file", path);
        return false;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t f = fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0 && H5Fis_hdf5(path) > 0
                  ? H5Fopen(path, H5F_ACC_RDONLY, fapl)
                  : -1;
    bool mizu = f >= 0 && H5Aexists_by_name(f, "/parameters/run", "complete", H5P_DEFAULT) > 0;
    h5_close_id(fapl);
    if (f >= 0)
        H5Fclose(f);
    if (!mizu)
        mz_error("%s exists and is not a mizu output: not replacing it (give -o a new path, or "
                 "remove the file)", path);
    return mizu;
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
    /* One run per file: the lock is taken before anything is written, so a second run on the
     * same path refuses without touching the first one's file. HDF5's own reason for a failed
     * create is poor; open(2) gives the system's. */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0666);
    bool created = fd >= 0;
    if (!created && errno == EEXIST)
        fd = open(path, O_RDWR);
    if (fd < 0) {
        mz_error("cannot create %s: %s", path, strerror(errno));
        free(xdmf);
        return NULL;
    }
    if (file_lock(fd, path, "output") != 0 || (!created && !replaceable(path, fd))) {
        close(fd);
        free(xdmf);
        return NULL;
    }
    mz_h5_out *o = h5_file_new(path, n, fields, st);
    o->fd = fd;
    o->owned = created;
    static const mz_h5_meta no_meta;
    meta = meta ? meta : &no_meta;
    o->alloc_early = meta->collective;

    o->xdmf = xdmf_create(xdmf, path, n, o->fields, st->n_triangles, st->n_boundary,
                          o->n_moving);
    free(xdmf);
    if (!o->xdmf)
        goto fail;
    /* No HDF5 file lock, so that `mizu info`, h5py and ParaView can read the file during the
     * run (writers are kept apart by file_lock). */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0)
        o->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (o->file < 0)
        h5_fail(path, "creating the HDF5 file");
    h5_close_id(fapl);
    if (o->file < 0)
        goto fail;
    o->owned = 1; /* what was there is gone: a failure from here leaves no half file behind */
    if (write_h5md(o) || write_particles(o, meta, st) || write_boundary(o, meta, st) ||
        write_connectivity(o, st) || make_view_groups(o) ||
        write_parameters(o, meta) || create_fields(o, gzip_level) ||
        create_rigids(o, st, gzip_level) || create_moving_boundary(o, gzip_level))
        goto fail;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(path, "flushing");
        goto fail;
    }
    return o;
fail:
    h5_file_discard(o, 1);
    return NULL;
}
