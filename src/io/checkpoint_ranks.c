/* Checkpoints of a distributed run (checkpoint.h): rank 0 writes every rank's owned stretch of
 * each per-particle part in rank order, so the file is a single process's; a restore checks the
 * whole state on rank 0 and gives each rank its stretch. */
#include "io/checkpoint_file.h"

#include "dist/dist.h"
#include "dist/id_blocks.h"
#include "dist/slabs.h"
#include "scene/bodies.h"
#include "util/digest.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

/* A rank's owned stretch of a per-particle part, read from the device (malloc'd). */
static void *read_owned(mz_sim *sim, const mz_state_part *part, size_t *bytes)
{
    size_t begin, end;
    sim_owned(sim, &begin, &end);
    *bytes = part->elem * (end - begin);
    void *buf = xmalloc(*bytes ? *bytes : 1);
    if (*bytes && !cl_ok(clEnqueueReadBuffer(sim->cl->queue, *part->mem, CL_TRUE,
                                             part->elem * begin, *bytes, buf, 0, NULL, NULL),
                         "clEnqueueReadBuffer(checkpoint)"))
        dist_abort(MZ_EXIT_RUNTIME); /* the other ranks wait for this one's bytes */
    return buf;
}

/* Ranks other than 0: their owned stretch of every per-particle part, in part order, to rank 0
 * (which writes them after its own, so the file holds one process's device order). */
void ckpt_send_owned_parts(mz_sim *sim)
{
    mz_state_part parts[MZ_MAX_STATE_PARTS];
    size_t np = sim_state_parts(sim, parts, MZ_MAX_STATE_PARTS);
    for (size_t i = 0; i < np; i++) {
        if (!parts[i].elem)
            continue;
        size_t bytes;
        void *buf = read_owned(sim, &parts[i], &bytes);
        dist_send_bytes(0, buf, bytes);
        free(buf);
    }
}

/* Rank 0: part i as every rank's owned stretch in rank order (counts[q] particles from rank q),
 * written as one dataset; the digest chained over the pieces. Every piece is received even
 * after a failed write, so that no rank is left waiting. */
int ckpt_write_gathered_part(hid_t file, const char *name, mz_sim *sim,
                             const mz_state_part *part, const uint64_t *counts, uint64_t *h)
{
    size_t total = part->elem * sim->n_total, at = 0, bytes;
    hid_t d = ckpt_make_bytes(file, name, total);
    int rc = d >= 0 ? 0 : -1;
    for (int q = 0; q < dist_size(); q++) {
        void *buf;
        if (q == 0) {
            buf = read_owned(sim, part, &bytes);
        } else {
            bytes = part->elem * (size_t)counts[q];
            buf = xmalloc(bytes ? bytes : 1);
            dist_recv_bytes(q, buf, bytes);
        }
        if (rc == 0 && (at + bytes > total || ckpt_bytes_at(d, at, bytes, buf, true) != 0))
            rc = -1;
        *h = digest_add(*h, buf, bytes);
        at += bytes;
        free(buf);
    }
    if (d >= 0)
        H5Dclose(d);
    return rc == 0 && at == total ? 0 : -1;
}

/* A part that is not per particle: host bytes, or a whole device buffer (the rigid bodies and
 * their poses: the same bits on every rank). */
static size_t whole_bytes(const mz_state_part *part)
{
    return part->mem ? ckpt_mem_size(*part->mem) : part->bytes;
}

/* Distributed, rank 0: every part read in pieces of 64 MiB, its size, the ids (a permutation,
 * tracked in a bitmap of n bits), body indices and the state's digest checked; nothing is kept.
 * 0, or -1 after reporting. */
