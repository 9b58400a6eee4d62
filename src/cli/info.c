/* `mizu info OUT.h5`. Reads only what io/ writes (io/h5_out.h), tolerating absent pieces (shown
 * as "?") so that files from older versions and half-written files still get a summary. */
#include "cli/info.h"
#include "io/h5_read.h"
#include "scene/fields.h"
#include "util/err.h"

#include <hdf5.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BBOX_ROWS 65536 /* particles read at a time for the bounding box */

/* A scalar integer attribute; 0 when it is absent. */
static int int_attr(hid_t file, const char *obj, const char *name, long long *v)
{
    if (!h5_exists(file, obj) || H5Aexists_by_name(file, obj, name, H5P_DEFAULT) <= 0)
        return 0;
    hid_t a = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, v) >= 0;
    if (a >= 0)
        H5Aclose(a);
    return ok;
}

static void print_str(FILE *out, const char *label, const char *s)
{
    fprintf(out, "  %-10s %s\n", label, s && *s ? s : "?");
}

static void print_size(FILE *out, long long bytes)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        fprintf(out, "%lld bytes", bytes);
    else
        fprintf(out, "%.1f %s", v, units[u]);
}

static herr_t print_field(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    FILE *out = ((void **)data)[0];
    int *first = ((void **)data)[1];
    char value[256];
    snprintf(value, sizeof value, "/particles/all/%s/value", name);
    hid_t file = H5Iget_file_id(group);
    hsize_t dims[3];
    int rank = h5_dataset_dims(file, value, dims);
    if (rank > 0) {
        char *unit = h5_read_str_attr(file, value, "unit");
        fprintf(out, "  %-10s %-10s [", *first ? "fields" : "", name);
        for (int k = 0; k < rank; k++)
            fprintf(out, "%s%llu", k ? ", " : "", (unsigned long long)dims[k]);
        fprintf(out, "]%s%s\n", unit && *unit ? " " : "", unit ? unit : "");
        free(unit);
        *first = 0;
    }
    H5Fclose(file);
    return 0;
}

static void print_fields(FILE *out, hid_t file)
{
    int first = 1;
    void *data[2] = {out, &first};
    hid_t g = H5Gopen2(file, "/particles/all", H5P_DEFAULT);
    if (g >= 0) {
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_field, data);
        H5Gclose(g);
    }
    if (first)
        print_str(out, "fields", NULL);
}

/* The rigid bodies' observables, when the file has them: how many bodies, and the series. */
static void print_rigids(FILE *out, hid_t file)
{
    static const char *const series[] = {"center_of_mass", "orientation"};
    hsize_t dims[3];
    int rank = h5_dataset_dims(file, "/observables/rigid/body", dims);
    if (rank < 0 && !h5_exists(file, "/observables/rigid"))
        return;
    if (rank == 1)
        fprintf(out, "  %-10s %llu rigid bod%s in /observables/rigid:", "rigids",
                (unsigned long long)dims[0], dims[0] == 1 ? "y" : "ies");
    else
        fprintf(out, "  %-10s ? rigid bodies in /observables/rigid:", "rigids");
    for (size_t i = 0; i < sizeof series / sizeof series[0]; i++) {
        char value[96];
        snprintf(value, sizeof value, "/observables/rigid/%s/value", series[i]);
        rank = h5_dataset_dims(file, value, dims);
        fprintf(out, "%s %s", i ? "," : "", series[i]);
        if (rank > 0) {
            fputs(" [", out);
            for (int k = 0; k < rank; k++)
                fprintf(out, "%s%llu", k ? ", " : "", (unsigned long long)dims[k]);
            fputc(']', out);
        } else {
            fputs(" ?", out);
        }
    }
    fputc('\n', out);
}

/* Bounding box of frame f's positions, read a block of particles at a time. */
static void print_bounds(FILE *out, hid_t file, hsize_t f, hsize_t n)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    unsigned long long bad = 0;
    float *buf = xmalloc(BBOX_ROWS * 3 * sizeof *buf);
    hid_t d = H5Dopen2(file, "/particles/all/position/value", H5P_DEFAULT);
    hid_t fs = d < 0 ? -1 : H5Dget_space(d);
    int ok = fs >= 0;
    for (hsize_t r = 0; ok && r < n; r += BBOX_ROWS) {
        hsize_t start[3] = {f, r, 0}, count[3] = {1, n - r < BBOX_ROWS ? n - r : BBOX_ROWS, 3};
        hid_t ms = H5Screate_simple(3, count, NULL);
        ok = ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf) >= 0;
        if (ms >= 0)
            H5Sclose(ms);
        for (hsize_t i = 0; ok && i < count[1]; i++) {
            const float *p = buf + 3 * i;
            if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2])) {
                bad++;
                continue;
            }
            for (int k = 0; k < 3; k++) {
                lo[k] = p[k] < lo[k] ? p[k] : lo[k];
                hi[k] = p[k] > hi[k] ? p[k] : hi[k];
            }
        }
    }
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    free(buf);
    if (!ok)
        print_str(out, "bounds", "? (the last frame could not be read)");
    else if (bad == n)
        print_str(out, "bounds", "none: every position in the last frame is non-finite");
    else
        fprintf(out, "  %-10s last frame: x %g..%g, y %g..%g, z %g..%g m", "bounds", lo[0],
                hi[0], lo[1], hi[1], lo[2], hi[2]);
    if (ok && bad && bad < n)
        fprintf(out, " (%llu non-finite positions left out)", bad);
    if (ok && bad < n)
        fputc('\n', out);
}

