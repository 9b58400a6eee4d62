/* Inside io/: what checkpoint.c and checkpoint_ranks.c (a distributed run's checkpoints) share.
 * Not for use outside io/: the rest of mizu sees io/checkpoint.h. */
#ifndef MZ_CHECKPOINT_FILE_H
#define MZ_CHECKPOINT_FILE_H
#include "io/checkpoint.h"

#include <hdf5.h>

#include <stdbool.h>
#include <stdint.h>

#define CKPT_FORMAT "mizu checkpoint"
/* 2: run id, input digests, checksums of the record and the state; 3: the progress into the
 * frame (a run stopped between two steps) */
#define CKPT_VERSION 3

/* "checkpoint PATH: WHAT failed". */
void ckpt_fail(const char *path, const char *what);
/* "checkpoint PATH damaged: WHAT; it cannot be resumed ...". */
void ckpt_damaged(const char *path, const char *what);
/* An empty dataset of `bytes` bytes (written piece by piece), or -1. */
hid_t ckpt_make_bytes(hid_t file, const char *name, size_t bytes);
/* Bytes [at, at + n) of dataset d written from buf (write) or read into it. 0, or -1. */
int ckpt_bytes_at(hid_t d, size_t at, size_t n, void *buf, bool write);
/* Attribute NAME of obj read as mtype. 0, or -1. */
int ckpt_get_attr(hid_t obj, const char *name, hid_t mtype, void *v);
/* The state digest's step for a part's name. */
uint64_t ckpt_digest_text(uint64_t h, const char *t);
/* The record's digest: every value in a fixed order, so a damaged one shows. */
uint64_t ckpt_record_digest(const mz_ckpt *c);
/* Bytes of dataset NAME, malloc'd with a NUL after them, *bytes set; NULL if missing,
 * unreadable or longer than max (then *bytes says how long). */
char *ckpt_get_bytes(hid_t file, const char *name, size_t max, size_t *bytes);
/* A text attribute, malloc'd; NULL if missing or not text. */
char *ckpt_get_text_attr(hid_t obj, const char *name);
/* A device buffer's size in bytes. */
size_t ckpt_mem_size(cl_mem m);

/* Distributed (checkpoint_ranks.c). Ranks other than 0: their owned stretch of every
 * per-particle part, in part order, to rank 0. */
void ckpt_send_owned_parts(mz_sim *sim);
/* Rank 0: one part as every rank's owned stretch in rank order (counts[q] particles from rank
 * q), written as dataset NAME of file (file < 0: only received), the digest chained over the
 * pieces. 0, or -1. */
int ckpt_write_gathered_part(hid_t file, const char *name, mz_sim *sim,
                             const mz_state_part *part, const uint64_t *counts, uint64_t *h);
/* Every rank: rank 0 checks the whole state, then rank r restores the r-th equal stretch of
 * the one-process order as its owned particles. 0, or -1 after reporting. */
int ckpt_restore_share(const char *path, hid_t file, mz_sim *sim);

#endif
