/* DFSPH's device memory, for the fit check (mizu check, a run's start): what dfsph.c makes. */
#include "build/build.h"
#include "device/grid.h"
#include "dist/dist.h"
#include "solvers/boundary.h"
#include "solvers/sph/dfsph_memory.h"
#include "solvers/sph/loads.h"
#include "solvers/sph/neighbour_list.h"
#include "solvers/sph/sph.h"
#include "solvers/sph/step_size.h"

size_t dfsph_error_partials(size_t n)
{
    return n / 8 + 1;
}

/* As dfsph_init makes them: density, α, k, k/ρ, K, K_v, pressure, the frame's pressure sum,
 * |a|², the κ before last, the walls' gradient sums and the error sums; the step size's maxima;
 * the neighbour lists; the grid (position, velocity, inverse mass, id, body, K, K_v, the κ
 * before last and the pressure sum move with it); then the walls, sorted last (the most may be
 * held while they are), and the forces on solids. */
size_t dfsph_device_bytes(const mz_scene *s, size_t n, size_t *held)
{
    sph_params P = sph_params_for(s);
    /* Distributed: a dense grid of the window, and with probes the densities and pressures
     * travel too (dfsph_init). */
    bool slabs = dist_active();
    size_t room = n ? n : 1, elems[] = {16, 16, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    int n_reg = slabs && s->n_probes > 0 ? 11 : 9;
    size_t cells = grid_cells_in(n, P.h, s->sim.dimensions, s->domain.min, s->domain.max,
                                 slabs ? MZ_GRID_DENSE : MZ_GRID_AUTO);
    size_t own = (10 * 4 + 16) * room + 16 * dfsph_error_partials(n) + 16 +
                 sph_step_size_bytes() + room * sph_lists_bytes(s, false) + 8 +
                 grid_device_bytes(n, cells, elems, n_reg, slabs, 0);
    size_t walls_sorting, walls = boundary_device_bytes(s, n, P.h, false, &walls_sorting);
    size_t loads = sph_loads_bytes(s, n);
    *held = own + walls + loads + (loads ? 4 * room : 0); /* S: with forces measured */
    return own + walls_sorting > *held ? own + walls_sorting : *held;
}

/* Its neighbour lists (always made, unlike WCSPH's): each of the two is one buffer of the
 * first capacity's entries a particle (10^7 particles: 2.3 GB in 3D, more than PoCL's 2.1 GB). */
size_t dfsph_largest_buffer(const mz_scene *s, size_t n, const char **what)
{
    *what = "neighbour lists (DFSPH makes them always) need";
    return 4 * n * (size_t)sph_lists_cap_first(s);
}
