/* Rows in id order from particles spread over ranks (a distributed run's output): rank r
 * gathers the particles whose ids are in its block [id_block_first(n, r), id_block_first(n,
 * r + 1)), whichever rank's slab holds them now, so that no rank ever holds more than its
 * share of a frame. */
#ifndef MZ_ID_BLOCKS_H
#define MZ_ID_BLOCKS_H
#include <stddef.h>
#include <stdint.h>

/* The first id of rank r's block of n ids (r = ranks: n). */
size_t id_block_first(size_t n, int r);

/* m particles on this rank: their ids (each below n) and k arrays, src[a] with elem[a] bytes
 * per particle. Every particle goes to the rank whose block holds its id, which puts its bytes
 * at row id − first of dst[a]. Collective. Every id of a block must come exactly once: a
 * particle the exchanges lost or doubled stops the run (MPI_Abort) after saying so. */
void id_blocks_exchange(size_t n, size_t m, const uint32_t *id, int k, const void *const *src,
                        const size_t *elem, void *const *dst);

#endif
