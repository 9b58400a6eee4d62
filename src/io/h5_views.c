/* Per-frame views of the frame series, for the XDMF sidecar (h5_file.h). XDMF readers disagree
 * on how to take one row of a [frames, N, 3] dataset: ParaView's legacy XDMF reader reads a
 * HyperSlab DataItem, its Xdmf3 readers (what OpenDataFile picks) read it as nothing (0 points,
 * no error). Both read a plain dataset. So each committed frame gets, for each field, an HDF5
 * virtual dataset /xdmf/<field>/<frame> mapping that row of /particles/all/<field>/value: no
 * copy, a few hundred bytes of metadata, read through by any HDF5 >= 1.10. */
#include "io/h5_file.h"
#include "scene/fields.h"

#include <stdbool.h>
#include <stdio.h>

static void view_name(char *buf, size_t len, int f, long frame)
{
    snprintf(buf, len, "/xdmf/%s/%ld", mz_field_infos[f].name, frame);
}

static int make_view(mz_h5_out *o, int f, long frame)
{
    char name[96], src[96];
    view_name(name, sizeof name, f, frame);
    snprintf(src, sizeof src, "particles/all/%s/value", mz_field_infos[f].name);
    int comps = mz_field_infos[f].components, rank = comps > 1 ? 3 : 2;
    hsize_t dims[3], start[3] = {(hsize_t)frame, 0, 0}, count[3] = {1, o->n, 3};
    hsize_t vdims[3] = {1, o->n, 3};
    hid_t ss = H5Dget_space(o->value[f]);
    hid_t vs = H5Screate_simple(rank, vdims, NULL);
    hid_t dcpl = h5_untimed_plist(H5P_DATASET_CREATE), d = -1;
    if (ss >= 0 && vs >= 0 && dcpl >= 0 &&
        H5Sget_simple_extent_dims(ss, dims, NULL) == rank && dims[0] > (hsize_t)frame &&
        H5Sselect_hyperslab(ss, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Pset_virtual(dcpl, vs, ".", src, ss) >= 0) /* its group: h5_create.c */
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
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if ((o->fields & MZ_FIELD_BIT(f)) && make_view(o, f, frame))
            return -1;
    return 0;
}

static bool view_exists(const mz_h5_out *o, int f, long frame)
{
    char name[96];
    view_name(name, sizeof name, f, frame);
    htri_t there = -1;
    H5E_BEGIN_TRY { there = H5Lexists(o->file, name, H5P_DEFAULT); }
    H5E_END_TRY;
    return there > 0;
}

int h5_views_resume(mz_h5_out *o, long frames)
{
    h5_views_cut(o, frames);
    for (long k = 0; k < frames; k++) /* files written before the views had none */
        for (int f = 0; f < MZ_FIELD_COUNT; f++)
            if ((o->fields & MZ_FIELD_BIT(f)) && !view_exists(o, f, k) && make_view(o, f, k))
                return -1;
    return 0;
}

void h5_views_cut(mz_h5_out *o, long frames)
{
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        for (long k = frames;; k++) {
            char name[96];
            view_name(name, sizeof name, f, k);
            if (!view_exists(o, f, k) || H5Ldelete(o->file, name, H5P_DEFAULT) < 0)
                break;
        }
}
