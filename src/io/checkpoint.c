/* Checkpoint files (layout in checkpoint.h). */
#include "io/checkpoint_file.h"

#include "dist/dist.h"
#include "io/h5_file.h"

#include "scene/bodies.h"
#include "util/digest.h"
#include "util/err.h"
#include "util/filelock.h"

#include <hdf5.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MIZU_VERSION
#define MIZU_VERSION "unknown"
#endif

#define CKPT_FORMAT "mizu checkpoint"
/* 2: run id, input digests, checksums of the record and the state; 3: the progress into the
 * frame (a run stopped between two steps) */
#define CKPT_VERSION 3

size_t sim_state_parts(mz_sim *sim, mz_state_part *parts, size_t max)
{
    /* pred too: solvers that swap it with pos (SPH) keep a live copy there. */
    const mz_state_part common[] = {
        {"position", &sim->pos, NULL, 0, 16},   {"predicted", &sim->pred, NULL, 0, 16},
        {"velocity", &sim->vel, NULL, 0, 16},   {"inverse_mass", &sim->inv_mass, NULL, 0, 4},
        {"id", &sim->id, NULL, 0, 4},           {"body", &sim->body, NULL, 0, 4},
        {"rigid_pose", &sim->rigid_pose, NULL, 0, 0},
    };
    size_t k = sim_state_existing(common, sizeof common / sizeof *common, parts, max);
    if (sim->solver->state)
        k += sim->solver->state(sim, parts + k, max - k);
    return k;
}

/* ---- small HDF5 helpers: every failure is reported once, naming the file ---- */

void ckpt_fail(const char *path, const char *what)
{
    mz_error("checkpoint %s: %s failed", path, what);
}

/* An empty dataset of `bytes` bytes (written piece by piece). */
hid_t ckpt_make_bytes(hid_t file, const char *name, size_t bytes)
{
    hsize_t dims[1] = {bytes};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t d = space < 0 ? -1
                        : H5Dcreate2(file, name, H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                     H5P_DEFAULT);
    if (space >= 0)
        H5Sclose(space);
    return d;
}

/* Bytes [at, at + n) of dataset d written from buf (write) or read into it. 0, or -1. */
int ckpt_bytes_at(hid_t d, size_t at, size_t n, void *buf, bool write)
{
    if (n == 0)
        return 0;
    hsize_t start[1] = {at}, count[1] = {n};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, count, NULL);
    int rc = fs >= 0 && ms >= 0 &&
                     H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                     (write ? H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, buf)
                            : H5Dread(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, buf)) >= 0
                 ? 0
                 : -1;
    if (fs >= 0)
        H5Sclose(fs);
    if (ms >= 0)
        H5Sclose(ms);
    return rc;
}

static int put_bytes(hid_t file, const char *name, const void *data, size_t bytes)
{
    hid_t d = ckpt_make_bytes(file, name, bytes);
    int rc = d >= 0 && ckpt_bytes_at(d, 0, bytes, (void *)data, true) == 0 ? 0 : -1;
    if (d >= 0)
        H5Dclose(d);
    return rc;
}

/* Bytes of dataset name: malloc'd (with a NUL after them), *bytes set. NULL if missing,
 * unreadable or longer than max (then *bytes says how long). */
static char *get_bytes(hid_t file, const char *name, size_t max, size_t *bytes)
{
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return NULL;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t space = d < 0 ? -1 : H5Dget_space(d);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    char *buf = NULL;
    if (n >= 0)
        *bytes = (size_t)n;
    if (n >= 0 && (unsigned long long)n <= max) {
        buf = xmalloc((size_t)n + 1);
        buf[n] = 0;
        if (n > 0 && H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            free(buf);
            buf = NULL;
        }
    }
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    return buf;
}

static int put_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = space < 0 ? -1 : H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, mtype, v) >= 0 ? 0 : -1;
    if (a >= 0)
        H5Aclose(a);
    if (space >= 0)
        H5Sclose(space);
    return rc;
}

static int put_long(hid_t obj, const char *name, long v)
{
    int64_t x = v;
    return put_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &x);
}

