/* Kernel arguments in one call, each with its size taken from the variable itself:
 *     KARGS(kernel, "name", A(x), A(y), ...)
 * sets arguments 0, 1, ... in order; a failure names the kernel and the argument. */
#ifndef MZ_KARGS_H
#define MZ_KARGS_H
#include "device/cl_ctx.h"

#include <stdbool.h>

typedef struct mz_karg {
    size_t size;
    const void *ptr;
} mz_karg;
#define A(x) ((mz_karg){sizeof(x), &(x)})
#define KARGS(k, name, ...) KARGS_FROM(k, name, 0, __VA_ARGS__)
/* The same from argument `first` on (the ones before set otherwise: a local buffer's size). */
#define KARGS_FROM(k, name, first, ...) \
    set_kernel_args((k), (name), (first), (const mz_karg[]){__VA_ARGS__}, \
                    sizeof((const mz_karg[]){__VA_ARGS__}) / sizeof(mz_karg))
bool set_kernel_args(cl_kernel k, const char *name, size_t first, const mz_karg *args,
                     size_t count);

#endif
