/* The walls as boundary particles: the fluid lattice continued beyond them, as many layers as
 * the support radius reaches, each weighing a fluid particle's mass; sorted once on a grid of
 * their own, or before every step when colliders move (kernels/common/boundary.cl). */
#include <math.h>
#include "solvers/boundary.h"

#include "build/build.h"
#include "util/err.h"

#include <stdlib.h>
#include <string.h>

/* kernels/common/boundary.cl's mz_mover. */
typedef struct mover_arg {
    cl_float4 unit, center;
    cl_int slot, type, pad0, pad1;
} mover_arg;

typedef struct motion_now_arg {
    cl_float4 s[MZ_MAX_MOVING];
} motion_now_arg;

static cl_mem buffer_of(mz_sim *sim, size_t bytes, const void *host, const char *what)
{
    return mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                        (void *)host, what);
}

/* The boundary grid covers the shell too: the domain grown by the layers. on_fluid_lines: its
 * lower corner moved out by whole cells of the fluid's grid (cells h / (1 − 2^-10) wide,
 * grid.c), so that the two grids share their cell lines: the particles of one fluid cell then
 * lie in one wall cell, and WCSPH's density pass on a CPU takes their walls together
 * (mz_sph_density_cell). */
static void shell_box(const mz_scene *s, double h, bool on_fluid_lines, double lo[3],
                      double hi[3])
{
    double grow = (scene_wall_layers(s) + 1) * s->fluids[0].spacing;
    double cell = h / (1.0 - 1.0 / 1024.0);
    for (int a = 0; a < 3; a++) {
        lo[a] = s->domain.min[a] - (on_fluid_lines ? ceil(grow / cell) * cell : grow);
        hi[a] = s->domain.max[a] + grow;
    }
}

/* The moving colliders' kernels and buffers; pos and mass as built are the rest state. */
static int init_motion(boundary_set *b, mz_sim *sim)
{
    const mz_scene *s = sim->scene;
    static const char *const names[] = {"boundary_pose", "boundary_slots", NULL};
    cl_kernel *const kernels[] = {&b->k_pose, &b->k_slots};
    b->program = sim_build_kernels(sim, "common/boundary.cl", names, kernels);
    if (!b->program)
        return -1;
    size_t nc = s->n_colliders ? s->n_colliders : 1;
    mover_arg *m = xcalloc(nc, sizeof *m);
    for (size_t c = 0; c < s->n_colliders; c++) {
        const mz_collider *co = &s->colliders[c];
        m[c].slot = -1;
        if (!co->has_motion)
            continue;
        m[c].slot = b->n_movers;
        m[c].type = co->motion.type;
        m[c].unit = sim_float4(co->motion.unit);
        m[c].center = sim_float4(co->motion.center);
        b->mover_collider[b->n_movers++] = (int)c;
    }
    b->movers = buffer_of(sim, nc * sizeof *m, m, "clCreateBuffer(moving colliders)");
    free(m);
    size_t nb = b->nb;
    b->rest = buffer_of(sim, 16 * nb, NULL, "clCreateBuffer(boundary at rest)");
    b->rest_mass = buffer_of(sim, 4 * nb, NULL, "clCreateBuffer(boundary at rest)");
    b->vel = buffer_of(sim, 16 * nb, NULL, "clCreateBuffer(boundary velocities)");
    b->acc = buffer_of(sim, 16 * nb, NULL, "clCreateBuffer(boundary accelerations)");
    if (!b->movers || !b->rest || !b->rest_mass || !b->vel || !b->acc ||
        !cl_ok(clEnqueueCopyBuffer(sim->cl->queue, b->pos, b->rest, 0, 0, 16 * nb, 0, NULL,
                                   NULL),
               "clEnqueueCopyBuffer(boundary at rest)") ||
        !cl_ok(clEnqueueCopyBuffer(sim->cl->queue, b->mass, b->rest_mass, 0, 0, 4 * nb, 0, NULL,
                                   NULL),
               "clEnqueueCopyBuffer(boundary at rest)"))
        return -1;
    /* At rest until the first step moves them (the initial density pass reads them). */
    cl_float4 zero = {{0, 0, 0, 0}};
    if (!cl_ok(clEnqueueFillBuffer(sim->cl->queue, b->vel, &zero, sizeof zero, 0, 16 * nb, 0,
                                   NULL, NULL),
               "clEnqueueFillBuffer(boundary velocities)") ||
        !cl_ok(clEnqueueFillBuffer(sim->cl->queue, b->acc, &zero, sizeof zero, 0, 16 * nb, 0,
                                   NULL, NULL),
               "clEnqueueFillBuffer(boundary accelerations)"))
        return -1;
    b->moving = true;
    b->moving_i = 1;
    return grid_register(&b->grid, &b->vel, 16) || grid_register(&b->grid, &b->acc, 16) ? -1
                                                                                          : 0;
}

