#include "util/hostmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void take(mz_host_limit *l, double bytes, const char *what)
{
    if (bytes >= 0 && bytes < l->bytes) {
        l->bytes = bytes;
        l->what = what;
    }
}

/* The first number in a small file (after `key` when given, as in /proc/meminfo); -1 when it
 * is missing or not a number ("max" in a cgroup file: no limit). */
static double file_number(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    double v = -1;
    while (f && v < 0 && fgets(line, sizeof line, f)) {
        const char *p = line;
        if (key) {
            if (strncmp(line, key, strlen(key)) != 0)
                continue;
            p += strlen(key);
        }
        while (*p == ' ')
            p++;
        if (*p >= '0' && *p <= '9')
            v = strtod(p, NULL);
        if (!key)
            break;
    }
    if (f)
        fclose(f);
    return v;
}

/* What is left under a limit: limit − in use, or -1 when there is no limit. */
static double left(double limit, double used)
{
    return limit < 0 ? -1 : limit - (used > 0 ? used : 0);
}

mz_host_limit host_memory_limit(void)
{
    mz_host_limit l = {1e300, "no limit"};
    double kb = file_number("/proc/meminfo", "MemAvailable:");
    if (kb >= 0)
        take(&l, 1024 * kb, "the memory available on this machine");
    take(&l, left(file_number("/sys/fs/cgroup/memory.max", NULL),
                  file_number("/sys/fs/cgroup/memory.current", NULL)),
         "the cgroup's memory limit");
    take(&l, left(file_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", NULL),
                  file_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", NULL)),
         "the cgroup's memory limit");
    /* The address-space limit counts every mapping: libraries and the OpenCL runtime too. */
    struct rlimit r;
    double vm_pages = file_number("/proc/self/statm", NULL), page = (double)sysconf(_SC_PAGESIZE);
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        take(&l, left((double)r.rlim_cur, vm_pages * page), "the address-space limit (ulimit -v)");
    return l;
}

const char *host_memory_refusal(double need, const char *what)
{
    static char msg[512];
    mz_host_limit l = host_memory_limit();
    if (need <= l.bytes)
        return NULL;
    snprintf(msg, sizeof msg, "%s need about %.3g GB of host memory; %s leaves %.3g GB", what,
             need / 1e9, l.what, l.bytes / 1e9);
    return msg;
}
