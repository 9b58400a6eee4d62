/* Appending a frame to an open output: every series grows by one row together, the file is
 * flushed (a killed run keeps every frame before), and a failed frame is rolled back. */
#include "dist/dist.h"
#include "io/h5_file.h"

#include <stdlib.h>
#include <string.h>

/* Grow series d by one row (no data written yet). */
static int grow_row(const mz_h5_out *o, hid_t d, const char *name)
{
    hsize_t dims[3];
    hid_t fs = H5Dget_space(d);
    int rank = fs < 0 ? -1 : H5Sget_simple_extent_dims(fs, dims, NULL);
    h5_close_id(fs);
    if (rank < 1 || rank > 3 || dims[0] != (hsize_t)o->frames) {
        h5_fail(o->path, "growing %s for frame %ld", name, o->frames);
        return -1;
    }
    dims[0]++;
    if (H5Dset_extent(d, dims) < 0) {
        h5_fail(o->path, "growing %s for frame %ld", name, o->frames);
        return -1;
    }
    return 0;
}

/* A collective write carries at most this many bytes from each rank: HDF5 1.10's MPI-IO
 * path describes a write by MPI datatypes with int byte counts, and one field of a frame of
 * 2 × 10^8 particles from two ranks (1.2 GB each) aborted every rank in
 * MPI_Type_create_hindexed. 64 MiB a rank keeps 16 ranks' aggregate under 1 GiB.
 * MIZU_COLLECTIVE_PIECE_BYTES sets another (the tests cut small frames in many pieces). */
static size_t collective_piece_bytes(void)
{
    const char *e = getenv("MIZU_COLLECTIVE_PIECE_BYTES");
    long long v = e ? atoll(e) : 0;
    return v > 0 ? (size_t)v : (size_t)64 << 20;
}

/* Write rows [first, first + count) of the new frame (row o->frames) of series d from v; a
 * series of one value per frame takes first 0, count 1. When the file is collective every rank
 * calls this for every series, and the rows go in pieces of collective_piece_bytes(), as many
 * collective H5Dwrites on every rank (the most any rank needs); a rank with no rows left
 * selects none. */
static int write_rows(const mz_h5_out *o, hid_t d, const char *name, hid_t mtype, size_t first,
                      size_t count, const void *v)
{
    hsize_t dims[3], start[3] = {0}, cnt[3];
    hid_t fs = H5Dget_space(d), ms = -1;
    int rank = fs < 0 ? -1 : H5Sget_simple_extent_dims(fs, dims, NULL);
    if (rank < 1 || rank > 3)
        goto fail;
    size_t row_bytes = H5Tget_size(mtype) * (rank > 2 ? (size_t)dims[2] : 1);
    size_t piece = o->par && rank > 1 ? collective_piece_bytes() / row_bytes : count;
    piece = piece ? piece : 1;
    int pieces = count ? (int)((count + piece - 1) / piece) : 0;
    if (o->par)
        pieces = dist_max_int(pieces);
    pieces = pieces ? pieces : 1; /* a write of nothing, with the others */
    static const float nothing[1];
    bool bad = false; /* collective: after a failed piece this rank joins the rest with none */
    for (int k = 0; k < pieces; k++) {
        size_t done = (size_t)k * piece, rows = done < count && !bad ? count - done : 0;
        rows = rows < piece ? rows : piece;
        for (int a = 0; a < rank; a++)
            cnt[a] = dims[a];
        start[0] = (hsize_t)o->frames;
        cnt[0] = 1;
        if (rank > 1) {
            start[1] = first + done;
            cnt[1] = rows;
        }
        if (rows == 0) {
            if ((ms = H5Scopy(fs)) < 0 || H5Sselect_none(ms) < 0 || H5Sselect_none(fs) < 0 ||
                H5Dwrite(d, mtype, ms, fs, o->dxpl, nothing) < 0)
                bad = true;
        } else if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
                   (ms = H5Screate_simple(rank, cnt, NULL)) < 0 ||
                   H5Dwrite(d, mtype, ms, fs, o->dxpl,
                            (const char *)v + done * row_bytes) < 0) {
            bad = true;
        }
        h5_close_id(ms);
        ms = -1;
        if (bad && !o->par)
            break;
    }
    if (bad)
        goto fail;
    h5_close_id(fs);
    return 0;
