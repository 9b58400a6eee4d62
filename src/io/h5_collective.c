/* The output written by every rank through parallel HDF5 (h5_out.h's h5_out_collective).
 *
 * Rank 0 makes the file (or reopens it to resume) alone, with HDF5's default driver, exactly as
 * a single process does: the lock, the checks, the static datasets (the id, body and phase
 * columns, the scene's text, the build's strings: variable-length strings, which HDF5 1.10
 * cannot write through the mpio driver), the series and the sidecar. Then it closes its HDF5
 * handle and every rank opens the file with the mpio driver; from there every HDF5 call on the
 * file is made by every rank alike (HDF5 requires it of calls that change metadata: extending a
 * series, the sidecar's views, attributes, flushes), and each frame's rows are written by the
 * rank of their id block, one collective H5Dwrite per field (h5_frames.c). */
#include "io/h5_file.h"

#include "dist/dist.h"

#include <stdlib.h>
#include <string.h>

#if defined(MZ_MPI) && defined(H5_HAVE_PARALLEL)
#include <mpi.h>
#define MZ_PHDF5 1
#endif

bool h5_out_is_collective(const mz_h5_out *o) { return o && o->par; }

#ifndef MZ_PHDF5
int h5_out_collective(mz_h5_out **out, const char *path, const struct mz_scene *s)
{
    (void)out;
    (void)path;
    (void)s;
    return 0;
}
#else

/* The series o writes a row of every frame: their names and handles. The count. */
static int series_of(mz_h5_out *o, char names[][96], hid_t *ids[])
{
    int k = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (o->fields & MZ_FIELD_BIT(f)) {
            snprintf(names[k], 96, "/particles/all/%s/value", mz_field_infos[f].name);
            ids[k++] = &o->value[f];
        }
    snprintf(names[k], 96, "/particles/all/position/step");
    ids[k++] = &o->step;
    snprintf(names[k], 96, "/particles/all/position/time");
    ids[k++] = &o->time;
    if (o->n_rigids > 0) {
        snprintf(names[k], 96, "%s", RIGID "/center_of_mass/value");
        ids[k++] = &o->rigid_com;
        snprintf(names[k], 96, "%s", RIGID "/orientation/value");
        ids[k++] = &o->rigid_quat;
    }
    if (o->moving_at) {
        snprintf(names[k], 96, "%s", MOVING_VALUE);
        ids[k++] = &o->moving;
    }
    return k;
}

#define MAX_SERIES (MZ_FIELD_COUNT + 5)

/* Whether every series can take collective writes: its chunks allocated early (files made for
 * a collective run are; a single process's are not, and keep rank 0's writes when resumed). */
static bool collective_ready(mz_h5_out *o)
{
    char names[MAX_SERIES][96];
    hid_t *ids[MAX_SERIES];
    int k = series_of(o, names, ids);
    for (int i = 0; i < k; i++)
        if (!h5_allocated_early(*ids[i]))
            return false;
    return true;
}

/* Moving boundary particles are placed by rank 0 (h5_frames.c); the other ranks only join its
 * writes, and never call this. */
static void placed_by_rank0(const void *ctx, double t, float *out)
{
    (void)ctx;
    (void)t;
    (void)out;
}

int h5_out_collective(mz_h5_out **out, const char *path, const struct mz_scene *s)
{
    if (!dist_active())
        return 0;
    mz_h5_out *o = *out;
    bool zero = dist_rank() == 0;
    /* rank 0's decision and layout: go, frames, n, fields, rigids, static and moving boundary
     * particles */
    uint64_t lay[7] = {0};
    if (zero && o) {
        const char *env = getenv("MIZU_COLLECTIVE_OUTPUT");
        lay[0] = !(env && !strcmp(env, "0")) && collective_ready(o) && h5_obs_early(o->obs);
        lay[1] = (uint64_t)o->frames;
        lay[2] = o->n;
        lay[3] = o->fields;
        lay[4] = o->n_rigids;
        lay[5] = o->n_boundary;
        lay[6] = o->n_moving;
    }
    dist_bcast(lay, sizeof lay);
    if (!lay[0])
        return 0;
    char names[MAX_SERIES][96];
    hid_t *ids[MAX_SERIES];
    int rc = 0;
    if (zero) {
        /* The serial handle closed (flushed): the lock and the sidecar stay. */
        int k = series_of(o, names, ids);
        for (int i = 0; i < k; i++) {
            h5_close_id(*ids[i]);
            *ids[i] = -1;
        }
        h5_obs_free(o->obs); /* reopened below, on every rank */
        o->obs = NULL;
        if (H5Fclose(o->file) < 0) {
            h5_fail(path, "closing the file to reopen it on every rank");
            rc = -1;
        }
        o->file = -1;
    } else {
        mz_h5_static st = {.n_rigids = (size_t)lay[4], .n_boundary = (size_t)lay[5],
                           .n_moving = (size_t)lay[6], .moving_at = placed_by_rank0};
        o = h5_file_new(path, (size_t)lay[2], (unsigned)lay[3], &st);
        o->frames = (long)lay[1];
        if (o->n_rigids > 0)
            o->rigid_buf = xmalloc(7 * o->n_rigids * sizeof *o->rigid_buf);
        if (o->moving_at)
            o->moving_buf = xmalloc(3 * o->n_moving * sizeof *o->moving_buf);
    }
    o->par = true;
    if (dist_max_int(rc) == 0) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        if (fapl >= 0 && H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0 &&
            MZ_FILE_LOCKING_OFF(fapl) >= 0)
            o->file = H5Fopen(path, H5F_ACC_RDWR, fapl);
        if (o->file < 0)
            h5_fail(path, "opening the output with the mpio driver");
        h5_close_id(fapl);
        o->dxpl = H5Pcreate(H5P_DATASET_XFER);
        if (o->file < 0 || o->dxpl < 0 || H5Pset_dxpl_mpio(o->dxpl, H5FD_MPIO_COLLECTIVE) < 0)
            rc = -1;
        int k = series_of(o, names, ids);
        for (int i = 0; rc == 0 && i < k; i++)
            if ((*ids[i] = H5Dopen2(o->file, names[i], H5P_DEFAULT)) < 0) {
                h5_fail(path, "opening %s on every rank", names[i]);
                rc = -1;
            }
        if (rc == 0 && h5_obs_open(o, s) != 0)
            rc = -1;
    } else {
        rc = -1;
    }
    if (dist_max_int(rc) != 0) {
        h5_file_discard(o, zero && o->owned);
        *out = NULL;
        return -1;
    }
    *out = o;
    return 0;
}
#endif