static void print_frames(FILE *out, hid_t file, hsize_t frames, long long written)
{
    double s0, s1, t0, t1;
    fprintf(out, "  %-10s %llu", "frames", (unsigned long long)frames);
    if (written != (long long)frames)
        fprintf(out, " (the run record says %lld)", written);
    if (frames && h5_read_element(file, "/particles/all/position/step", 0, &s0) &&
        h5_read_element(file, "/particles/all/position/step", frames - 1, &s1))
        fprintf(out, ", step %.0f..%.0f", s0, s1);
    if (frames && h5_read_element(file, "/particles/all/position/time", 0, &t0) &&
        h5_read_element(file, "/particles/all/position/time", frames - 1, &t1))
        fprintf(out, ", time %g..%g s", t0, t1);
    fputc('\n', out);
}

static void print_run(FILE *out, hid_t file)
{
    long long complete = 0;
    int known = int_attr(file, "/parameters/run", "complete", &complete);
    char *status = h5_read_str_attr(file, "/parameters/run", "status");
    if (!known)
        fprintf(out, "  %-10s ?", "run");
    else if (complete)
        fprintf(out, "  %-10s complete", "run");
    else
        fprintf(out, "  %-10s INCOMPLETE (still running, killed or failed)", "run");
    fprintf(out, ", status: %s\n", status && *status ? status : "?");
    free(status);
}

static void print_summary(FILE *out, const char *path, hid_t file, long long size)
{
    hsize_t dims[3] = {0};
    int rank = h5_dataset_dims(file, "/particles/all/position/value", dims);
    hsize_t frames = dims[0], n = rank == 3 ? dims[1] : 0;
    long long written = (long long)frames;
    int_attr(file, "/parameters/run", "frames_written", &written);
    fprintf(out, "%s: mizu output, %llu particle%s, %llu frame%s, ", path,
            (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)frames,
            frames == 1 ? "" : "s");
    print_size(out, size);
    fputc('\n', out);

    char *name = h5_read_str_attr(file, "/h5md/creator", "name");
    char *version = h5_read_str_attr(file, "/h5md/creator", "version");
    fprintf(out, "  %-10s %s %s\n", "creator", name ? name : "?", version ? version : "?");
    free(name);
    free(version);
    static const char *const build[][2] = {
        {"git", "/parameters/build/git_revision"}, {"device", "/parameters/build/device"},
        {"platform", "/parameters/build/platform"}, {"driver", "/parameters/build/driver"},
        {"scene", "/parameters/scene/path"}};
    for (size_t i = 0; i < sizeof build / sizeof build[0]; i++) {
        char *s = h5_read_str(file, build[i][1]);
        print_str(out, build[i][0], s);
        free(s);
    }
    print_frames(out, file, frames, written);
    print_fields(out, file);
    print_rigids(out, file);
    hsize_t bdims[3];
    if (h5_dataset_dims(file, "/particles/boundary/position", bdims) == 2)
        fprintf(out, "  %-10s %llu wall and collider particles in /particles/boundary\n",
                "boundary", (unsigned long long)bdims[0]);
    else if (h5_dataset_dims(file, "/particles/boundary/position/value", bdims) == 3)
        fprintf(out, "  %-10s %llu wall and collider particles in /particles/boundary, "
                     "colliders moving: a row each frame (an earlier mizu's layout)\n",
                "boundary", (unsigned long long)bdims[1]);
    if (h5_dataset_dims(file, "/particles/moving_boundary/position/value", bdims) == 3)
        fprintf(out, "  %-10s %llu moving collider particles in /particles/moving_boundary, "
                     "a row each frame\n",
                "", (unsigned long long)bdims[1]);
    print_run(out, file);
    if (frames && n)
        print_bounds(out, file, frames - 1, n);
    else
        print_str(out, "bounds", "none (no frames)");
}

int info_print(const char *path, FILE *out)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    FILE *probe = fopen(path, "rb");
    if (!probe || fstat(fileno(probe), &st) != 0) {
        mz_error("cannot open %s: %s", path, strerror(errno));
        if (probe)
            fclose(probe);
        return 1;
    }
    fclose(probe);
    if (S_ISDIR(st.st_mode)) {
        mz_error("cannot read %s: it is a directory", path);
        return 1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        mz_error("%s: not a mizu output file: not an HDF5 file", path);
        return 1;
    }
    /* No lock: the file may be one a run is still writing. */
    hid_t file = h5_open_unlocked(path);
    if (file < 0) {
        mz_error("cannot open %s: HDF5 could not open it (damaged or truncated?)", path);
        return 1;
    }
    int rc = 0;
    if (!h5_exists(file, "/h5md")) {
        mz_error("%s: not a mizu output file: /h5md missing", path);
        rc = 1;
    } else if (!h5_exists(file, "/particles/all/position/value")) {
        mz_error("%s: not a mizu output file: /particles/all/position/value missing", path);
        rc = 1;
    } else {
        print_summary(out, path, file, (long long)st.st_size);
    }
    H5Fclose(file);
    return rc;
}
