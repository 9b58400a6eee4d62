/* The checks that span keys: boxes inside the domain, one solver and one fluid material per
 * scene, colliders each solver can feel, fields the solver produces, and sizes a run can hold. */
#include "scene/validate.h"

#include "scene/bodies.h"
#include "scene/fields.h"
#include "scene/sizes.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const axis_names[3] = {"x", "y", "z"};

static bool box_ok(const double *min, const double *max, int dim, const char *path, mz_diag *d)
{
    for (int a = 0; a < dim; a++)
        if (!(max[a] > min[a])) {
            diag_add(d, "%s: max must exceed min on every axis (%s: min %g, max %g)", path,
                     axis_names[a], min[a], max[a]);
            return false;
        }
    return true;
}

static bool inside(const mz_domain *dom, const double *p, int dim)
{
    for (int a = 0; a < dim; a++)
        if (p[a] < dom->min[a] || p[a] > dom->max[a])
            return false;
    return true;
}

/* Whether a FLIP cell centre lies inside the collider (the grid sees it as solid cells). */
static bool flip_sees(const mz_scene *s, const mz_collider *c)
{
    int n[3];
    double cell[3];
    scene_flip_grid(s, n, cell);
    for (int k = 0; k < n[2]; k++)
        for (int j = 0; j < n[1]; j++)
            for (int i = 0; i < n[0]; i++) {
                double p[3] = {s->domain.min[0] + (i + 0.5) * cell[0],
                               s->domain.min[1] + (j + 0.5) * cell[1],
                               s->domain.min[2] + (k + 0.5) * cell[2]};
                if (collider_distance(c, p, s->sim.dimensions) < 0)
                    return true;
            }
    return false;
}

/* Exactly one shape each; solids only where a solver can feel them; no fluid inside a solid. */
static void validate_colliders(const mz_scene *s, mz_diag *d)
{
    int dim = s->sim.dimensions;
    for (size_t i = 0; i < s->n_colliders; i++) {
        const mz_collider *c = &s->colliders[i];
        if (c->has_sphere + c->has_box + c->has_plane + c->has_capsule != 1) {
            diag_add(d, "colliders[%zu]: give exactly one of sphere, box, plane or capsule", i);
            continue;
        }
        if (c->has_box) {
            char p[64];
            snprintf(p, sizeof p, "colliders[%zu].box", i);
            if (!box_ok(c->box.min, c->box.max, dim, p, d))
                continue;
        }
        if (c->has_plane) {
            double len = 0;
            for (int a = 0; a < dim; a++)
                len += c->plane.normal[a] * c->plane.normal[a];
            if (!(len > 0)) {
                diag_add(d, "colliders[%zu].plane.normal must not be zero in the simulated "
                            "axes", i);
                continue;
            }
        }
        if (c->static_friction < c->friction)
            diag_add(d, "colliders[%zu].static_friction (%g) must be at least friction (%g)",
                     i, c->static_friction, c->friction);
        if (scene_is_sph(s) && s->domain.boundary.type != MZ_BOUNDARY_PARTICLES) {
            diag_add(d, "colliders[%zu]: the SPH solvers feel colliders only with "
                        "domain.boundary.type \"particles\"", i);
            continue;
        }
        if (scene_boundary_particles(s) && scene_collider_samples(s, i, s->fluids[0].spacing,
                                                      scene_wall_layers(s), NULL, NULL) == 0) {
            diag_add(d, "colliders[%zu] gets no boundary particle at spacing %g (it is thinner "
                        "than the spacing, outside the domain, or inside an earlier collider)",
                     i, s->fluids[0].spacing);
            continue;
        }
        if (scene_solver(s) == MZ_SOLVER_FLIP && !flip_sees(s, c)) {
            int n[3];
            double cell[3];
            scene_flip_grid(s, n, cell);
            diag_add(d, "colliders[%zu] covers no cell centre of the FLIP grid (cells of %g m): "
                        "it is thinner than a cell or outside the domain", i, cell[0]);
            continue;
        }
        /* No fluid particle may start inside the solid. */
        for (size_t f = 0; f < s->n_fluids; f++) {
            const mz_fluid *fl = &s->fluids[f];
            if (!fl->has_box)
                continue; /* explicit positions: below */
            size_t dims[3];
            scene_lattice_dims(fl, dim, dims);
            bool inside = false;
            for (size_t z = 0; z < dims[2] && !inside; z++)
                for (size_t y = 0; y < dims[1] && !inside; y++)
                    for (size_t x = 0; x < dims[0] && !inside; x++) {
                        double p[3] = {fl->box.min[0] + (x + 0.5) * fl->spacing,
                                       fl->box.min[1] + (y + 0.5) * fl->spacing,
                                       fl->box.min[2] + (z + 0.5) * fl->spacing};
                        inside = collider_distance(c, p, dim) < 0.5 * fl->spacing;
                    }
            if (inside)
                diag_add(d, "fluids[%zu].box reaches within half a spacing of colliders[%zu] "
                            "(its particles would start on the solid's own)", f, i);
        }
        for (size_t f = 0; f < s->n_fluids; f++)
            for (size_t k = 0; k < s->fluids[f].positions.n; k++)
                if (collider_distance(c, s->fluids[f].positions.p[k], dim) <
                    0.5 * s->fluids[f].spacing) {
                    diag_add(d, "fluids[%zu].positions[%zu] lies within half a spacing of "
                                "colliders[%zu]", f, k, i);
                    break;
                }
    }
}

