/* The geometric multigrid V-cycle that preconditions FLIP's pressure CG ("mgpcg"; McAdams et
 * al. 2010): levels of twice the cell width down to at most 256 cells, red-black Gauss–Seidel
 * on each, mirrored before and after the coarse correction so that the cycle is a symmetric
 * operator, as CG needs. Level 0 is the pressure grid with its own operator (the surface
 * terms); the coarse levels' rule, operators and transfers: kernels/flip/flip_multigrid.cl. */
#include "solvers/flip/flip_multigrid.h"
#include "util/err.h"

#include <stdlib.h>

static flip_grid coarser(const flip_grid *f, int dim)
{
    flip_grid c = *f;
    for (int a = 0; a < dim; a++) {
        c.cells.s[a] = (f->cells.s[a] + 1) / 2;
        c.nodes.s[a] = c.cells.s[a] + 1;
        c.cell.s[a] = 2 * f->cell.s[a];
        c.inv_cell.s[a] = 0.5f * f->inv_cell.s[a];
        c.inv_cell2.s[a] = 0.25f * f->inv_cell2.s[a];
    }
    return c;
}

static long level_cells(const flip_grid *g)
{
    return (long)g->cells.s[0] * g->cells.s[1] * g->cells.s[2];
}

static size_t grid_nodes(const flip_grid *g)
{
    return (size_t)g->nodes.s[0] * (size_t)g->nodes.s[1] * (size_t)g->nodes.s[2];
}

/* The levels' grids into g[0 ..): the pressure grid, then coarser ones while
 * mg_coarsen_more. How many. */
static int mg_levels(const flip_grid *top, int dim, flip_grid g[MG_MAX_LEVELS])
{
    int levels = 1;
    g[0] = *top;
    for (;;) {
        int cells[3] = {g[levels - 1].cells.s[0], g[levels - 1].cells.s[1],
                        g[levels - 1].cells.s[2]};
        if (!mg_coarsen_more(cells, dim) || levels == MG_MAX_LEVELS)
            return levels;
        g[levels] = coarser(&g[levels - 1], dim);
        levels++;
    }
}

int flip_mg_level_count(const flip_grid *top, int dim)
{
    flip_grid g[MG_MAX_LEVELS];
    return mg_levels(top, dim, g);
}

size_t flip_mg_bytes(const flip_grid *top, int dim, size_t groups)
{
    flip_grid g[MG_MAX_LEVELS];
    int levels = mg_levels(top, dim, g);
    /* each coarse level's types, right-hand side, correction, residual and fluid list */
    size_t bytes = 0;
    for (int l = 1; l < levels; l++)
        bytes += grid_nodes(&g[l]) * (1 + 3 * 8 + 4);
    /* CG's five vectors, partials and scalars (flip_cg_init); r·z's partials for a CPU's
     * groups of 64 (a GPU's 256 need fewer: never less than a run holds) */
    size_t n = grid_nodes(top);
    return bytes + n * 5 * 8 + 8 * groups + 8 * flip_cg_dot_parts(n, 64) + 3 * 8;
}

int flip_mg_init(mz_sim *sim, flip_state *st)
{
    flip_mg *mg = st->mg = xcalloc(1, sizeof *mg);
    static const char *const names[] = {"mg_coarsen",  "mg_smooth",    "mg_coarsest",
                                        "mg_residual", "mg_residual0", "mg_restrict",
                                        "mg_prolong",  "mg_tail",      NULL};
    cl_kernel *const kernels[] = {&mg->k_coarsen,  &mg->k_smooth,    &mg->k_coarsest,
                                  &mg->k_residual, &mg->k_residual0, &mg->k_restrict,
                                  &mg->k_prolong,  &mg->k_tail};
    mg->mg_program = sim_build_kernels(sim, "flip/flip_multigrid.cl", names, kernels);
    if (!mg->mg_program)
        return -1;
    mg->levels = mg_levels(&st->g, sim->scene->sim.dimensions, mg->g);
    mg->nodes[0] = st->nodes;
    for (int l = 1; l < mg->levels; l++) {
        size_t n = mg->nodes[l] = grid_nodes(&mg->g[l]);
        if (!(mg->type[l] = flip_buffer(sim, n, "clCreateBuffer(multigrid cell types)")) ||
            !(mg->b[l] = flip_buffer(sim, 8 * n, "clCreateBuffer(multigrid right-hand side)")) ||
            !(mg->z[l] = flip_buffer(sim, 8 * n, "clCreateBuffer(multigrid correction)")) ||
            !(mg->res[l] = flip_buffer(sim, 8 * n, "clCreateBuffer(multigrid residual)")) ||
            !(mg->list[l] = flip_buffer(sim, 4 * n, "clCreateBuffer(multigrid fluid cells)")))
            return -1;
    }
    return flip_cg_init(sim, st);
}