static int put_double(hid_t obj, const char *name, double v)
{
    return put_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int put_text_attr(hid_t obj, const char *name, const char *s)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    int rc = t >= 0 && H5Tset_size(t, strlen(s) + 1) >= 0 ? put_attr(obj, name, t, t, s) : -1;
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

int ckpt_get_attr(hid_t obj, const char *name, hid_t mtype, void *v)
{
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    int rc = a >= 0 && H5Aread(a, mtype, v) >= 0 ? 0 : -1;
    if (a >= 0)
        H5Aclose(a);
    return rc;
}

static char *get_text_attr(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0)
        return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = a < 0 ? -1 : H5Aget_type(a);
    size_t len = t < 0 || H5Tget_class(t) != H5T_STRING ? 0 : H5Tget_size(t);
    char *s = NULL;
    if (len > 0) {
        hid_t m = H5Tcopy(H5T_C_S1);
        s = xcalloc(len + 1, 1);
        if (m < 0 || H5Tset_size(m, len) < 0 || H5Aread(a, m, s) < 0) {
            free(s);
            s = NULL;
        }
        if (m >= 0)
            H5Tclose(m);
    }
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
    return s;
}

/* ---- the record and its checksum ---- */

/* Digests of the files the scene reads besides itself (scene_input_digest: OBJ meshes, then
 * motion tables). */
static uint64_t *input_digests(const mz_scene *s, size_t *n)
{
    *n = scene_input_count(s);
    uint64_t *d = xcalloc(*n ? *n : 1, sizeof *d);
    for (size_t k = 0; k < *n; k++)
        d[k] = scene_input_digest(s, k);
    return d;
}

uint64_t ckpt_digest_text(uint64_t h, const char *t)
{
    return digest_add(h, t, strlen(t) + 1);
}

/* Every value of the record in a fixed order: a damaged attribute, text or digest shows. */
static uint64_t record_digest(const mz_ckpt *c)
{
    int64_t ints[7] = {c->frame, c->frames_written, c->step, (int64_t)c->particles,
                       (int64_t)c->n_overrides, (int64_t)c->n_inputs, c->frame_steps};
    double reals[4] = {c->time, c->dt_min, c->dt_max, c->frame_time};
    uint64_t h = digest_add(DIGEST_START, ints, sizeof ints);
    h = digest_add(h, reals, sizeof reals);
    const char *texts[] = {c->solver, c->device, c->run_id, c->scene_path, c->scene_given,
                           c->output_path};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        h = ckpt_digest_text(h, texts[i]);
    for (size_t i = 0; i < c->n_overrides; i++)
        h = ckpt_digest_text(h, c->overrides[i]);
    return digest_add(h, c->inputs, c->n_inputs * sizeof *c->inputs);
}

static int put_digest(hid_t obj, uint64_t d)
{
    return put_attr(obj, "digest", H5T_STD_U64LE, H5T_NATIVE_UINT64, &d);
}

/* ---- write ---- */

