/* What `mizu run` settles before a distributed run (under mpirun) starts: whether mpirun can run
 * the scene at all, and whether the ranks' devices are one kind (their sums would differ). */
#include "cli/run.h"

#include "dist/dist.h"
#include "scene/bodies.h"
#include "util/err.h"

#include <string.h>

/* What the position-based solver cannot run distributed in the scene, or NULL. */
static const char *position_based_refusal(const mz_scene *s, mz_solver_kind k)
{
    if (scene_pose_count(s) > 0)
        return "moving colliders and a moving domain are not distributed with the "
               "position-based solver yet: run this scene without mpirun (they run distributed "
               "with WCSPH, collapsed SPH and DFSPH)";
    if (s->n_probes || s->n_gauges || scene_load_count(s))
        return "probes, gauges and forces on solids are not distributed with the position-based "
               "solver yet: run this scene without mpirun, or without its probes[], gauges[] "
               "and forces";
    if (k != MZ_SOLVER_PBF && s->n_fluids > 0)
        return "ballistic fluids are not distributed: run this scene without mpirun; PBF fluid, "
               "cloth and soft bodies, WCSPH, collapsed SPH and DFSPH scenes run under mpirun";
    return NULL;
}

int run_refuse_distributed(const mz_scene *s)
{
    const char *why = NULL;
    mz_solver_kind k = scene_solver(s);
    if (k == MZ_SOLVER_FLIP)
        why = "FLIP is not distributed yet (its pressure projection needs a distributed linear "
              "solver): run FLIP scenes without mpirun";
    else if (!scene_is_sph(s))
        why = position_based_refusal(s, k);
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