/* SPH and PBF: the support radius in range, no two fluid boxes in one place. */
static void check_no_overlap(const mz_scene *s, mz_diag *d);

static void check_fluid_material(const mz_scene *s, mz_diag *d)
{
    const mz_fluid *f0 = &s->fluids[0];
    /* Below 1.5 spacings the lattice's neighbours sit on the kernel's edge (at one spacing the
     * gradient sums to zero); above 10 the host-side lattice sums and the neighbour counts run
     * away. 2 is the usual choice. */
    if (f0->support_radius > 0 &&
        (f0->support_radius < 1.5 * f0->spacing || f0->support_radius > 10 * f0->spacing))
        diag_add(d, "fluids[0].support_radius must be between 1.5 and 10 times the spacing "
                    "(%g..%g m; got %g)",
                 1.5 * f0->spacing, 10 * f0->spacing, f0->support_radius);
    check_no_overlap(s, d);
}

/* Two fluids in one place double the density there: Tait turns that into ~100 B, PBF into an
 * explosion, FLIP into a cell that keeps expanding. */
static void check_no_overlap(const mz_scene *s, mz_diag *d)
{
    for (size_t i = 0; i < s->n_fluids; i++)
        for (size_t j = i + 1; j < s->n_fluids; j++) {
            const mz_fluid *a = &s->fluids[i], *b = &s->fluids[j];
            if (!a->has_box || !b->has_box)
                continue;
            bool overlap = true;
            for (int k = 0; k < s->sim.dimensions; k++)
                overlap &= a->box.min[k] < b->box.max[k] && b->box.min[k] < a->box.max[k];
            if (overlap)
                diag_add(d, "fluids[%zu].box overlaps fluids[%zu].box", j, i);
        }
}

/* FLIP: one material on one grid; cells the trilinear weights can fill (at least one particle
 * per cell along each axis; up to 8 spacings); node indices that fit 32 bits with room for the
 * four floats of a face (src/solvers/flip/flip.h); no two fluid boxes in one place. */
static void check_flip(const mz_scene *s, mz_diag *d)
{
    const mz_fluid *f0 = &s->fluids[0];
    for (size_t i = 1; i < s->n_fluids; i++) {
        static const struct {
            const char *name;
            size_t off;
        } same[] = {{"spacing", offsetof(mz_fluid, spacing)},
                    {"rest_density", offsetof(mz_fluid, rest_density)},
                    {"flip_ratio", offsetof(mz_fluid, flip_ratio)},
                    {"cell_size", offsetof(mz_fluid, cell_size)},
                    {"volume_correction", offsetof(mz_fluid, volume_correction)}};
        for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
            double a = *(const double *)((const char *)&s->fluids[i] + same[k].off);
            double b = *(const double *)((const char *)f0 + same[k].off);
            if (a != b)
                diag_add(d, "fluids[%zu].%s must equal fluids[0].%s for FLIP (one fluid "
                            "material per scene; got %g and %g)", i, same[k].name, same[k].name,
                         a, b);
        }
    }
    for (size_t i = 1; i < s->n_fluids; i++)
        if (s->fluids[i].transfer != f0->transfer)
            diag_add(d, "fluids[%zu].transfer must equal fluids[0].transfer for FLIP (one fluid "
                        "material per scene; got \"%s\" and \"%s\")", i,
                     mz_flip_transfer_names[s->fluids[i].transfer],
                     mz_flip_transfer_names[f0->transfer]);
    /* APIC has no blend: a flip_ratio other than the default would be silently ignored. */
    if (f0->transfer == MZ_TRANSFER_APIC && f0->flip_ratio != MZ_FLIP_RATIO_DEFAULT)
        diag_add(d, "fluids[0].flip_ratio is not used with fluids[0].transfer \"apic\" (got %g): "
                    "APIC takes the grid's velocity and its gradient, with no FLIP share; "
                    "remove flip_ratio, or use transfer \"flip\"", f0->flip_ratio);
    if (f0->cell_size > 0 && (f0->cell_size < f0->spacing || f0->cell_size > 8 * f0->spacing))
        diag_add(d, "fluids[0].cell_size must be between 1 and 8 times the spacing (%g..%g m; "
                    "got %g)", f0->spacing, 8 * f0->spacing, f0->cell_size);
    int cells[3];
    double cell[3], nodes = 1;
    scene_flip_grid(s, cells, cell);
    for (int a = 0; a < s->sim.dimensions; a++)
        nodes *= cells[a] + 1.0;
    if (nodes > 1073741824.0)
        diag_add(d, "the FLIP grid would have %.3g nodes (cells %d x %d x %d); at most 2^30: "
                    "choose a larger fluids[0].cell_size or a smaller domain", nodes, cells[0],
                 cells[1], cells[2]);
    check_no_overlap(s, d);
}

