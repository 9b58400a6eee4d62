/* What `mizu run` settles before a distributed run (under mpirun) starts: whether mpirun can run
 * the scene at all, and whether the ranks' devices are one kind (their sums would differ). */
#include "cli/run.h"

#include "dist/dist.h"
#include "scene/bodies.h"
#include "util/err.h"

#include <string.h>

int run_refuse_distributed(const mz_scene *s)
{
    const char *why = NULL;
    if (scene_solver(s) == MZ_SOLVER_FLIP)
        why = "FLIP is not distributed yet (its pressure projection needs a distributed linear "
              "solver): run FLIP scenes without mpirun";
    if (!why)
        return 0;
    if (dist_rank() == 0)
        mz_error("mpirun with %d ranks: %s", dist_size(), why);
    return MZ_EXIT_USAGE;
}

bool run_devices_match(const char *list)
{
    const char *first = strchr(list, ' ');
    size_t len = strcspn(first + 1, ";");
    for (const char *p = strstr(list, "; "); p; p = strstr(p + 1, "; ")) {
        const char *name = strchr(p + 2, ' ') + 1;
        if (strcspn(name, ";") != len || strncmp(name, first + 1, len) != 0)
            return false;
    }
    return true;
}