bool flip_mg_levels(mz_sim *sim, flip_state *st)
{
    flip_mg *mg = st->mg;
    mg->type[0] = st->type;
    mg->list[0] = st->fluid_list;
    mg->n_list[0][0] = st->n_fluid[0];
    mg->n_list[0][1] = st->n_fluid[1];
    flip_level_cells cells[MG_MAX_LEVELS];
    for (int l = 1; l < mg->levels; l++) {
        cl_uint n = (cl_uint)mg->nodes[l];
        if (!KARGS(mg->k_coarsen, "mg_coarsen", A(n), A(mg->g[l - 1]), A(mg->g[l]),
                   A(mg->type[l - 1]), A(mg->type[l])) ||
            !sim_launch(sim, mg->k_coarsen, n, STAGE_PROJECTION, "mg_coarsen"))
            return false;
        cells[l - 1] = (flip_level_cells){&mg->g[l], mg->nodes[l], mg->type[l], mg->list[l],
                                          mg->n_list[l]};
    }
    /* the coarse levels' lists after all their types: one wait for the device, not one a level */
    return mg->levels < 2 || flip_list_levels(sim, st, mg->levels - 1, cells);
}

static cl_uint listed(const flip_mg *mg, int l)
{
    return mg->n_list[l][0] + mg->n_list[l][1];
}

/* Level 0's half-sweep of one colour that also sums r·z over its cells (cg_smooth_dot),
 * their partials appended to part_dot. */
static bool half_sweep_dot(mz_sim *sim, flip_state *st, cl_uint items, cl_uint first)
{
    flip_mg *mg = st->mg;
    size_t groups = (items + st->local - 1) / st->local;
    bool ok = KARGS(mg->k_smooth_dot, "cg_smooth_dot", A(items), A(first), A(mg->n_parts),
                    A(st->g), A(st->fluid_list), A(st->type), A(mg->b[0]), A(st->diag),
                    A(mg->z[0]), A(mg->part_dot)) &&
              cl_ok(clSetKernelArg(mg->k_smooth_dot, 10, 8 * st->local, NULL),
                    "clSetKernelArg(cg_smooth_dot, scratch)") &&
              sim_launch_local(sim, mg->k_smooth_dot, 0, groups * st->local, st->local,
                               STAGE_PROJECTION, "cg_smooth_dot");
    mg->n_parts += (cl_uint)groups;
    return ok;
}

/* A level's half-sweep of one colour over its fluid list; level 0 with its own operator
 * (pressure_rbgs at ω = 1), and with `dot` summing r·z too. */
static bool half_sweep(mz_sim *sim, flip_state *st, int l, int colour, bool dot)
{
    flip_mg *mg = st->mg;
    cl_float one = 1.0f;
    cl_uint items = mg->n_list[l][colour], first = colour ? mg->n_list[l][0] : 0;
    if (!items)
        return true;
    if (dot)
        return half_sweep_dot(sim, st, items, first);
    return l == 0 ? KARGS(st->k_rbgs, "pressure_rbgs", A(items), A(first), A(st->g),
                          A(st->fluid_list), A(one), A(st->type), A(mg->b[0]), A(st->diag),
                          A(mg->z[0])) &&
                        sim_launch(sim, st->k_rbgs, items, STAGE_PROJECTION, "pressure_rbgs")
                  : KARGS(mg->k_smooth, "mg_smooth", A(items), A(first), A(mg->g[l]),
                          A(mg->list[l]), A(mg->type[l]), A(mg->b[l]), A(mg->z[l])) &&
                        sim_launch(sim, mg->k_smooth, items, STAGE_PROJECTION, "mg_smooth");
}

