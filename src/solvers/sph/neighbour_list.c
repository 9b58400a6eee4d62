/* The step's neighbour lists: see neighbour_list.h and kernels/grid/neighbour_list.clh. */
#include "solvers/sph/neighbour_list.h"
#include "util/err.h"

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

size_t sph_lists_bytes(const mz_scene *s)
{
    return 2 * 4 * ((size_t)sph_lists_cap_first(s) + 1);
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

int sph_lists_resize(sph_lists *l, mz_sim *sim, cl_uint cap)
{
    cl_mem old[] = {l->fluid, l->wall, l->grad};
    mz_cl_release_mems(old, 3);
    l->grad = NULL;
    l->cap = eights(cap ? cap : 1);
    l->stride = l->rows ? l->cap : l->particles;
    /* rows: blocks of eight particles (kernels/grid/neighbour_list.clh) */
    size_t particles = l->rows ? (size_t)eights(l->particles) : l->particles;
    size_t bytes = (size_t)4 * particles * l->cap;
    if (bytes > sim->cl->max_alloc) { /* grown past the device's largest buffer */
        mz_error("the neighbour lists of %u entries a particle need %.3g GB in one buffer; %s "
                 "allocates at most %.3g GB in one buffer. Use fewer particles or another "
                 "device (mizu devices)",
                 l->cap, (double)bytes / 1e9, sim->cl->device_name,
                 (double)sim->cl->max_alloc / 1e9);
        return -1;
    }
    l->fluid = list_buffer(sim, bytes, "clCreateBuffer(neighbour list)");
    l->wall = list_buffer(sim, bytes, "clCreateBuffer(wall neighbour list)");
    if (!l->fluid || !l->wall)
        return -1;
    l->plane = (cl_uint)(bytes / 4);
    if (l->grads && 3 * bytes <= sim->cl->max_alloc && 3 * (bytes / 4) <= 0xFFFFFFFFu &&
        !(l->grad = list_buffer(sim, 3 * bytes, "clCreateBuffer(neighbour gradients)")))
        return -1;
    return 0;
}

int sph_lists_init(sph_lists *l, mz_sim *sim)
{
    l->particles = (cl_uint)(sim->cap ? sim->cap : 1);
    l->rows = sim->cl->list_rows;
    l->fluid_count = list_buffer(sim, 4 * (size_t)l->particles, "clCreateBuffer(neighbour counts)");
    l->wall_count = list_buffer(sim, 4 * (size_t)l->particles, "clCreateBuffer(neighbour counts)");
    l->overflow = list_buffer(sim, 4, "clCreateBuffer(neighbour list overflow)");
    if (!l->fluid_count || !l->wall_count || !l->overflow)
        return -1;
    return sph_lists_resize(l, sim, sph_lists_cap_first(sim->scene));
}

int sph_lists_before_build(sph_lists *l, mz_sim *sim)
{
    cl_uint zero = 0;
    return cl_ok(clEnqueueFillBuffer(sim->cl->queue, l->overflow, &zero, sizeof zero, 0,
                                     sizeof zero, 0, NULL, NULL),
                 "clEnqueueFillBuffer(neighbour list overflow)")
               ? 0
               : -1;
}

int sph_lists_after_build(sph_lists *l, mz_sim *sim)
{
    cl_uint most = 0;
    if (!cl_ok(clEnqueueReadBuffer(sim->cl->queue, l->overflow, CL_TRUE, 0, sizeof most, &most,
                                   0, NULL, NULL),
               "clEnqueueReadBuffer(neighbour list overflow)"))
        return -1;
    if (most <= l->cap)
        return 1;
    l->grown++;
    return sph_lists_resize(l, sim, most + most / 4) == 0 ? 0 : -1;
}

void sph_lists_release(sph_lists *l)
{
    cl_mem ms[] = {l->fluid, l->fluid_count, l->wall, l->wall_count, l->overflow, l->grad};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    *l = (sph_lists){0};
}
