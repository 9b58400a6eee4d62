/* Forces on walls and colliders in the SPH solvers (loads.h). */
#include "solvers/sph/loads.h"
#include "util/err.h"

#include <stdlib.h>

/* The measured solids' boundary particles (their owners as the builder made them), bucketed by
 * load in scene_load_ref order, each bucket in the builder's order. */
static int make_elements(sph_loads *l, mz_sim *sim, const boundary_set *b)
{
    const mz_scene *s = sim->scene;
    size_t nb = b->nb, n_loads = scene_load_count(s);
    /* The load of each owner (−1: not measured). */
    int n_owners = MZ_OWNER_COLLIDER + (int)s->n_colliders;
    int *load_of = xmalloc((size_t)n_owners * sizeof *load_of);
    for (int o = 0; o < n_owners; o++)
        load_of[o] = -1;
    for (size_t k = 0; k < n_loads; k++)
        load_of[scene_load_ref(s, k).owner] = (int)k;
    cl_uint *first = xcalloc(n_loads, sizeof *first), *count = xcalloc(n_loads, sizeof *count);
    for (size_t i = 0; i < nb; i++)
        if (load_of[b->owner[i]] >= 0)
            count[load_of[b->owner[i]]]++;
    size_t total = 0;
    for (size_t k = 0; k < n_loads; k++) {
        first[k] = (cl_uint)total;
        total += count[k];
    }
    cl_uint *elem = xmalloc((total ? total : 1) * sizeof *elem), *fill = xcalloc(n_loads, 4);
    for (size_t i = 0; i < nb; i++) {
        int k = load_of[b->owner[i]];
        if (k >= 0)
            elem[first[k] + fill[k]++] = (cl_uint)i;
    }
    mz_load_elems *e = &sim->loads;
    e->n = total;
    size_t room = total ? total : 1;
    int flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    l->elem = mz_cl_buffer(sim->cl, flags, 4 * room, elem, "clCreateBuffer(load elements)");
    e->first = mz_cl_buffer(sim->cl, flags, 4 * n_loads, first, "clCreateBuffer(loads)");
    e->count = mz_cl_buffer(sim->cl, flags, 4 * n_loads, count, "clCreateBuffer(loads)");
    e->at = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16 * room, NULL,
                         "clCreateBuffer(load positions)");
    e->force = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16 * room, NULL,
                            "clCreateBuffer(load forces)");
    free(load_of);
    free(first);
    free(count);
    free(elem);
    free(fill);
    return l->elem && e->first && e->count && e->at && e->force ? 0 : -1;
}

int sph_loads_init(sph_loads *l, mz_sim *sim, boundary_set *b, cl_program program,
                   const char *kernel)
{
    const mz_scene *s = sim->scene;
    *l = (sph_loads){0};
    if (scene_load_count(s) == 0 || !b->made)
        return 0;
    l->on = true;
    cl_int err;
    l->k = clCreateKernel(program, kernel, &err);
    if (!cl_ok(err, "clCreateKernel(the forces on walls)"))
        return -1;
    if (make_elements(l, sim, b) != 0 || boundary_track(b, sim) != 0)
        return -1;
    l->rest_on = s->domain.boundary.friction != MZ_FRICTION_NO_SLIP;
    l->rest = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, l->rest_on ? 16 * sim->cap : 16, NULL,
                           "clCreateBuffer(wall forces' rest)");
    return l->rest ? 0 : -1;
}

bool sph_loads_gather(sph_loads *l, mz_sim *sim, const mz_grid *fluid, const boundary_set *b,
                      const sph_params *P, mz_frame_arg frame, cl_int collapsed, cl_float lag,
                      cl_mem rho, cl_mem drho, cl_mem p, cl_mem kgc)
{
    mz_load_elems *e = &sim->loads;
    cl_uint n = (cl_uint)e->n;
    if (n == 0)
        return true;
    boundary_args ba = boundary_of(b, fluid->desc);
    size_t begin, end; /* distributed: the pairs of the fluid this rank owns */
    sim_owned(sim, &begin, &end);
    cl_uint own_begin = (cl_uint)begin, own_end = (cl_uint)end;
    return KARGS(l->k, "sph_wall_loads", A(n), A(*P), A(frame), A(collapsed), A(lag),
                 A(fluid->desc), A(fluid->cell_words), A(fluid->cell_first), A(sim->pos),
                 A(sim->vel), A(rho), A(drho), A(p), A(b->pos), A(b->mass), A(ba.moving),
                 A(ba.vel), A(ba.acc), A(l->elem), A(b->slot_of), A(l->rest_on), A(l->rest),
                 A(kgc), A(e->at), A(e->force), A(own_begin), A(own_end)) &&
           sim_launch(sim, l->k, n, MZ_STAGE_OBSERVE, "sph_wall_loads");
}

/* The boundary particles of the measured solids (make_elements' total), counted on the scene:
 * every wall particle when the walls are measured (each belongs to one wall), and each measured
 * collider's samples. */
static size_t element_count(const mz_scene *s)
{
    size_t total = s->domain.boundary.has_forces ? (size_t)scene_wall_count(s) : 0;
    int layers = scene_wall_layers(s);
    for (size_t c = 0; c < s->n_colliders; c++)
        if (s->colliders[c].has_forces)
            total += scene_collider_samples(s, c, s->fluids[0].spacing, layers, NULL, NULL);
    return total;
}

size_t sph_loads_bytes(const mz_scene *s, size_t n)
{
    size_t n_loads = scene_load_count(s);
    if (n_loads == 0 || !scene_boundary_particles(s))
        return 0;
    /* As sph_loads_init makes them: per element its index, position and force; per load its
     * first and count; where each boundary particle sits (boundary_track); the rest. */
    size_t room = element_count(s), nb = scene_boundary_count(s);
    room = room ? room : 1;
    size_t rest = s->domain.boundary.friction != MZ_FRICTION_NO_SLIP ? 16 * n : 16;
    return room * (4 + 16 + 16) + 2 * 4 * n_loads + 4 * (nb ? nb : 1) + rest;
}

void sph_loads_release(sph_loads *l)
{
    if (l->k)
        clReleaseKernel(l->k);
    cl_mem ms[] = {l->elem, l->rest};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    *l = (sph_loads){0};
}