/* `sweeps` red-black sweeps of level l, in colour order (0, 1) or mirrored, less the first
 * `done` half-sweeps (already run: fused into the step before); with `dot`, the last two also
 * sum r·z (level 0, mirrored: after them z is final). */
static bool smooth_level(mz_sim *sim, flip_state *st, int l, bool mirrored, int sweeps, int done,
                         bool dot)
{
    for (int h = done; h < 2 * sweeps; h++)
        if (!half_sweep(sim, st, l, mirrored ? 1 - h % 2 : h % 2, dot && h >= 2 * sweeps - 2))
            return false;
    return true;
}

/* Level l's residual into res[l], restricted to level l + 1's right-hand side (its
 * correction zeroed and, but on the coarsest level, its first half-sweep done). */
static bool restrict_down(mz_sim *sim, flip_state *st, int l)
{
    flip_mg *mg = st->mg;
    cl_uint items = listed(mg, l), coarse = listed(mg, l + 1);
    cl_int smooth = l + 1 < mg->levels - 1;
    bool ok = !items ||
              (l == 0 ? KARGS(mg->k_residual0, "mg_residual0", A(items), A(st->g),
                              A(st->fluid_list), A(st->type), A(mg->b[0]), A(st->diag),
                              A(mg->z[0]), A(mg->res[0])) &&
                            sim_launch(sim, mg->k_residual0, items, STAGE_PROJECTION,
                                       "mg_residual0")
                      : KARGS(mg->k_residual, "mg_residual", A(items), A(mg->g[l]),
                              A(mg->list[l]), A(mg->type[l]), A(mg->b[l]), A(mg->z[l]),
                              A(mg->res[l])) &&
                            sim_launch(sim, mg->k_residual, items, STAGE_PROJECTION,
                                       "mg_residual"));
    return ok && (!coarse ||
                  (KARGS(mg->k_restrict, "mg_restrict", A(coarse), A(mg->n_list[l + 1][0]),
                         A(smooth), A(mg->g[l]), A(mg->g[l + 1]), A(mg->list[l + 1]),
                         A(mg->type[l]), A(mg->type[l + 1]), A(mg->res[l]), A(mg->b[l + 1]),
                         A(mg->z[l + 1])) &&
                   sim_launch(sim, mg->k_restrict, coarse, STAGE_PROJECTION, "mg_restrict")));
}

/* z[l] += P z[l + 1]. */
static bool prolong_up(mz_sim *sim, flip_state *st, int l)
{
    flip_mg *mg = st->mg;
    cl_uint n = listed(mg, l);
    return !n || (KARGS(mg->k_prolong, "mg_prolong", A(n), A(mg->list[l]), A(mg->g[l]),
                        A(mg->g[l + 1]), A(mg->type[l + 1]), A(mg->z[l + 1]), A(mg->z[l])) &&
                  sim_launch(sim, mg->k_prolong, n, STAGE_PROJECTION, "mg_prolong"));
}

static void bind_level0(flip_state *st, cl_mem b, cl_mem z)
{
    flip_mg *mg = st->mg;
    mg->b[0] = b;
    mg->z[0] = z;
    mg->res[0] = mg->q;
}

bool flip_mg_half(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, int half)
{
    bind_level0(st, b, z);
    return half_sweep(sim, st, 0, half % 2, false);
}

_Static_assert(MG_SMOOTH >= 1, "the last post-smoothing sweep sums r·z");