static int write_record(hid_t file, const mz_ckpt *c)
{
    hid_t run = H5Gcreate2(file, "/run", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (run < 0)
        return -1;
    mz_str ov = {0};
    for (size_t i = 0; i < c->n_overrides; i++)
        str_addf(&ov, "%s%c", c->overrides[i], 0);
    int rc = put_long(run, "frame", c->frame) ||
                     put_long(run, "frames_written", c->frames_written) ||
                     put_long(run, "step", c->step) || put_double(run, "time", c->time) ||
                     put_double(run, "dt_min", c->dt_min) ||
                     put_double(run, "dt_max", c->dt_max) ||
                     put_long(run, "frame_steps", c->frame_steps) ||
                     put_double(run, "frame_time", c->frame_time) ||
                     put_long(run, "particles", (long)c->particles) ||
                     put_text_attr(run, "solver", c->solver) ||
                     put_text_attr(run, "device", c->device) ||
                     put_text_attr(run, "run_id", c->run_id) ||
                     put_text_attr(run, "mizu_version", MIZU_VERSION) ||
                     put_digest(run, record_digest(c)) ||
                     put_bytes(file, "/run/scene_path", c->scene_path, strlen(c->scene_path)) ||
                     put_bytes(file, "/run/scene_given", c->scene_given,
                               strlen(c->scene_given)) ||
                     put_bytes(file, "/run/overrides", ov.s, ov.len) ||
                     put_bytes(file, "/run/output_path", c->output_path,
                               strlen(c->output_path)) ||
                     put_bytes(file, "/run/inputs", c->inputs, c->n_inputs * sizeof *c->inputs)
                 ? -1
                 : 0;
    str_free(&ov);
    H5Gclose(run);
    return rc;
}

static size_t mem_size(cl_mem m)
{
    size_t bytes = 0;
    clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    return bytes;
}

/* The state parts into /state of file. Distributed (rank 0): the per-particle parts as every
 * rank's owned stretch in rank order; with file < 0 (a failure before) the pieces are still
 * received, so that no rank waits forever. */
static int write_state(const char *path, hid_t file, mz_sim *sim)
{
    mz_state_part parts[MZ_MAX_STATE_PARTS];
    size_t np = sim_state_parts(sim, parts, MZ_MAX_STATE_PARTS);
    hid_t g = file < 0 ? -1 : H5Gcreate2(file, "/state", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = g < 0 ? -1 : 0;
    uint64_t h = DIGEST_START, *counts = NULL;
    if (sim->slabs) { /* every rank's owned particles */
        size_t begin, end;
        sim_owned(sim, &begin, &end);
        uint64_t own = end - begin;
        counts = xmalloc((size_t)dist_size() * sizeof *counts);
        dist_gather_bytes(&own, sizeof own, counts);
    }
    for (size_t i = 0; i < np; i++) {
        char name[96];
        snprintf(name, sizeof name, "/state/%s", parts[i].name);
        h = ckpt_digest_text(h, parts[i].name);
        if (sim->slabs && parts[i].elem) {
            if (ckpt_write_gathered_part(rc ? -1 : file, name, sim, &parts[i], counts, &h) != 0 &&
                rc == 0) {
                ckpt_fail(path, name);
                rc = -1;
            }
            continue;
        }
        if (rc != 0)
            continue;
        size_t bytes = parts[i].mem ? mem_size(*parts[i].mem) : parts[i].bytes;
        void *buf = parts[i].host;
        if (parts[i].mem) {
            buf = xmalloc(bytes ? bytes : 1);
            if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, *parts[i].mem, CL_TRUE, 0, bytes, buf,
                                           0, NULL, NULL),
                       "clEnqueueReadBuffer(checkpoint)"))
                rc = -1;
        }
        if (rc == 0 && put_bytes(file, name, buf, bytes) != 0) {
            ckpt_fail(path, name);
            rc = -1;
        }
        h = digest_add(h, buf, bytes);
        if (parts[i].mem)
            free(buf);
    }
    free(counts);
    if (rc == 0)
        rc = put_digest(g, h);
    if (g >= 0)
        H5Gclose(g);
    return rc;
}

/* fsync a file, or the directory holding it. */
static int sync_path(const char *path, int dir)
{
    char *p = xstrdup(path);
    if (dir) {
        char *slash = strrchr(p, '/');
        if (slash)
            slash[slash == p] = 0;
        else
            strcpy(p, ".");
    }
    int fd = open(p, O_RDONLY);
    int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    free(p);
    return dir ? 0 : rc; /* some filesystems refuse fsync on directories */
}

/* Rank 0 (or the one process): the file. Distributed, write_state runs whatever fails before
 * it, to take the other ranks' pieces. */
