/* A checksum of bytes, for files mizu must recognise as unchanged (checkpoints, the meshes a
 * scene reads). */
#ifndef MZ_DIGEST_H
#define MZ_DIGEST_H
#include <stddef.h>
#include <stdint.h>

/* FNV-1a, 64 bits: start from DIGEST_START and add bytes. Every change of a single byte changes
 * the result (each step is a bijection of the state), which is what tamper evidence against
 * damaged files needs; it is not a defence against a forger. */
#define DIGEST_START UINT64_C(0xcbf29ce484222325)
uint64_t digest_add(uint64_t h, const void *data, size_t n);

#endif
