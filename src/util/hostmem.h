/* How much more host memory this process may take now: the least of the memory available on
 * the machine (MemAvailable), what is left under the cgroup's limit (what SLURM and containers
 * set: cgroup v2 memory.max, v1 memory.limit_in_bytes) and under the address-space limit
 * (ulimit -v, which counts every mapping, the OpenCL runtime's too). A scene that needs more is
 * refused before its arrays are built, rather than swapping or being killed by the OOM killer
 * later. */
#ifndef MZ_HOSTMEM_H
#define MZ_HOSTMEM_H
#include <stddef.h>

typedef struct mz_host_limit {
    double bytes;
    const char *what; /* "the memory available on this machine", "the cgroup's memory limit"... */
} mz_host_limit;

mz_host_limit host_memory_limit(void);

/* NULL when `need` bytes fit; else a message naming the need, the limit and what sets it (a
 * static buffer), `what` saying what needs them (e.g. "the scene's 13658216 particles"). */
const char *host_memory_refusal(double need, const char *what);

#endif