/* One solver per scene; SPH, PBF and FLIP run one fluid material (one mass, density, h, ...). */
static void validate_solver(const mz_scene *s, mz_diag *d)
{
    const mz_fluid *f0 = s->n_fluids ? &s->fluids[0] : NULL;
    bool sph = f0 && scene_is_sph(s), pbf = f0 && scene_solver(s) == MZ_SOLVER_PBF;
    bool flip = f0 && scene_solver(s) == MZ_SOLVER_FLIP;
    if (f0 && (flip || pbf) && f0->walls == MZ_WALLS_WALL_FUNCTION && !(f0->viscosity > 0))
        diag_add(d, "fluids[0].viscosity must be > 0 with fluids[0].walls \"wall_function\" "
                    "(the log law's shear stress comes from it; water: 0.001 Pa s)");
    if (f0 && pbf && f0->walls == MZ_WALLS_NO_SLIP)
        diag_add(d, "fluids[0].walls \"no_slip\" is FLIP's; pbf takes \"free_slip\" or "
                    "\"wall_function\" (a smooth wall's shear stress on the layer of particles "
                    "along it)");
    for (size_t i = 1; pbf && i < s->n_fluids; i++)
        if (s->fluids[i].walls != f0->walls || s->fluids[i].viscosity != f0->viscosity)
            diag_add(d, "fluids[%zu].walls and viscosity must equal fluids[0]'s for PBF (one "
                        "fluid material per scene)", i);
    for (size_t i = 1; i < s->n_fluids; i++) {
        const mz_fluid *f = &s->fluids[i];
        if (f->solver != f0->solver) {
            diag_add(d, "fluids[%zu].solver must match fluids[0].solver (one solver per scene; "
                        "got %s and %s)", i, mz_solver_names[f->solver],
                     mz_solver_names[f0->solver]);
            continue;
        }
        if (!sph && !pbf)
            continue;
        static const struct {
            const char *name;
            size_t off;
            bool sph;
        } same[] = {{"spacing", offsetof(mz_fluid, spacing), true},
                    {"rest_density", offsetof(mz_fluid, rest_density), true},
                    {"mass", offsetof(mz_fluid, mass), true},
                    {"support_radius", offsetof(mz_fluid, support_radius), true},
                    {"speed_of_sound", offsetof(mz_fluid, speed_of_sound), true},
                    {"viscosity", offsetof(mz_fluid, viscosity), true},
                    {"artificial_viscosity", offsetof(mz_fluid, artificial_viscosity), true},
                    {"density_tolerance", offsetof(mz_fluid, density_tolerance), true},
                    {"divergence_tolerance", offsetof(mz_fluid, divergence_tolerance), true},
                    {"relaxation_epsilon", offsetof(mz_fluid, relaxation_epsilon), false},
                    {"xsph_viscosity", offsetof(mz_fluid, xsph_viscosity), false},
                    {"vorticity", offsetof(mz_fluid, vorticity), false},
                    {"tensile_k", offsetof(mz_fluid, tensile_k), false},
                    {"warm_start", offsetof(mz_fluid, warm_start), false},
                    {"tensile_dq", offsetof(mz_fluid, tensile_dq), false}};
        for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
            if (same[k].sph != sph && k >= 4) /* the first four are every material's */
                continue;
            double a = *(const double *)((const char *)f + same[k].off);
            double b = *(const double *)((const char *)f0 + same[k].off);
            if (a != b)
                diag_add(d, "fluids[%zu].%s must equal fluids[0].%s for %s (one fluid "
                            "material per scene; got %g and %g)", i, same[k].name, same[k].name,
                         sph ? "SPH" : "PBF", a, b);
        }
        if (pbf && f->tensile_n != f0->tensile_n)
            diag_add(d, "fluids[%zu].tensile_n must equal fluids[0].tensile_n for PBF (got %d "
                        "and %d)", i, f->tensile_n, f0->tensile_n);
        if (sph && f->density_method != f0->density_method)
            diag_add(d, "fluids[%zu].density_method must equal fluids[0].density_method for SPH "
                        "(one fluid material per scene; got %s and %s)", i,
                     mz_density_method_names[f->density_method],
                     mz_density_method_names[f0->density_method]);
    }
    if (f0 && f0->solver == MZ_SOLVER_COLLAPSED_SPH &&
        f0->density_method == MZ_DENSITY_CONTINUITY)
        diag_add(d, "fluids[0].density_method \"continuity\" needs solver wcsph (collapsed_sph "
                    "sums its densities and carries them forward by the continuity equation "
                    "itself)");
    if (f0 && f0->solver == MZ_SOLVER_DFSPH && f0->density_method == MZ_DENSITY_CONTINUITY)
        diag_add(d, "fluids[0].density_method \"continuity\" needs solver wcsph (dfsph sums "
                    "its densities and makes them rest_density by its pressure solve)");
    if ((sph || flip) && s->n_cloths + s->n_meshes + s->n_rigids)
        diag_add(d, "%s: cloths, meshes and rigids need a position-based scene (fluids[0].solver "
                    "is %s)", s->n_cloths ? "cloths" : s->n_meshes ? "meshes" : "rigids",
                 mz_solver_names[f0->solver]);
    if (pbf)
        check_fluid_material(s, d);
    if (flip)
        check_flip(s, d);
    if (s->domain.boundary.friction != MZ_FRICTION_NO_SLIP &&
        s->domain.boundary.type != MZ_BOUNDARY_PARTICLES)
        diag_add(d, "domain.boundary.friction \"%s\" applies to domain.boundary.type "
                    "\"particles\" (SPH boundary particles)",
                 mz_wall_friction_names[s->domain.boundary.friction]);
    else if (pbf && s->domain.boundary.friction != MZ_FRICTION_NO_SLIP)
        diag_add(d, "domain.boundary.friction \"%s\" is SPH's: PBF's particle walls count in "
                    "its density only (free slip); for a wall's shear stress set "
                    "fluids[0].walls to \"wall_function\"",
                 mz_wall_friction_names[s->domain.boundary.friction]);
    if (!sph) {
        if (s->domain.boundary.type == MZ_BOUNDARY_PARTICLES && !pbf)
            diag_add(d, "domain.boundary.type \"particles\" needs an SPH solver (wcsph, "
                        "collapsed_sph or dfsph) or pbf");
        if (s->sim.adaptive && !pbf)
            diag_add(d, "simulation.adaptive applies to the SPH solvers and pbf only");
        return;
    }
    check_fluid_material(s, d);
    if (s->domain.boundary.friction == MZ_FRICTION_WALL_FUNCTION && !(f0->viscosity > 0))
        diag_add(d, "fluids[0].viscosity must be > 0 with domain.boundary.friction "
                    "\"wall_function\" (the wall's shear stress follows from it: water at "
                    "20 C is 0.001 Pa s)");
    if (scene_speed_of_sound(s) <= 0)
        diag_add(d, "fluids[0].speed_of_sound is needed: with no gravity and no initial speed "
                    "there is no speed to scale it from");
}