fail:
    h5_fail(o->path, "writing frame %ld of %s", o->frames, name);
    h5_close_id(ms);
    h5_close_id(fs);
    return -1;
}

/* A step of a frame failed (r != 0): in one process the frame stops there (true: roll back);
 * when the file is collective every rank goes on making the same calls, the failure noted in
 * *rc, and the ranks agree on it before the frame is committed (h5_agree). */
static bool failed(const mz_h5_out *o, int *rc, int r)
{
    if (r)
        *rc = -1;
    return r && !o->par;
}

/* Rows of a one-per-frame series this rank writes: rank 0's (all of them in one process). */
static size_t mine(const mz_h5_out *o, size_t count) { return h5_rank0(o) ? count : 0; }

/* After a failed frame: shrink every series back to the complete frames, so that readers never
 * see a half-written one. Best effort: the disk may still be full. */
static void roll_back(mz_h5_out *o)
{
    hid_t sets[MZ_FIELD_COUNT + 5] = {o->step, o->time, o->rigid_com, o->rigid_quat,
                                      o->moving};
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        sets[f + 5] = o->value[f];
    for (int k = 0; k < MZ_FIELD_COUNT + 5; k++) {
        hsize_t dims[3];
        hid_t s = sets[k] < 0 ? -1 : H5Dget_space(sets[k]);
        if (s >= 0 && H5Sget_simple_extent_dims(s, dims, NULL) > 0 &&
            dims[0] > (hsize_t)o->frames) {
            dims[0] = (hsize_t)o->frames;
            H5Dset_extent(sets[k], dims);
        }
        h5_close_id(s);
    }
    h5_views_cut(o, o->frames);
    int64_t fw = o->frames;
    hid_t a = H5Aopen_by_name(o->file, "/parameters/run", "frames_written", H5P_DEFAULT,
                              H5P_DEFAULT);
    if (a >= 0)
        H5Awrite(a, H5T_NATIVE_INT64, &fw);
    h5_close_id(a);
    H5Fflush(o->file, H5F_SCOPE_GLOBAL);
    h5_file_trim(o);
    o->in_frame = false;
}

static const char *field_value_name(int f, char name[96])
{
    snprintf(name, 96, "/particles/all/%s/value", mz_field_infos[f].name);
    return name;
}

int h5_out_begin_frame(mz_h5_out *o)
{
    unsigned long long bytes = 4ull * 7 * o->n_rigids;
    bytes += 12ull * o->n_moving;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (o->fields & MZ_FIELD_BIT(f))
            bytes += 4ull * (unsigned)mz_field_infos[f].components * o->n;
    char what[64], name[96];
    snprintf(what, sizeof what, "frame %ld", o->frames);
    if (h5_file_reserve(o, bytes, what)) /* agreed when collective */
        return -1;
    o->in_frame = true;
    int rc = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if ((o->fields & MZ_FIELD_BIT(f)) &&
            failed(o, &rc, grow_row(o, o->value[f], field_value_name(f, name))))
            goto fail;
    if ((o->n_rigids > 0 && (failed(o, &rc, grow_row(o, o->rigid_com, RIGID "/center_of_mass/value")) ||
                             failed(o, &rc, grow_row(o, o->rigid_quat, RIGID "/orientation/value")))) ||
        (o->moving_at && failed(o, &rc, grow_row(o, o->moving, MOVING_VALUE))) ||
        failed(o, &rc, grow_row(o, o->step, "/particles/all/position/step")) ||
        failed(o, &rc, grow_row(o, o->time, "/particles/all/position/time")) || h5_agree(o, rc))
        goto fail;
    return 0;
fail:
    roll_back(o);
    return -1;
}

