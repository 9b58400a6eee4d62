#include "util/filelock.h"

#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

/* The pid holding a flock on the file of fd, from /proc/locks; 0 when not found. */
static long lock_holder(int fd)
{
    struct stat st;
    FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
    long pid = 0;
    char line[256];
    while (f && !pid && fgets(line, sizeof line, f)) {
        char kind[16];
        long p;
        unsigned long inode;
        if (sscanf(line, "%*d: %15s %*s %*s %ld %*x:%*x:%lu", kind, &p, &inode) == 3 &&
            !strcmp(kind, "FLOCK") && inode == (unsigned long)st.st_ino)
            pid = p;
    }
    if (f)
        fclose(f);
    return pid;
}

int file_lock(int fd, const char *path, const char *what)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK) {
        mz_error("cannot lock %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    long pid = lock_holder(fd);
    if (pid > 0)
        mz_error("%s %s is being written by another mizu run (process %ld); one run per file",
                 what, path, pid);
    else
        mz_error("%s %s is being written by another mizu run; one run per file", what, path);
    return -1;
}
