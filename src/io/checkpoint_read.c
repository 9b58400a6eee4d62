/* Checkpoint files: reading one back and restoring a simulation from it (checkpoint.c writes
 * them; the layout in checkpoint.h). */
#include "io/checkpoint_file.h"

#include "dist/dist.h"

#include "scene/bodies.h"
#include "util/digest.h"
#include "util/err.h"

#include <hdf5.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hid_t open_checkpoint(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0) {
        mz_error("cannot read checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    char *format = file < 0 ? NULL : ckpt_get_text_attr(file, "format");
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
    char *format = file < 0 ? NULL : ckpt_get_text_attr(file, "format");
    size_t len = 0;
    if (format && !strcmp(format, CKPT_FORMAT))
        *output_path = ckpt_get_bytes(file, "/run/output_path", 1 << 16, &len);
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
        ck->solver = ckpt_get_text_attr(run, "solver");
        ck->device = ckpt_get_text_attr(run, "device");
        ck->run_id = ckpt_get_text_attr(run, "run_id");
        ck->scene_path = ckpt_get_bytes(file, "/run/scene_path", 1 << 16, &len);
        ck->scene_given = ckpt_get_bytes(file, "/run/scene_given", MZ_SCENE_MAX_BYTES, &len);
        ck->output_path = ckpt_get_bytes(file, "/run/output_path", 1 << 16, &len);
        char *ov = ckpt_get_bytes(file, "/run/overrides", MZ_SCENE_MAX_BYTES, &ov_len);
        char *in = ckpt_get_bytes(file, "/run/inputs", 1 << 26, &in_len);
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
                      : ckpt_record_digest(ck) != digest ? "the run record does not match its checksum"
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

/* One process of a solver that keeps id order, restoring the state a distributed run wrote
 * (its ranks' order): every per-particle part permuted into id order (the ids checked already:
 * a permutation). Identity for a checkpoint one process wrote. */
static void put_in_id_order(mz_sim *sim, const mz_state_part *parts, size_t np, char **bufs)
{
    const uint32_t *ids = NULL;
    size_t n = sim->n;
    for (size_t i = 0; i < np; i++)
        if (!strcmp(parts[i].name, "id"))
            ids = (const uint32_t *)bufs[i];
    if (!ids || !sim->solver->id_order)
        return;
    uint32_t *order = xmalloc((n ? n : 1) * sizeof *order); /* order[id] = the slot it was in */
    bool moved = false;
    for (size_t k = 0; k < n; k++) {
        uint32_t id;
        memcpy(&id, (const char *)ids + 4 * k, 4);
        order[id] = (uint32_t)k;
        moved |= id != k;
    }
    for (size_t i = 0; moved && i < np; i++) {
        size_t e = parts[i].elem;
        if (!e)
            continue;
        char *to = xmalloc(e * (n ? n : 1));
        for (size_t id = 0; id < n; id++)
            memcpy(to + e * id, bufs[i] + e * order[id], e);
        memcpy(bufs[i], to, e * n);
        free(to);
    }
    free(order);
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
        size_t want = parts[i].mem ? ckpt_mem_size(*parts[i].mem) : parts[i].bytes, got = 0;
        bufs[i] = ckpt_get_bytes(file, name, want, &got);
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
    if (rc == 0)
        put_in_id_order(sim, parts, np, bufs);
    for (size_t i = 0; i < np; i++) {
        size_t want = parts[i].mem ? ckpt_mem_size(*parts[i].mem) : parts[i].bytes;
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
