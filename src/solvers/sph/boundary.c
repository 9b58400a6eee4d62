/* The walls as boundary particles: the fluid lattice continued beyond them, as many layers as
 * the support radius reaches, each weighing a fluid particle's mass; sorted once on a grid of
 * their own. */
#include "solvers/sph/boundary.h"

#include "build/build.h"
#include "util/err.h"

#include <stdlib.h>

int sph_boundary_init(sph_boundary *b, mz_sim *sim, float particle_mass, double h,
                      mz_grid_mode mode)
{
    const mz_scene *s = sim->scene;
    b->dummy = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16, NULL, "clCreateBuffer(no boundary)");
    if (!b->dummy)
        return -1;
    if (s->domain.boundary.type != MZ_BOUNDARY_PARTICLES)
        return 0;
    double spacing = s->fluids[0].spacing;
    int layers = scene_wall_layers(s);
    float *pos = NULL;
    size_t nb = build_wall_particles(s, spacing, layers, &pos);
    nb = build_collider_particles(s, spacing, layers, &pos, nb);
    float *mass = xmalloc((nb ? nb : 1) * sizeof *mass);
    for (size_t k = 0; k < nb; k++)
        mass[k] = particle_mass;
    b->nb = (cl_uint)nb;
    b->pos = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16 * nb, pos,
                          "clCreateBuffer(boundary positions)");
    b->mass = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 4 * nb, mass,
                           "clCreateBuffer(boundary masses)");
    free(pos);
    free(mass);
    if (!b->pos || !b->mass)
        return -1;
    /* The boundary grid covers the shell too: the domain grown by the layers. */
    double lo[3], hi[3], grow = (layers + 1) * spacing;
    for (int a = 0; a < 3; a++) {
        lo[a] = s->domain.min[a] - grow;
        hi[a] = s->domain.max[a] + grow;
    }
    if (grid_create(&b->grid, sim->cl, nb, h, s->sim.dimensions, lo, hi, mode) != 0)
        return -1;
    b->made = true;
    if (grid_register(&b->grid, &b->pos, 16) != 0 || grid_register(&b->grid, &b->mass, 4))
        return -1;
    return grid_build(&b->grid, b->pos);
}

sph_boundary_args sph_boundary_of(const sph_boundary *b, mz_grid_desc fluid)
{
    if (!b->made)
        return (sph_boundary_args){fluid, b->dummy, b->dummy, b->dummy, b->dummy, 0};
    return (sph_boundary_args){b->grid.desc, b->grid.cell_start, b->grid.cell_end, b->pos,
                               b->mass, (cl_int)b->nb};
}

/* Position, mass, their grid's keys, values, copies and reorder copies. */
size_t sph_boundary_bytes(const mz_scene *s)
{
    if (s->domain.boundary.type != MZ_BOUNDARY_PARTICLES)
        return 0;
    return scene_boundary_count(s) * (16 + 4 + 16 + 16 + 4);
}

void sph_boundary_release(sph_boundary *b)
{
    if (b->made)
        grid_release(&b->grid);
    cl_mem ms[] = {b->pos, b->mass, b->dummy};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    *b = (sph_boundary){0};
}
