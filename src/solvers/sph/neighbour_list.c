/* The step's neighbour lists: see neighbour_list.h and kernels/grid/neighbour_list.clh. */
#include "solvers/sph/neighbour_list.h"
#include "device/grid.h"
#include "util/err.h"

#include <math.h>

/* A particle's neighbours at rest: the lattice points within h, itself excluded (32 in 3D and
 * 12 in 2D at h = 2 spacings). */
static cl_uint lattice_neighbours(const mz_scene *s)
{
    double r = scene_support_radius(s) / s->fluids[0].spacing;
    int m = (int)r, dz = s->sim.dimensions == 3 ? m : 0;
    cl_uint count = 0;
    for (int z = -dz; z <= dz; z++)
        for (int y = -m; y <= m; y++)
            for (int x = -m; x <= m; x++)
                count += (x || y || z) && x * x + y * y + z * z <= r * r;
    return count;
}

/* Caps are whole eights: CPU devices read a list row eight entries at a time (sph_lanes.clh). */
static cl_uint eights(cl_uint n) { return (n + 7) / 8 * 8; }

cl_uint sph_lists_cap_first(const mz_scene *s)
{
    cl_uint lattice = lattice_neighbours(s);
    return eights(lattice + lattice / 2 + 8);
}

/* The most windows a masked row has (kernels/grid/neighbour_list.clh, MZ_MASK_WINDOWS_MAX). A
 * particle with a longer row walks the grid in the forces pass, and a scene whose rows would
 * start longer keeps entry lists (masks_fit). */
#define MASK_WINDOWS_MAX 4u

/* A masked list's windows a row to start with: a row of the walk is three cells of h along x
 * (the grid's cells are h wide), 1.5 × the lattice's slots there (24 at h = 2 spacings in 3D,
 * 124 at 3.46), in windows of 64. */
static cl_uint windows_first(const mz_scene *s)
{
    double side = scene_support_radius(s) / s->fluids[0].spacing;
    double slots = 3 * (s->sim.dimensions == 3 ? side * side * side : side * side);
    return (cl_uint)ceil(1.5 * slots / 64);
}

/* A masked list's entries a particle: each row's first slot and its windows' two words each. */
static cl_uint mask_entries(const mz_scene *s, cl_uint windows)
{
    return (s->sim.dimensions == 3 ? 9 : 3) * (1 + 2 * windows);
}

/* Whether the fluid list may be masked: its rows' first windows no more than a row holds. */
static bool masks_fit(const mz_scene *s) { return windows_first(s) <= MASK_WINDOWS_MAX; }

/* The fluid list's entries a particle at its first size: masked where asked and the rows fit. */
static cl_uint fluid_entries_first(const mz_scene *s, bool masked)
{
    return masked && masks_fit(s) ? mask_entries(s, windows_first(s)) : sph_lists_cap_first(s);
}

bool sph_lists_masked_on(const mz_scene *s, bool device_masks, bool hashed)
{
    return device_masks && masks_fit(s) && !hashed;
}

bool sph_lists_masked(const mz_scene *s, size_t n, bool device_masks)
{
    mz_grid_desc d;
    return grid_describe(n, scene_support_radius(s), s->sim.dimensions, s->domain.min,
                         s->domain.max, MZ_GRID_AUTO, &d) == 0 &&
           sph_lists_masked_on(s, device_masks, d.hashed);
}

size_t sph_lists_bytes(const mz_scene *s, bool masked)
{
    return 4 * ((size_t)fluid_entries_first(s, masked) + 1) +
           4 * ((size_t)sph_lists_cap_first(s) + 1);
}

size_t sph_lists_grad_bytes(const mz_scene *s)
{
    return 3 * 4 * (size_t)sph_lists_cap_first(s);
}

bool sph_lists_room(const mz_sim *sim, double bytes)
{
    return (double)sim_device_bytes(sim->scene, sim->cap) + bytes <
           0.8 * (double)sim->cl->global_mem;
}

static cl_mem list_buffer(mz_sim *sim, size_t bytes, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, what);
}

/* Whether a list of `entries` a particle for `particles` is a buffer the device can make and the
 * kernels can index: its entries are counted in 32 bits (MZ_LIST_AT_). */
static bool list_fits(const mz_sim *sim, double particles, double entries)
{
    return 4 * particles * entries <= (double)sim->cl->max_alloc &&
           particles * entries <= 4294967295.0;
}

bool sph_lists_buffers_fit(const mz_sim *sim, bool masked, double room)
{
    const mz_scene *s = sim->scene;
    double particles = (double)eights((cl_uint)(sim->cap ? sim->cap : 1));
    return list_fits(sim, particles, room * sph_lists_cap_first(s)) &&
           list_fits(sim, particles, room * fluid_entries_first(s, masked));
}