int h5_out_write_rows(mz_h5_out *o, size_t first, size_t count,
                      const float *const data[MZ_FIELD_COUNT])
{
    char name[96];
    int rc = 0;
    if (!o->in_frame || first > o->n || count > o->n - first) {
        mz_error("writing %s: rows %zu to %zu of frame %ld (the file has %zu particles)", o->path,
                 first, first + count, o->frames, o->n);
        if (!o->in_frame || failed(o, &rc, -1)) {
            if (o->in_frame)
                roll_back(o);
            return -1;
        }
        count = 0; /* collective: this rank joins the writes with no rows */
    }
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(o->fields & MZ_FIELD_BIT(f)))
            continue;
        size_t c = data[f] ? count : 0;
        if (!data[f]) {
            mz_error("writing %s: frame %ld has no %s data", o->path, o->frames,
                     mz_field_infos[f].name);
            if (failed(o, &rc, -1))
                goto fail;
        }
        if ((c > 0 || o->par) &&
            failed(o, &rc, write_rows(o, o->value[f], field_value_name(f, name),
                                      H5T_NATIVE_FLOAT, first, c, data[f])))
            goto fail;
    }
    if (h5_agree(o, rc))
        goto fail;
    return 0;
fail:
    roll_back(o);
    return -1;
}

int h5_out_commit_frame(mz_h5_out *o, long step, double time, const float *rigid_pose)
{
    if (!o->in_frame)
        return -1;
    int rc = 0;
    if (o->n_rigids > 0 && !rigid_pose && h5_rank0(o)) {
        mz_error("writing %s: frame %ld has no rigid body poses", o->path, o->frames);
        if (failed(o, &rc, -1))
            goto fail;
    }
    int64_t step64 = step;
    if (o->n_rigids > 0) {
        float *com = o->rigid_buf, *quat = o->rigid_buf + 3 * o->n_rigids;
        for (size_t b = 0; rigid_pose && b < o->n_rigids; b++) {
            memcpy(com + 3 * b, rigid_pose + 8 * b, 3 * sizeof *com);
            memcpy(quat + 4 * b, rigid_pose + 8 * b + 4, 4 * sizeof *quat);
        }
        size_t nr = rigid_pose ? mine(o, o->n_rigids) : 0;
        if (failed(o, &rc, write_rows(o, o->rigid_com, RIGID "/center_of_mass/value",
                                      H5T_NATIVE_FLOAT, 0, nr, com)) ||
            failed(o, &rc, write_rows(o, o->rigid_quat, RIGID "/orientation/value",
                                      H5T_NATIVE_FLOAT, 0, nr, quat)))
            goto fail;
    }
    if (o->moving_at) { /* a function of the time alone: a resumed run writes the same */
        if (h5_rank0(o))
            o->moving_at(o->moving_ctx, time, o->moving_buf);
        if (failed(o, &rc, write_rows(o, o->moving, MOVING_VALUE, H5T_NATIVE_FLOAT, 0,
                                      mine(o, o->n_moving), o->moving_buf)))
            goto fail;
    }
    if (failed(o, &rc, write_rows(o, o->step, "/particles/all/position/step", H5T_NATIVE_INT64,
                                  0, mine(o, 1), &step64)) ||
        failed(o, &rc, write_rows(o, o->time, "/particles/all/position/time", H5T_NATIVE_DOUBLE,
                                  0, mine(o, 1), &time)) ||
        failed(o, &rc, h5_views_add(o, o->frames)) ||
        failed(o, &rc, h5_put_int_attr(o, "/parameters/run", "frames_written", o->frames + 1)))
        goto fail;
    /* The flush makes the frame durable: a killed run keeps every frame before it. */
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing frame %ld", o->frames);
        if (failed(o, &rc, -1))
            goto fail;
    }
    /* Collective: every rank's writes and flush went through, or every rank rolls back. */
    if (h5_agree(o, rc))
        goto fail;
    h5_file_trim(o);
    o->in_frame = false;
    o->frames++;
    /* The sidecar only ever names frames already on disk. */
    return h5_rank0(o) ? xdmf_append_frame(o->xdmf, o->frames - 1, step, time) : 0;
fail:
    roll_back(o);
    return -1;
}

void h5_out_abort_frame(mz_h5_out *o)
{
    if (o->in_frame)
        roll_back(o);
}

int h5_out_write_frame(mz_h5_out *o, long step, double time,
                       const float *const data[MZ_FIELD_COUNT], const float *rigid_pose)
{
    if (h5_out_begin_frame(o) || h5_out_write_rows(o, 0, o->n, data))
        return -1;
    return h5_out_commit_frame(o, step, time, rigid_pose);
}