#define PIECE ((size_t)64 << 20)
static int verify_state(const char *path, hid_t file, mz_sim *sim, mz_state_part *parts,
                        size_t np)
{
    size_t n = sim->n_total;
    uint64_t h = DIGEST_START, digest = 0;
    hid_t g = H5Gopen2(file, "/state", H5P_DEFAULT);
    bool ok = g >= 0 && ckpt_get_attr(g, "digest", H5T_NATIVE_UINT64, &digest) == 0;
    if (g >= 0)
        H5Gclose(g);
    if (!ok) {
        ckpt_damaged(path, "the state has no checksum");
        return -1;
    }
    unsigned char *seen = xcalloc(n / 8 + 1, 1), *buf = xmalloc(PIECE);
    uint32_t bodies = (uint32_t)(sim->scene->n_fluids + bodies_count(sim->scene));
    const char *why = NULL;
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        char name[96];
        snprintf(name, sizeof name, "/state/%s", parts[i].name);
        size_t want = parts[i].elem ? parts[i].elem * n : whole_bytes(&parts[i]), got = 0;
        hid_t d = H5Lexists(file, name, H5P_DEFAULT) > 0 ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
        hid_t sp = d < 0 ? -1 : H5Dget_space(d);
        hssize_t pts = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
        if (sp >= 0)
            H5Sclose(sp);
        got = pts < 0 ? 0 : (size_t)pts;
        if (d < 0 || got != want) {
            mz_error("checkpoint %s: %s %s (%zu bytes; this scene needs %zu): the checkpoint "
                     "was written by another scene or mizu version, or is damaged",
                     path, name, d >= 0 ? "has another size" : "cannot be read", got, want);
            rc = -1;
        }
        h = ckpt_digest_text(h, parts[i].name);
        bool ids = !strcmp(parts[i].name, "id"), body = !strcmp(parts[i].name, "body");
        for (size_t at = 0; rc == 0 && at < want; at += PIECE) {
            size_t m = want - at < PIECE ? want - at : PIECE;
            if (ckpt_bytes_at(d, at, m, buf, false) != 0) {
                ckpt_fail(path, name);
                rc = -1;
                break;
            }
            h = digest_add(h, buf, m);
            for (size_t k = 0; (ids || body) && k + 4 <= m && !why; k += 4) {
                uint32_t v;
                memcpy(&v, buf + k, 4);
                if (body && v >= bodies)
                    why = "a body index is out of range";
                else if (ids && (v >= n || (seen[v / 8] >> (v % 8) & 1)))
                    why = "the particle ids are not a permutation";
                else if (ids)
                    seen[v / 8] |= (unsigned char)(1u << (v % 8));
            }
        }
        if (d >= 0)
            H5Dclose(d);
    }
    free(seen);
    free(buf);
    if (rc == 0 && (why || h != digest)) {
        ckpt_damaged(path, why ? why : "the state does not match its checksum");
        rc = -1;
    }
    return rc;
}

/* Distributed: after rank 0 checked the whole state, rank r takes the r-th equal stretch of
 * the one-process device order of every per-particle part as its owned particles (any split
 * into stretches in rank order is one the next exchange turns into the slabs' windows, with the
 * one-process order kept: docs/distributed.md), and every other part whole. */
int ckpt_restore_share(const char *path, hid_t file, mz_sim *sim)
{
    mz_state_part parts[MZ_MAX_STATE_PARTS];
    size_t np = sim_state_parts(sim, parts, MZ_MAX_STATE_PARTS);
    int rc = dist_rank() == 0 ? verify_state(path, file, sim, parts, np) : 0;
    dist_bcast(&rc, sizeof rc);
    if (rc != 0)
        return -1;
    size_t first = id_block_first(sim->n_total, dist_rank());
    size_t count = id_block_first(sim->n_total, dist_rank() + 1) - first;
    if (slabs_reserve(sim->slabs, count) != 0)
        return -1;
    /* Reserving may have replaced the buffers: the parts again. */
    np = sim_state_parts(sim, parts, MZ_MAX_STATE_PARTS);
    for (size_t i = 0; i < np && rc == 0; i++) {
        char name[96];
        snprintf(name, sizeof name, "/state/%s", parts[i].name);
        size_t bytes = parts[i].elem ? parts[i].elem * count : whole_bytes(&parts[i]);
        void *buf = parts[i].mem ? xmalloc(bytes ? bytes : 1) : parts[i].host;
        hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
        if (d < 0 || ckpt_bytes_at(d, parts[i].elem * first, bytes, buf, false) != 0) {
            ckpt_fail(path, name);
            rc = -1;
        } else if (parts[i].mem && bytes > 0 &&
                   !cl_ok(clEnqueueWriteBuffer(sim->cl->queue, *parts[i].mem, CL_TRUE, 0, bytes,
                                               buf, 0, NULL, NULL),
                          "clEnqueueWriteBuffer(checkpoint)")) {
            rc = -1;
        }
        if (d >= 0)
            H5Dclose(d);
        if (parts[i].mem)
            free(buf);
    }
    if (rc == 0 && slabs_own_all(sim->slabs, count) != 0)
        rc = -1;
    if (rc == 0)
        sim_set_count(sim, count);
    return rc;
}