/* Bytes of a list of `entries` a particle, or -1 after reporting one the device cannot make. */
static long long list_bytes(const sph_lists *l, const mz_sim *sim, cl_uint entries)
{
    /* rows: blocks of eight particles (kernels/grid/neighbour_list.clh) */
    size_t particles = l->rows ? (size_t)eights(l->particles) : l->particles;
    size_t bytes = (size_t)4 * particles * entries;
    if (!list_fits(sim, (double)particles, entries)) { /* grown past the device's largest buffer */
        mz_error("the neighbour lists of %u entries a particle need %.3g GB in one buffer; %s "
                 "allocates at most %.3g GB in one buffer, and a list holds at most 2^32 "
                 "entries. Use fewer particles or another device (mizu devices)",
                 entries, (double)bytes / 1e9, sim->cl->device_name,
                 (double)sim->cl->max_alloc / 1e9);
        return -1;
    }
    return (long long)bytes;
}

int sph_lists_resize(sph_lists *l, mz_sim *sim, cl_uint cap, cl_uint windows)
{
    cl_mem old[] = {l->fluid, l->wall, l->grad};
    mz_cl_release_mems(old, 3);
    l->fluid = l->wall = l->grad = NULL;
    l->cap = eights(cap ? cap : 1);
    l->stride = l->rows ? l->cap : l->particles;
    if (l->windows)
        l->windows = windows < 1 ? 1 : windows > MASK_WINDOWS_MAX ? MASK_WINDOWS_MAX : windows;
    cl_uint fluid_entries = l->windows ? mask_entries(sim->scene, l->windows) : l->cap;
    l->fluid_stride = l->rows ? fluid_entries : l->particles;
    long long bytes = list_bytes(l, sim, l->cap);
    long long fluid_bytes = list_bytes(l, sim, fluid_entries);
    if (bytes < 0 || fluid_bytes < 0)
        return -1;
    l->fluid = list_buffer(sim, (size_t)fluid_bytes, "clCreateBuffer(neighbour list)");
    l->wall = list_buffer(sim, (size_t)bytes, "clCreateBuffer(wall neighbour list)");
    if (!l->fluid || !l->wall)
        return -1;
    l->plane = (cl_uint)(bytes / 4);
    /* the gradients: three planes of the wall list's shape, where they fit like a list */
    if (l->grads && list_fits(sim, (double)l->plane, 3) &&
        !(l->grad = list_buffer(sim, (size_t)(3 * bytes), "clCreateBuffer(neighbour gradients)")))
        return -1;
    return 0;
}

int sph_lists_init(sph_lists *l, mz_sim *sim, bool masked)
{
    l->particles = (cl_uint)(sim->cap ? sim->cap : 1);
    l->rows = sim->cl->list_rows;
    l->fluid_count = list_buffer(sim, 4 * (size_t)l->particles, "clCreateBuffer(neighbour counts)");
    l->wall_count = list_buffer(sim, 4 * (size_t)l->particles, "clCreateBuffer(neighbour counts)");
    l->overflow = list_buffer(sim, 8, "clCreateBuffer(neighbour list overflow)");
    if (!l->fluid_count || !l->wall_count || !l->overflow)
        return -1;
    l->windows = masked ? windows_first(sim->scene) : 0;
    return sph_lists_resize(l, sim, sph_lists_cap_first(sim->scene), l->windows);
}

int sph_lists_before_build(sph_lists *l, mz_sim *sim)
{
    cl_uint zero = 0;
    return cl_ok(clEnqueueFillBuffer(sim->cl->queue, l->overflow, &zero, sizeof zero, 0,
                                     2 * sizeof zero, 0, NULL, NULL),
                 "clEnqueueFillBuffer(neighbour list overflow)")
               ? 0
               : -1;
}

int sph_lists_after_build(sph_lists *l, mz_sim *sim)
{
    cl_uint most[2] = {0, 0};
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, l->overflow, CL_TRUE, 0, sizeof most, most,
                                   0, NULL, NULL),
               "clEnqueueReadBuffer(neighbour list overflow)"))
        return -1;
    /* (rows past the most windows stay short: those particles walk the grid) */
    if (most[0] <= l->cap && (most[1] <= l->windows || l->windows == MASK_WINDOWS_MAX))
        return 1;
    l->grown++;
    cl_uint cap = most[0] > l->cap ? most[0] + most[0] / 4 : l->cap;
    cl_uint windows = most[1] > l->windows ? most[1] : l->windows;
    return sph_lists_resize(l, sim, cap, windows) == 0 ? 0 : -1;
}

void sph_lists_release(sph_lists *l)
{
    cl_mem ms[] = {l->fluid, l->fluid_count, l->wall, l->wall_count, l->overflow, l->grad};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    *l = (sph_lists){0};
}