void scene_validate(mz_scene *s, mz_diag *d)
{
    int dim = s->sim.dimensions;
    if (s->version != MZ_SCENE_VERSION)
        diag_add(d, "mizu_scene must be %d (this mizu reads scene format %d; got %d)",
                 MZ_SCENE_VERSION, MZ_SCENE_VERSION, s->version);
    /* Devices step in single precision: a frame and a substep must be normal floats (fps 1e-320
     * passes "> 0" and makes an infinite step). */
    if (!(scene_frame_dt(s) <= FLT_MAX && scene_substep_dt(s) >= FLT_MIN))
        diag_add(d, "simulation.fps %g with %d substeps makes frames of %g s and steps of %g s; "
                    "single precision holds %g..%g s", s->sim.fps, s->sim.substeps,
                 scene_frame_dt(s), scene_substep_dt(s), FLT_MIN, FLT_MAX);
    bool domain_ok = box_ok(s->domain.min, s->domain.max, dim, "domain", d);
    for (size_t i = 0; i < s->n_fluids; i++) {
        mz_fluid *f = &s->fluids[i];
        char path[64];
        snprintf(path, sizeof path, "fluids[%zu]", i);
        if (f->has_box == (f->positions.n > 0)) {
            diag_add(d, "%s: give exactly one of box or positions", path);
            continue;
        }
        if (f->velocities.n && f->velocities.n != f->positions.n)
            diag_add(d, "%s.velocities: %zu given for %zu positions", path, f->velocities.n,
                     f->positions.n);
        if (f->has_box) {
            char bp[80];
            snprintf(bp, sizeof bp, "%s.box", path);
            if (!box_ok(f->box.min, f->box.max, dim, bp, d))
                continue;
            size_t dims[3];
            scene_lattice_dims(f, dim, dims);
            for (int a = 0; a < dim; a++)
                if (dims[a] == 0)
                    diag_add(d, "%s is thinner than spacing %g on the %s axis", bp, f->spacing,
                             axis_names[a]);
            for (int a = 0; domain_ok && a < dim; a++)
                if (f->box.min[a] < s->domain.min[a] || f->box.max[a] > s->domain.max[a]) {
                    diag_add(d, "%s must lie inside the domain (%s: box %g..%g, domain %g..%g)",
                             bp, axis_names[a], f->box.min[a], f->box.max[a],
                             s->domain.min[a], s->domain.max[a]);
                    break;
                }
        }
        for (size_t k = 0; domain_ok && k < f->positions.n; k++)
            if (!inside(&s->domain, f->positions.p[k], dim)) {
                diag_add(d, "%s.positions[%zu] lies outside the domain", path, k);
                break;
            }
    }
    /* DFSPH has no speed of sound to step by: it always chooses its own CFL steps. */
    if (scene_solver(s) == MZ_SOLVER_DFSPH)
        s->sim.adaptive = true;
    validate_solver(s, d);
    unsigned produced = MZ_FIELD_BIT(MZ_FIELD_POSITION) | MZ_FIELD_BIT(MZ_FIELD_VELOCITY);
    if (scene_is_sph(s))
        produced |= MZ_FIELD_BIT(MZ_FIELD_DENSITY) | MZ_FIELD_BIT(MZ_FIELD_PRESSURE);
    if (scene_solver(s) == MZ_SOLVER_PBF)
        produced |= MZ_FIELD_BIT(MZ_FIELD_DENSITY);
    if (scene_solver(s) == MZ_SOLVER_FLIP)
        produced |= MZ_FIELD_BIT(MZ_FIELD_DENSITY) | MZ_FIELD_BIT(MZ_FIELD_PRESSURE);
    unsigned extra = s->output.fields & ~produced;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (extra & MZ_FIELD_BIT(f))
            diag_add(d, "output.fields: %s is not produced by the %s solver", mz_field_names[f],
                     mz_solver_names[scene_solver(s)]);
    s->output.fields |= MZ_FIELD_BIT(MZ_FIELD_POSITION);
    validate_observers(s, produced, d);
    /* The checks below walk lattices: only on a scene that is otherwise sound. */
    if (d->count)
        return;
    bodies_prepare(s, d);
    if (d->count)
        return;
    size_t n = scene_particle_count(s);
    /* adjacency entries (2 per constraint) travel as 32-bit ints */
    if (bodies_constraint_count(s) > (UINT32_MAX - 1) / 2)
        diag_add(d, "the scene makes %zu constraints; at most %u are supported",
                 bodies_constraint_count(s), (UINT32_MAX - 1) / 2);
    if (n == 0)
        diag_add(d, "the scene makes no particles (add a fluid with a box or positions, a "
                    "cloth or a mesh)");
    else if (n > MZ_MAX_PARTICLES)
        diag_add(d, "the scene makes %zu particles; at most %zu are supported", n,
                 MZ_MAX_PARTICLES);
    else if (scene_boundary_particles(s) &&
             !(scene_wall_count(s) <= (double)MZ_MAX_PARTICLES))
        diag_add(d, "the domain's walls at spacing %g make more than %zu boundary particles, "
                    "the most supported", s->fluids[0].spacing, MZ_MAX_PARTICLES);
    else
        validate_colliders(s, d);
}