static int write_file(const char *path, mz_sim *sim, const mz_ckpt *info)
{
    mz_str tmp = {0};
    str_addf(&tmp, "%s.tmp", path);
    /* Locked while it is written, so that two runs never write one checkpoint together. */
    int fd = open(tmp.s, O_RDWR | O_CREAT, 0666);
    if (fd < 0 || file_lock(fd, tmp.s, "checkpoint") != 0) {
        if (fd < 0)
            mz_error("checkpoint %s: cannot create %s: %s", path, tmp.s, strerror(errno));
        else
            close(fd);
        str_free(&tmp);
        if (sim->slabs)
            write_state(path, -1, sim);
        return -1;
    }
    bool state_done = false;
    /* HDF5's own lock would collide with the one just taken. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t file = fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0
                     ? H5Fcreate(tmp.s, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                     : -1;
    if (fapl >= 0)
        H5Pclose(fapl);
    int rc = -1;
    if (file < 0) {
        mz_error("checkpoint %s: cannot create %s: %s", path, tmp.s,
                 errno ? strerror(errno) : "HDF5 refused");
        goto out;
    }
    mz_ckpt rec = *info;
    rec.step = sim->step;
    rec.time = sim->time;
    rec.dt_min = sim->dt_min;
    rec.dt_max = sim->dt_max;
    rec.frame_steps = sim->frame_steps;
    rec.frame_time = sim->frame_time;
    rec.particles = sim->n_total;
    rec.solver = (char *)mz_solver_names[scene_solver(sim->scene)];
    rec.device = sim->cl->device_name;
    rec.inputs = input_digests(sim->scene, &rec.n_inputs);
    int bad = put_text_attr(file, "format", CKPT_FORMAT) ||
              put_long(file, "format_version", CKPT_VERSION) || write_record(file, &rec);
    free(rec.inputs);
    if (bad) {
        ckpt_fail(path, "writing the run record");
        H5Fclose(file);
        goto out;
    }
    state_done = true;
    if (write_state(path, file, sim) != 0) {
        H5Fclose(file);
        goto out;
    }
    if (H5Fclose(file) < 0) {
        ckpt_fail(path, "closing (is the disk full?)");
        goto out;
    }
    if (sync_path(tmp.s, 0) != 0 || rename(tmp.s, path) != 0) {
        mz_error("checkpoint %s: %s", path, strerror(errno));
        goto out;
    }
    sync_path(path, 1);
    rc = 0;
out:
    if (!state_done && sim->slabs)
        write_state(path, -1, sim);
    if (rc != 0)
        remove(tmp.s);
    close(fd);
    str_free(&tmp);
    return rc;
}

int checkpoint_write(const char *path, mz_sim *sim, const mz_ckpt *info)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (!cl_ok(clFinish(sim->cl->queue), "clFinish(checkpoint)")) {
        if (sim->slabs)
            dist_abort(MZ_EXIT_RUNTIME);
        return -1;
    }
    if (!sim->slabs)
        return write_file(path, sim, info);
    /* Distributed: rank 0 writes what every rank sends it; its result is every rank's. */
    int rc = 0;
    if (dist_rank() == 0) {
        rc = write_file(path, sim, info);
    } else {
        size_t begin, end;
        sim_owned(sim, &begin, &end);
        uint64_t own = end - begin;
        dist_gather_bytes(&own, sizeof own, NULL);
        ckpt_send_owned_parts(sim);
    }
    dist_bcast(&rc, sizeof rc);
    return rc;
}

/* ---- read ---- */