int boundary_init(boundary_set *b, mz_sim *sim, float particle_mass, double h,
                  mz_grid_mode mode, bool on_fluid_lines)
{
    const mz_scene *s = sim->scene;
    b->dummy = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, 16, NULL, "clCreateBuffer(no boundary)");
    if (!b->dummy)
        return -1;
    if (!scene_boundary_particles(s))
        return 0;
    double spacing = s->fluids[0].spacing;
    int layers = scene_wall_layers(s);
    float *pos = NULL;
    size_t nb = build_wall_particles(s, spacing, layers, &pos);
    nb = build_collider_particles(s, spacing, layers, &pos, nb);
    float *mass = xmalloc((nb ? nb : 1) * sizeof *mass);
    b->owner = xmalloc((nb ? nb : 1) * sizeof *b->owner);
    cl_uint *id = xmalloc((nb ? nb : 1) * sizeof *id);
    for (size_t k = 0; k < nb; k++) {
        mass[k] = particle_mass;
        b->owner[k] = (int)pos[4 * k + 3];
        id[k] = (cl_uint)k;
    }
    b->nb = (cl_uint)nb;
    b->pos = buffer_of(sim, 16 * nb, pos, "clCreateBuffer(boundary positions)");
    b->mass = buffer_of(sim, 4 * nb, mass, "clCreateBuffer(boundary masses)");
    b->id = buffer_of(sim, 4 * nb, id, "clCreateBuffer(boundary ids)");
    free(pos);
    free(mass);
    free(id);
    if (!b->pos || !b->mass || !b->id)
        return -1;
    double lo[3], hi[3];
    shell_box(s, h, on_fluid_lines, lo, hi);
    if (grid_create(&b->grid, sim->cl, nb, h, s->sim.dimensions, lo, hi, mode) != 0)
        return -1;
    b->made = true;
    if (grid_register(&b->grid, &b->pos, 16) || grid_register(&b->grid, &b->mass, 4) ||
        grid_register(&b->grid, &b->id, 4))
        return -1;
    if (scene_moving_count(s) > 0) {
        if (init_motion(b, sim) != 0)
            return -1;
        grid_no_resort(&b->grid); /* placed in the builder's order before every build */
    }
    if (grid_build(&b->grid, b->pos) != 0)
        return -1;
    /* sorted for good: keep only the cell tables (44 bytes a particle less) */
    return b->moving ? 0 : grid_settle(&b->grid);
}

/* slot_of from id: on the device when the boundary moves (after every sort), else once on the
 * host. */
static int update_slots(boundary_set *b, mz_sim *sim)
{
    if (b->moving) {
        return KARGS(b->k_slots, "boundary_slots", A(b->nb), A(b->id), A(b->slot_of)) &&
                       sim_launch(sim, b->k_slots, b->nb, MZ_STAGE_OBSERVE, "boundary_slots")
                   ? 0
                   : -1;
    }
    size_t nb = b->nb;
    cl_uint *id = xmalloc((nb ? nb : 1) * sizeof *id), *slot = xmalloc((nb ? nb : 1) * 4);
    int rc = -1;
    if (cl_ok(clEnqueueReadBuffer(sim->cl->queue, b->id, CL_TRUE, 0, 4 * nb, id, 0, NULL, NULL),
              "clEnqueueReadBuffer(boundary ids)")) {
        for (size_t s = 0; s < nb; s++)
            slot[id[s]] = (cl_uint)s;
        rc = cl_ok(clEnqueueWriteBuffer(sim->cl->queue, b->slot_of, CL_TRUE, 0, 4 * nb, slot, 0,
                                        NULL, NULL),
                   "clEnqueueWriteBuffer(boundary slots)")
                 ? 0
                 : -1;
    }
    free(id);
    free(slot);
    return rc;
}

int boundary_track(boundary_set *b, mz_sim *sim)
{
    if (!b->made || b->slot_of)
        return 0;
    b->slot_of = buffer_of(sim, 4 * (b->nb ? b->nb : 1), NULL, "clCreateBuffer(boundary slots)");
    return b->slot_of ? update_slots(b, sim) : -1;
}

