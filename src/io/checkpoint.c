/* Checkpoint files: the helpers both sides share, and writing one (checkpoint_read.c reads
 * them back; the layout in checkpoint.h). */
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
char *ckpt_get_bytes(hid_t file, const char *name, size_t max, size_t *bytes)
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

char *ckpt_get_text_attr(hid_t obj, const char *name)
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
uint64_t ckpt_record_digest(const mz_ckpt *c)
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
                     put_digest(run, ckpt_record_digest(c)) ||
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

size_t ckpt_mem_size(cl_mem m)
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
        size_t bytes = parts[i].mem ? ckpt_mem_size(*parts[i].mem) : parts[i].bytes;
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
