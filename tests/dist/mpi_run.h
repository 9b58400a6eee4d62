/* What the distributed tests share (test_mpi.c, test_mpi_observe.c): mpirun in place of mizu
 * for one call, the launcher's check, and the skip in builds without MPI. */
#ifndef MZ_TEST_MPI_RUN_H
#define MZ_TEST_MPI_RUN_H
#include "test_util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Point run_mizu and spawn_mizu at mpirun with np ranks (oversubscribed: this machine may have
 * fewer cores than ranks) for one call: cmd gets the arguments that follow the launcher; the
 * previous MIZU_BIN is returned (malloc'd, or NULL) for mpi_done. */
static inline char *mpi_launcher(int np, const char *args, char *cmd, size_t size)
{
    snprintf(cmd, size, "--oversubscribe %s-np %d %.512s %.2048s",
             getuid() == 0 ? "--allow-run-as-root " : "", np, mizu_bin(), args);
    const char *saved = getenv("MIZU_BIN");
    char *keep = saved ? strdup(saved) : NULL;
    /* Under `make sanitize`: Open MPI leaves its own allocations at exit, through frames LSan
     * cannot unwind (no frame pointers), so the ranks run with ASan and UBSan but without the
     * leak check; the one-process runs here keep it. */
    const char *asan = getenv("ASAN_OPTIONS");
    char launcher[1024];
    if (asan)
        snprintf(launcher, sizeof launcher, "env ASAN_OPTIONS='%.900s:detect_leaks=0' mpirun",
                 asan);
    else
        snprintf(launcher, sizeof launcher, "mpirun");
    setenv("MIZU_BIN", launcher, 1);
    return keep;
}

static inline void mpi_done(char *keep)
{
    if (keep) {
        setenv("MIZU_BIN", keep, 1);
        free(keep);
    } else {
        unsetenv("MIZU_BIN");
    }
}

/* `mpirun -np N mizu ARGS`, with stderr into *err as run_mizu does. */
static inline int run_mpi(int np, const char *args, char **err)
{
    char cmd[3072];
    char *keep = mpi_launcher(np, args, cmd, sizeof cmd);
    int rc = run_mizu(cmd, err);
    mpi_done(keep);
    return rc;
}

static inline int setup(void **state)
{
    (void)state;
#ifndef MZ_MPI
    return 0;
#else
    /* mpirun's own test: a machine without a working launcher fails here, clearly. */
    return system("mpirun --version >/dev/null 2>&1") == 0 ? 0 : -1;
#endif
}

#define SKIP_WITHOUT_MPI()                                                                     \
    do {                                                                                       \
        if (!mpi_built())                                                                      \
            skip();                                                                            \
    } while (0)

static inline bool mpi_built(void)
{
#ifdef MZ_MPI
    return true;
#else
    return false;
#endif
}

#endif