int boundary_move(boundary_set *b, mz_sim *sim, double t)
{
    if (!b->moving)
        return 0;
    const mz_scene *s = sim->scene;
    motion_now_arg now;
    memset(&now, 0, sizeof now);
    for (int k = 0; k < b->n_movers; k++) {
        double v[3];
        motion_eval(&s->colliders[b->mover_collider[k]].motion, t, v);
        for (int q = 0; q < 3; q++)
            now.s[k].s[q] = (cl_float)v[q];
    }
    cl_uint nc = (cl_uint)s->n_colliders;
    if (!KARGS(b->k_pose, "boundary_pose", A(b->nb), A(b->rest), A(b->rest_mass), A(b->movers),
               A(nc), A(now), A(b->pos), A(b->mass), A(b->vel), A(b->acc), A(b->id)) ||
        !sim_launch(sim, b->k_pose, b->nb, MZ_STAGE_OBSERVE, "boundary_pose") ||
        grid_build(&b->grid, b->pos) != 0)
        return -1;
    return b->slot_of ? update_slots(b, sim) : 0;
}

boundary_args boundary_of(const boundary_set *b, mz_grid_desc fluid)
{
    if (!b->made)
        return (boundary_args){fluid, b->dummy, b->dummy, b->dummy, b->dummy, 0, 0,
                                   b->dummy, b->dummy};
    return (boundary_args){b->grid.desc,
                               b->grid.cell_words,
                               b->grid.cell_first,
                               b->pos,
                               b->mass,
                               (cl_int)b->nb,
                               b->moving_i,
                               b->moving ? b->vel : b->dummy,
                               b->moving ? b->acc : b->dummy};
}

size_t boundary_device_bytes(const mz_scene *s, size_t n, double h, bool on_fluid_lines,
                             size_t *peak)
{
    *peak = 16;
    if (!scene_boundary_particles(s))
        return 16; /* the stand-in */
    size_t nb = scene_boundary_count(s);
    mz_grid_desc fluid = {0};
    double lo[3], hi[3];
    shell_box(s, h, on_fluid_lines, lo, hi);
    if (grid_describe(n, h, s->sim.dimensions, s->domain.min, s->domain.max, MZ_GRID_AUTO,
                      &fluid) != 0)
        return 0;
    mz_grid_mode mode = fluid.hashed ? MZ_GRID_HASHED : MZ_GRID_DENSE;
    size_t cells = grid_cells_in(nb, h, s->sim.dimensions, lo, hi, mode);
    /* position, mass, id; moving: velocities and accelerations, sorted too */
    size_t elems[] = {16, 4, 4, 16, 16};
    bool moving = scene_moving_count(s) > 0;
    size_t bytes = 16 + nb * (16 + 4 + 4);
    if (moving) /* the rest state, velocities, accelerations, the laws */
        bytes += nb * (16 + 4 + 16 + 16) + s->n_colliders * sizeof(mover_arg);
    /* A static set's sort needs its buffers until it has run (grid_settle) */
    *peak = bytes + grid_device_bytes(nb, cells, elems, moving ? 5 : 3, false, 0);
    if (moving)
        return *peak;
    /* Then its first slots are those of its non-empty cells: the particles built here, as
     * boundary_init builds them, and their cells counted. */
    mz_grid_desc walls;
    if (grid_describe(nb, h, s->sim.dimensions, lo, hi, mode, &walls) != 0)
        return 0;
    float *pos = NULL;
    int layers = scene_wall_layers(s);
    size_t built = build_wall_particles(s, s->fluids[0].spacing, layers, &pos);
    built = build_collider_particles(s, s->fluids[0].spacing, layers, &pos, built);
    size_t occupied = grid_occupied_cells(&walls, cells, pos, built);
    free(pos);
    return bytes + grid_settled_bytes(cells, occupied);
}

void boundary_release(boundary_set *b)
{
    if (b->made)
        grid_release(&b->grid);
    cl_kernel ks[] = {b->k_pose, b->k_slots};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    if (b->program)
        clReleaseProgram(b->program);
    cl_mem ms[] = {b->pos,  b->mass,      b->dummy, b->id,  b->slot_of, b->rest,
                   b->rest_mass, b->vel, b->acc, b->movers};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    free(b->owner);
    *b = (boundary_set){0};
}