bool flip_mg_vcycle_rest(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z, int halves, bool dot)
{
    flip_mg *mg = st->mg;
    int last = mg->levels - 1;
    bind_level0(st, b, z);
    mg->n_parts = 0;
    if (!(st->n_fluid[0] + st->n_fluid[1]))
        return true;
    if (last == 0) /* a grid of a few cells: sweeps there and back are the whole cycle */
        return smooth_level(sim, st, 0, false, MG_COARSEST_SWEEPS, halves, false) &&
               smooth_level(sim, st, 0, true, MG_COARSEST_SWEEPS, 0, dot);
    /* the last two levels in one launch when the one above the coarsest is small */
    int tail = last >= 2 && level_cells(&mg->g[last - 1]) <= MG_TAIL_CELLS ? last - 1 : last;
    for (int l = 0; l < tail; l++)
        if (!smooth_level(sim, st, l, false, MG_SMOOTH, l == 0 ? halves : 1, false) ||
            !restrict_down(sim, st, l))
            return false;
    cl_uint sweeps = MG_COARSEST_SWEEPS, smooth = MG_SMOOTH;
    bool ok = tail < last
                  ? KARGS(mg->k_tail, "mg_tail", A(mg->n_list[tail][0]), A(mg->n_list[tail][1]),
                          A(mg->g[tail]), A(mg->list[tail]), A(mg->type[tail]), A(mg->b[tail]),
                          A(mg->z[tail]), A(mg->res[tail]), A(mg->n_list[last][0]),
                          A(mg->n_list[last][1]), A(mg->g[last]), A(mg->list[last]),
                          A(mg->type[last]), A(mg->b[last]), A(mg->z[last]), A(smooth),
                          A(sweeps)) &&
                        sim_launch_local(sim, mg->k_tail, 0, st->local, st->local,
                                         STAGE_PROJECTION, "mg_tail")
                  : KARGS(mg->k_coarsest, "mg_coarsest", A(mg->n_list[last][0]),
                          A(mg->n_list[last][1]), A(sweeps), A(mg->g[last]), A(mg->list[last]),
                          A(mg->type[last]), A(mg->b[last]), A(mg->z[last])) &&
                        sim_launch_local(sim, mg->k_coarsest, 0, st->local, st->local,
                                         STAGE_PROJECTION, "mg_coarsest");
    if (!ok)
        return false;
    for (int l = tail - 1; l >= 0; l--)
        if (!prolong_up(sim, st, l) ||
            !smooth_level(sim, st, l, true, MG_SMOOTH, 0, dot && l == 0))
            return false;
    return true;
}

bool flip_mg_vcycle(mz_sim *sim, flip_state *st, cl_mem b, cl_mem z)
{
    return flip_cg_start(sim, st, b, z, false) && flip_mg_vcycle_rest(sim, st, b, z, 1, false);
}

int flip_mg_apply(mz_sim *sim, cl_mem b, cl_mem z)
{
    flip_state *st = sim->state;
    return st->mg && flip_mg_levels(sim, st) && flip_mg_vcycle(sim, st, b, z) ? 0 : -1;
}

void flip_mg_release(flip_mg *mg)
{
    if (!mg)
        return;
    cl_kernel ks[] = {mg->k_coarsen,  mg->k_smooth,    mg->k_coarsest, mg->k_residual,
                      mg->k_residual0, mg->k_restrict, mg->k_prolong,  mg->k_apply,
                      mg->k_smooth_dot, mg->k_scalars, mg->k_update,   mg->k_start,
                      mg->k_tail};
    mz_cl_release_kernels(ks, sizeof ks / sizeof *ks);
    for (int l = 1; l < mg->levels; l++) {
        cl_mem ms[] = {mg->type[l], mg->b[l], mg->z[l], mg->res[l], mg->list[l]};
        mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    }
    cl_mem ms[] = {mg->r, mg->z0, mg->d, mg->d_next, mg->q, mg->part, mg->scal, mg->part_dot};
    mz_cl_release_mems(ms, sizeof ms / sizeof *ms);
    if (mg->mg_program)
        clReleaseProgram(mg->mg_program);
    if (mg->cg_program)
        clReleaseProgram(mg->cg_program);
    free(mg);
}