static hid_t open_checkpoint(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0) {
        mz_error("cannot read checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    char *format = file < 0 ? NULL : get_text_attr(file, "format");
    long version = 0;
    int64_t v = 0;
    if (file >= 0 && ckpt_get_attr(file, "format_version", H5T_NATIVE_INT64, &v) == 0)
        version = (long)v;
    if (file < 0 || !format || strcmp(format, CKPT_FORMAT) != 0)
        mz_error("%s is not a mizu checkpoint", path);
    else if (version != CKPT_VERSION)
        mz_error("checkpoint %s has format version %ld; this mizu reads version %d", path,
                 version, CKPT_VERSION);
    else {
        free(format);
        return file;
    }
    free(format);
    if (file >= 0)
        H5Fclose(file);
    return -1;
}

/* "checkpoint damaged: ..." for a checkpoint whose values do not hold together. */
void ckpt_damaged(const char *path, const char *what)
{
    mz_error("checkpoint %s damaged: %s; it cannot be resumed (an earlier checkpoint, or a new "
             "run, can)", path, what);
}

static bool finite_nonneg(double x) { return isfinite(x) && x >= 0; }

int checkpoint_peek(const char *path, char **output_path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *output_path = NULL;
    hid_t file = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    char *format = file < 0 ? NULL : get_text_attr(file, "format");
    size_t len = 0;
    if (format && !strcmp(format, CKPT_FORMAT))
        *output_path = get_bytes(file, "/run/output_path", 1 << 16, &len);
    free(format);
    if (file >= 0)
        H5Fclose(file);
    return *output_path ? 1 : 0;
}

int checkpoint_read(const char *path, mz_ckpt *ck)
{
    memset(ck, 0, sizeof *ck);
    hid_t file = open_checkpoint(path);
    if (file < 0)
        return -1;
    hid_t run = H5Gopen2(file, "/run", H5P_DEFAULT);
    int64_t frame = 0, written = 0, step = 0, particles = 0, frame_steps = 0;
    uint64_t digest = 0;
    size_t len = 0, ov_len = 0, in_len = 0;
    int bad = run < 0 || ckpt_get_attr(run, "frame", H5T_NATIVE_INT64, &frame) ||
              ckpt_get_attr(run, "frames_written", H5T_NATIVE_INT64, &written) ||
              ckpt_get_attr(run, "step", H5T_NATIVE_INT64, &step) ||
              ckpt_get_attr(run, "particles", H5T_NATIVE_INT64, &particles) ||
              ckpt_get_attr(run, "time", H5T_NATIVE_DOUBLE, &ck->time) ||
              ckpt_get_attr(run, "dt_min", H5T_NATIVE_DOUBLE, &ck->dt_min) ||
              ckpt_get_attr(run, "dt_max", H5T_NATIVE_DOUBLE, &ck->dt_max) ||
              ckpt_get_attr(run, "frame_steps", H5T_NATIVE_INT64, &frame_steps) ||
              ckpt_get_attr(run, "frame_time", H5T_NATIVE_DOUBLE, &ck->frame_time) ||
              ckpt_get_attr(run, "digest", H5T_NATIVE_UINT64, &digest);
    if (!bad) {
        ck->solver = get_text_attr(run, "solver");
        ck->device = get_text_attr(run, "device");
        ck->run_id = get_text_attr(run, "run_id");
        ck->scene_path = get_bytes(file, "/run/scene_path", 1 << 16, &len);
        ck->scene_given = get_bytes(file, "/run/scene_given", MZ_SCENE_MAX_BYTES, &len);
        ck->output_path = get_bytes(file, "/run/output_path", 1 << 16, &len);
        char *ov = get_bytes(file, "/run/overrides", MZ_SCENE_MAX_BYTES, &ov_len);
        char *in = get_bytes(file, "/run/inputs", 1 << 26, &in_len);
        bad = !ck->solver || !ck->device || !ck->run_id || !ck->scene_path ||
              !ck->scene_given || !ck->output_path || !ov || !in ||
              in_len % sizeof *ck->inputs != 0;
        for (size_t i = 0; ov && i < ov_len; i += strlen(ov + i) + 1) {
            ck->overrides = xrealloc(ck->overrides, (ck->n_overrides + 1) * sizeof(char *));
            ck->overrides[ck->n_overrides++] = xstrdup(ov + i);
        }
        free(ov);
        if (in && !bad) {
            ck->n_inputs = in_len / sizeof *ck->inputs;
            ck->inputs = xmalloc(in_len ? in_len : 1);
            memcpy(ck->inputs, in, in_len);
        }
        free(in);
    }
    if (run >= 0)
        H5Gclose(run);
    H5Fclose(file);
    ck->frame = (long)frame;
    ck->frames_written = (long)written;
    ck->step = (long)step;
    ck->frame_steps = (long)frame_steps;
    ck->particles = (size_t)particles;
    const char *why = bad ? "the run record is incomplete"
                      : record_digest(ck) != digest ? "the run record does not match its checksum"
                      : frame < 0 || written < 0 || step < 0 || particles <= 0 ||
                              (uint64_t)particles > UINT32_MAX || frame_steps < 0 ||
                              frame_steps > step
                          ? "a counter is out of range"
                      : !finite_nonneg(ck->time) || !finite_nonneg(ck->dt_min) ||
                              !finite_nonneg(ck->dt_max) || !finite_nonneg(ck->frame_time)
                          ? "a time is not a finite, non-negative number"
                      : strlen(ck->run_id) == 0 ? "the run id is empty"
                                                : NULL;
    if (why) {
        ckpt_damaged(path, why);
        checkpoint_free(ck);
        return -1;
    }
    return 0;
}
/* The common parts a kernel indexes with: ids a permutation of 0..n-1, body indices of the
 * scene's bodies. NULL when the part is sound, else what is wrong. */
static const char *check_indices(const mz_sim *sim, const char *name, const char *buf,
                                 size_t bytes)
{
    size_t n = bytes / 4;
    if (!strcmp(name, "body")) {
        uint32_t bodies = (uint32_t)(sim->scene->n_fluids + bodies_count(sim->scene)), b;
        for (size_t i = 0; i < n; i++)
            if (memcpy(&b, buf + 4 * i, 4), b >= bodies)
                return "a body index is out of range";
    } else if (!strcmp(name, "id")) {
        unsigned char *seen = xcalloc(n ? n : 1, 1);
        const char *why = NULL;
        for (size_t i = 0; i < n && !why; i++) {
            uint32_t id;
            memcpy(&id, buf + 4 * i, 4);
            if (id >= n || seen[id]++)
                why = "the particle ids are not a permutation";
        }
        free(seen);
        return why;
    }
    return NULL;
}

static void set_counters(mz_sim *sim, const mz_ckpt *ck)
{
    sim->step = ck->step;
    sim->time = ck->time;
    sim->dt_min = ck->dt_min;
    sim->dt_max = ck->dt_max;
    sim->frame_steps = ck->frame_steps;
    sim->frame_time = ck->frame_time;
}

int checkpoint_restore(const char *path, const mz_ckpt *ck, mz_sim *sim)
{
    hid_t file = open_checkpoint(path);
    int rc = file < 0 ? -1 : 0;
    if (rc == 0 && ck->particles != sim->n_total) {
        mz_error("checkpoint %s holds %zu particles; the scene makes %zu", path, ck->particles,
                 sim->n_total);
        rc = -1;
    }
    if (sim->slabs) { /* every rank opened it (each reports its own failure) */
        rc = dist_max_int(rc) ? -1 : ckpt_restore_share(path, file, sim);
        if (file >= 0)
            H5Fclose(file);
        if (dist_max_int(rc != 0))
            return -1;
        set_counters(sim, ck);
        return 0;
    }
    mz_state_part parts[MZ_MAX_STATE_PARTS];
    size_t np = rc ? 0 : sim_state_parts(sim, parts, MZ_MAX_STATE_PARTS);
    uint64_t h = DIGEST_START, digest = 0;
    hid_t g = rc ? -1 : H5Gopen2(file, "/state", H5P_DEFAULT);
    if (rc == 0 && (g < 0 || ckpt_get_attr(g, "digest", H5T_NATIVE_UINT64, &digest) != 0)) {
        ckpt_damaged(path, "the state has no checksum");
        rc = -1;
    }
    if (g >= 0)
        H5Gclose(g);
    /* Everything is read and checked on the host before the device sees any of it. */
    char *bufs[MZ_MAX_STATE_PARTS] = {0};
    for (size_t i = 0; i < np && rc == 0; i++) {
        char name[96];
        snprintf(name, sizeof name, "/state/%s", parts[i].name);
        size_t want = parts[i].mem ? mem_size(*parts[i].mem) : parts[i].bytes, got = 0;
        bufs[i] = get_bytes(file, name, want, &got);
        const char *why = NULL;
        if (!bufs[i] || got != want) {
            mz_error("checkpoint %s: %s %s (%zu bytes; this scene needs %zu): the checkpoint "
                     "was written by another scene or mizu version, or is damaged",
                     path, name, got != want ? "has another size" : "cannot be read", got, want);
            rc = -1;
        } else if ((why = check_indices(sim, parts[i].name, bufs[i], want)) != NULL) {
            ckpt_damaged(path, why);
            rc = -1;
        } else {
            h = digest_add(ckpt_digest_text(h, parts[i].name), bufs[i], want);
        }
    }
    if (rc == 0 && h != digest) {
        ckpt_damaged(path, "the state does not match its checksum");
        rc = -1;
    }
    for (size_t i = 0; i < np; i++) {
        size_t want = parts[i].mem ? mem_size(*parts[i].mem) : parts[i].bytes;
        if (rc == 0 && parts[i].mem)
            rc = cl_ok(clEnqueueWriteBuffer(sim->cl->queue, *parts[i].mem, CL_TRUE, 0, want,
                                            bufs[i], 0, NULL, NULL),
                       "clEnqueueWriteBuffer(checkpoint)")
                     ? 0
                     : -1;
        else if (rc == 0)
            memcpy(parts[i].host, bufs[i], want);
        free(bufs[i]);
    }
    if (file >= 0)
        H5Fclose(file);
    if (rc == 0)
        set_counters(sim, ck);
    return rc;
}

void checkpoint_free(mz_ckpt *ck)
{
    free(ck->solver);
    free(ck->device);
    free(ck->scene_path);
    free(ck->scene_given);
    free(ck->output_path);
    free(ck->run_id);
    free(ck->inputs);
    for (size_t i = 0; i < ck->n_overrides; i++)
        free(ck->overrides[i]);
    free(ck->overrides);
    memset(ck, 0, sizeof *ck);
}

char *checkpoint_default_path(const char *out_path)
{
    const char *base = strrchr(out_path, '/');
    base = base ? base + 1 : out_path;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - out_path) : strlen(out_path);
    mz_str p = {0};
    str_addf(&p, "%.*s.ckpt.h5", (int)len, out_path);
    return p.s;
}
