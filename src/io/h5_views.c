/* Per-frame views of the frame series, for the XDMF sidecar (h5_file.h). XDMF readers disagree
 * on how to take one row of a [frames, N, 3] dataset: ParaView's legacy XDMF reader reads a
 * HyperSlab DataItem, its Xdmf3 readers (what OpenDataFile picks) read it as nothing (0 points,
 * no error). Both read a plain dataset. So each committed frame gets, for each field, an HDF5
 * virtual dataset /xdmf/<field>/<frame> mapping that row of /particles/all/<field>/value (and,
 * when colliders move, /xdmf/moving_boundary/<frame> of that group's position/value): no copy,
 * a few hundred bytes of metadata, read through by any HDF5 >= 1.10. */
#include "io/h5_file.h"
#include "scene/fields.h"

#include <stdbool.h>
#include <stdio.h>

/* The series with views: the fields written, then (VIEW_BOUNDARY) the moving colliders'
 * particles when there are any. */
#define VIEW_BOUNDARY MZ_FIELD_COUNT

typedef struct view_src {
    const char *name; /* under /xdmf */
    char src[96];     /* the series' value, from the file's root */
    hid_t d;
    hsize_t rows;
    int comps;
} view_src;

/* Series k's views, or false when it has none. */
static bool view_of(const mz_h5_out *o, int k, view_src *v)
{
    if (k == VIEW_BOUNDARY) {
        *v = (view_src){"moving_boundary", "", o->moving, o->n_moving, 3};
        snprintf(v->src, sizeof v->src, "%s", &MOVING_VALUE[1]); /* from the root, no '/' */
        return o->moving_at != NULL;
    }
    if (!(o->fields & MZ_FIELD_BIT(k)))
        return false;
    *v = (view_src){mz_field_infos[k].name, "", o->value[k], o->n, mz_field_infos[k].components};
    snprintf(v->src, sizeof v->src, "particles/all/%s/value", v->name);
    return true;
}

static void view_name(char *buf, size_t len, const view_src *v, long frame)
{
    snprintf(buf, len, "/xdmf/%s/%ld", v->name, frame);
}

static int make_view(mz_h5_out *o, const view_src *v, long frame)
{
    char name[96];
    view_name(name, sizeof name, v, frame);
    int rank = v->comps > 1 ? 3 : 2;
    hsize_t dims[3], start[3] = {(hsize_t)frame, 0, 0}, count[3] = {1, v->rows, 3};
    hsize_t vdims[3] = {1, v->rows, 3};
    hid_t ss = H5Dget_space(v->d);
    hid_t vs = H5Screate_simple(rank, vdims, NULL);
    hid_t dcpl = h5_untimed_plist(H5P_DATASET_CREATE), d = -1;
    if (ss >= 0 && vs >= 0 && dcpl >= 0 &&
        H5Sget_simple_extent_dims(ss, dims, NULL) == rank && dims[0] > (hsize_t)frame &&
        H5Sselect_hyperslab(ss, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Pset_virtual(dcpl, vs, ".", v->src, ss) >= 0) /* its group: h5_create.c */
        d = H5Dcreate2(o->file, name, H5T_IEEE_F32LE, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0)
        h5_fail(o->path, "making the sidecar's view %s", name);
    h5_close_id(d);
    h5_close_id(dcpl);
    h5_close_id(vs);
    h5_close_id(ss);
    return d < 0 ? -1 : 0;
}

int h5_views_add(mz_h5_out *o, long frame)
{
    view_src v;
    for (int k = 0; k <= VIEW_BOUNDARY; k++)
        if (view_of(o, k, &v) && make_view(o, &v, frame))
            return -1;
    return 0;
}

static bool view_exists(const mz_h5_out *o, const view_src *v, long frame)
{
    char name[96];
    view_name(name, sizeof name, v, frame);
    htri_t there = -1;
    H5E_BEGIN_TRY { there = H5Lexists(o->file, name, H5P_DEFAULT); }
    H5E_END_TRY;
    return there > 0;
}

int h5_views_resume(mz_h5_out *o, long frames)
{
    h5_views_cut(o, frames);
    view_src v;
    for (long f = 0; f < frames; f++) /* files written before the views had none */
        for (int k = 0; k <= VIEW_BOUNDARY; k++)
            if (view_of(o, k, &v) && !view_exists(o, &v, f) && make_view(o, &v, f))
                return -1;
    return 0;
}

void h5_views_cut(mz_h5_out *o, long frames)
{
    view_src v;
    for (int k = 0; k <= VIEW_BOUNDARY; k++)
        for (long f = frames; view_of(o, k, &v); f++) {
            char name[96];
            view_name(name, sizeof name, &v, f);
            if (!view_exists(o, &v, f) || H5Ldelete(o->file, name, H5P_DEFAULT) < 0)
                break;
        }
}
