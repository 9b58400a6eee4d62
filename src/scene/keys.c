/* The scene's key tables: every key once, with its type, bounds, default, unit and meaning.
 * parse.c reads, checks and writes scenes through them. */
#include "scene/fields.h"
#include "scene/keys.h"
#include "scene/scene.h"

#include <stddef.h>

#define OFF(T, f) offsetof(T, f)

const char *const mz_solver_names[MZ_SOLVER_COUNT + 1] = {"ballistic", "wcsph", "collapsed_sph",
                                                          "pbf", "flip", "dfsph", 0};
static const char *const boundary_names[] = {"penalty", "clamp", "particles", 0};
const char *const mz_wall_friction_names[] = {"no_slip", "wall_function", "free_slip", 0};
const char *const mz_density_method_names[] = {"summation", "continuity", 0};
const char *const mz_pressure_solver_names[] = {"rbgs", "jacobi", "mgpcg", 0};
static const char *const compression_names[] = {"none", "gzip", 0};
const char *const mz_flip_walls_names[] = {"no_slip", "free_slip", "wall_function", 0};
const char *const mz_seeding_names[] = {"auto", "lattice", "jittered", 0};
const char *const mz_flip_transfer_names[] = {"flip", "apic", 0};
static const char *const plane_names[] = {"xz", "xy", "yz", 0};
static const char *const mesh_kind_names[] = {"cloth", "softbody", 0};
static const char *const pin_names[] = {"corner_00", "corner_10", "corner_01", "corner_11",
                                        "edge_u0",   "edge_u1",   "edge_v0",   "edge_v1", 0};

#define OFF(T, f) offsetof(T, f)

static const mz_key simulation_keys[] = {
    {.name = "fps", .type = K_NUMBER, .offset = OFF(mz_simulation, fps), .def = "60",
     .flags = K_MIN_GT, .min = 0, .unit = "1/s", .doc = "output frames per simulated second"},
    {.name = "frames", .type = K_INT, .offset = OFF(mz_simulation, frames), .def = "240",
     .flags = K_MIN | K_MAX, .min = 1, .max = 1e9,
     .doc = "frames to simulate after the initial state (--frames overrides)"},
    {.name = "duration", .type = K_NUMBER, .offset = OFF(mz_simulation, duration), .def = "0",
     .flags = K_MIN | K_MAX, .min = 0, .max = 1e12, .unit = "s",
     .doc = "simulated seconds instead of frames: frames = duration x fps, rounded up (0: "
            "frames decides; --until overrides, --frames clears it)"},
    {.name = "substeps", .type = K_INT, .offset = OFF(mz_simulation, substeps), .def = "4",
     .flags = K_MIN | K_MAX, .min = 1, .max = 100000, .doc = "solver steps per frame"},
    {.name = "iterations", .type = K_INT, .offset = OFF(mz_simulation, iterations), .def = "2",
     .flags = K_MIN | K_MAX, .min = 1, .max = 1000,
     .doc = "constraint iterations per substep (position-based solvers)"},
    {.name = "gravity", .type = K_VEC3, .offset = OFF(mz_simulation, gravity),
     .def = "[0, -9.81, 0]", .unit = "m/s^2", .doc = "gravitational acceleration (y is up)"},
    {.name = "dimensions", .type = K_INT, .offset = OFF(mz_simulation, dimensions), .def = "3",
     .flags = K_MIN | K_MAX, .min = 2, .max = 3,
     .doc = "3, or 2 for planar runs: z is held at 0 and 2D kernel constants are used"},
    {.name = "adaptive", .type = K_BOOL, .offset = OFF(mz_simulation, adaptive), .def = "false",
     .doc = "SPH: choose each step's dt from the CFL and force criteria instead of substeps; "
            "never beyond the frame's end. pbf: at least substeps steps a frame, more where "
            "the water's depth H needs dt <= 0.35 h / sqrt(|g| H)"},
    {.name = "cfl", .type = K_NUMBER, .offset = OFF(mz_simulation, cfl), .def = "0",
     .flags = K_MIN | K_MAX, .min = 0, .max = 1,
     .doc = "SPH step: dt = cfl x min(h / max(c0, |v|max), sqrt(h / |a|max)); 0: the solver's "
            "own, 0.2 for every SPH solver; dfsph "
            "has no c0: dt = cfl x min(h / |v|max, sqrt(h / |a|max)), default 0.2"},
    {.name = "damping", .type = K_NUMBER, .offset = OFF(mz_simulation, damping), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "1/s",
     .doc = "position-based solvers: velocities decay as exp(-damping t) (air drag on cloth, "
            "settling tests); 0: none"},
    {.name = "relaxation", .type = K_NUMBER, .offset = OFF(mz_simulation, relaxation),
     .def = "1.5", .flags = K_MIN_GT | K_MAX, .min = 0, .max = 2,
     .doc = "position-based solvers: over-relaxation factor omega of the parallel (Jacobi) "
            "constraint projection; each constraint's correction is scaled by omega over the "
            "number of constraints its particles share"},
    {.name = "max_speed", .type = K_NUMBER, .offset = OFF(mz_simulation, max_speed), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "m/s",
     .doc = "blow-up detection: a particle faster than this (or with a non-finite position or "
            "velocity) after a frame stops the run; 0: 10 x the largest of the free-fall speed "
            "across the domain, the fastest initial speed, the SPH speed of sound and 1 m/s"},
    {.name = "pressure_solver", .type = K_ENUM, .offset = OFF(mz_simulation, pressure_solver),
     .def = "\"rbgs\"", .names = mz_pressure_solver_names,
     .doc = "flip: how the pressure Poisson equation is solved: rbgs, red-black Gauss-Seidel "
            "with over-relaxation (SOR); jacobi, damped Jacobi (the slow baseline); mgpcg, "
            "conjugate gradients preconditioned by a geometric multigrid V-cycle; all start "
            "from the last step's pressure"},
    {.name = "pressure_iterations", .type = K_INT,
     .offset = OFF(mz_simulation, pressure_iterations), .def = "1000", .flags = K_MIN | K_MAX,
     .min = 1, .max = 1000000,
     .doc = "flip: the most sweeps of the pressure solver per step (it stops earlier at "
            "pressure_tolerance)"},
    {.name = "pressure_tolerance", .type = K_NUMBER,
     .offset = OFF(mz_simulation, pressure_tolerance), .def = "1e-4", .flags = K_MIN_GT | K_MAX,
     .min = 0, .max = 1,
     .doc = "flip: the pressure solve stops when the divergence left in every fluid cell is "
            "below this fraction of the largest divergence before the projection"},
    {.name = "seed", .type = K_INT, .offset = OFF(mz_simulation, seed), .def = "0",
     .flags = K_MIN | K_MAX, .min = 0, .max = 2147483647,
     .doc = "the random numbers of jittered seeding (fluids[].seeding): the same seed gives the "
            "same particles; another seed, another sample of the same water (ensembles)"},
    {0}};
static const mz_schema simulation_schema = {"simulation", simulation_keys, sizeof(mz_simulation)};

/* colliders[].forces and domain.boundary.forces (mz_load). */
static const mz_key load_keys[] = {
    {.name = "rate", .type = K_NUMBER, .offset = OFF(mz_load, rate), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "Hz",
     .doc = "samples per simulated second, independent of the frames; 0: after every step"},
    {.name = "about", .type = K_VEC3, .offset = OFF(mz_load, about),
     .aux_offset = OFF(mz_load, has_about), .unit = "m",
     .doc = "the point torques are taken about; left out: a sphere's or capsule's centre, a "
            "box's centre, a plane's point, the domain's centre for its walls"},
    {0}};
static const mz_schema load_schema = {"forces", load_keys, sizeof(mz_load)};

static const mz_key boundary_keys[] = {
    {.name = "type", .type = K_ENUM, .offset = OFF(mz_boundary, type), .def = "\"penalty\"",
     .names = boundary_names,
     .doc = "penalty: spring-damper walls acting on a particle's radius; clamp: positions "
            "projected inside, velocity into the wall removed; particles (SPH and pbf): the "
            "fluid lattice continued beyond the walls as static particles, as many layers as "
            "the support radius reaches; SPH pushes with the wall pressure extrapolated from "
            "the fluid's (Adami et al. 2012), pbf counts them in its density constraint "
            "(Akinci et al. 2012), colliders sampled the same way"},
    {.name = "friction", .type = K_ENUM, .offset = OFF(mz_boundary, friction),
     .def = "\"no_slip\"", .names = mz_wall_friction_names,
     .doc = "SPH's particles walls: how they act along themselves (pbf: only no_slip, the "
            "default, which it ignores; its walls are free slip or fluids[].walls). no_slip: "
            "viscosity and artificial viscosity against walls at rest (the artificial one's "
            "drag shrinks with the spacing); wall_function: the shear stress of a smooth wall by the log law from "
            "the fluid's viscosity, the same at every resolution (needs viscosity > 0); "
            "free_slip: none"},
    {.name = "stiffness", .type = K_NUMBER, .offset = OFF(mz_boundary, stiffness),
     .def = "10000", .flags = K_MIN_GT, .min = 0, .unit = "1/s^2",
     .doc = "penalty wall: acceleration per metre of penetration"},
    {.name = "damping", .type = K_NUMBER, .offset = OFF(mz_boundary, damping), .def = "256",
     .flags = K_MIN, .min = 0, .unit = "1/s",
     .doc = "penalty wall: acceleration per m/s of speed into the wall"},
    {.name = "acceleration_limit", .type = K_NUMBER,
     .offset = OFF(mz_boundary, acceleration_limit), .def = "200", .flags = K_MIN_GT, .min = 0,
     .unit = "m/s^2",
     .doc = "cap on the magnitude of a particle's acceleration from walls and particle forces "
            "(gravity excluded)"},
    {.name = "forces", .type = K_OBJECT, .offset = OFF(mz_boundary, forces),
     .sub = &load_schema, .aux_offset = OFF(mz_boundary, has_forces),
     .doc = "measure the fluid's force and torque on each wall of the domain: "
            "/observables/walls/<x_min|x_max|y_min|...>/{force,torque}"},
    {0}};
static const mz_schema boundary_schema = {"boundary", boundary_keys, sizeof(mz_boundary)};

const char *const mz_motion_names[] = {"translation", "rotation", 0};

/* colliders[].motion and domain.motion (mz_motion). */
static const mz_key motion_keys[] = {
    {.name = "type", .type = K_ENUM, .offset = OFF(mz_motion, type), .flags = K_REQUIRED,
     .names = mz_motion_names,
     .doc = "translation: the solid moves by s(t) along direction; rotation: it turns by s(t) "
            "degrees about the line through center along axis"},
    {.name = "direction", .type = K_VEC3, .offset = OFF(mz_motion, direction), .def = "[1, 0, 0]",
     .doc = "translation: the direction of motion (any length)"},
    {.name = "center", .type = K_VEC3, .offset = OFF(mz_motion, center),
     .aux_offset = OFF(mz_motion, has_center), .unit = "m",
     .doc = "rotation: a point on the axis; left out, the collider's (the domain's) centre"},
    {.name = "axis", .type = K_VEC3, .offset = OFF(mz_motion, axis), .def = "[0, 0, 1]",
     .doc = "rotation: the axis (any length; right-handed); in 2D [0, 0, 1]"},
    {.name = "amplitude", .type = K_NUMBER, .offset = OFF(mz_motion, amplitude), .def = "0",
     .unit = "m or deg",
     .doc = "sine law: s(t) = amplitude r(t) sin(360 t / period + phase), in m (translation) or "
            "degrees (rotation)"},
    {.name = "period", .type = K_NUMBER, .offset = OFF(mz_motion, period), .def = "1",
     .flags = K_MIN_GT, .min = 0, .unit = "s", .doc = "sine law: the period"},
    {.name = "phase", .type = K_NUMBER, .offset = OFF(mz_motion, phase), .def = "0",
     .unit = "deg", .doc = "sine law: the phase; s(0) must be 0 (0 or 180 without a ramp)"},
    {.name = "ramp", .type = K_NUMBER, .offset = OFF(mz_motion, ramp), .def = "0", .flags = K_MIN,
     .min = 0, .unit = "s",
     .doc = "sine law: the amplitude grows smoothly, r(t) = (1 - cos(pi t / ramp)) / 2, over "
            "the first ramp seconds; 0: none"},
    {.name = "table", .type = K_STRING, .offset = OFF(mz_motion, table),
     .doc = "instead of the sine law: a CSV file (relative to the scene) of rows time (s), "
            "value (m or degrees), times increasing; a monotone cubic runs through the rows "
            "(PCHIP: no overshoot), the last value after the last row; its value at t = 0 must "
            "be 0"},
    {0}};
static const mz_schema motion_schema = {"motion", motion_keys, sizeof(mz_motion)};

static const mz_key domain_keys[] = {
    {.name = "min", .type = K_VEC3, .offset = OFF(mz_domain, min), .flags = K_REQUIRED,
     .unit = "m", .doc = "lower corner of the simulation box"},
    {.name = "max", .type = K_VEC3, .offset = OFF(mz_domain, max), .flags = K_REQUIRED,
     .unit = "m", .doc = "upper corner of the simulation box"},
    {.name = "boundary", .type = K_OBJECT, .offset = OFF(mz_domain, boundary),
     .sub = &boundary_schema, .doc = "how the box's walls act on particles"},
    {.name = "motion", .type = K_OBJECT, .offset = OFF(mz_domain, motion),
     .sub = &motion_schema, .aux_offset = OFF(mz_domain, has_motion),
     .doc = "move the whole domain, its walls and colliders with it, by a prescribed law (a "
            "rolling or swaying tank); the run is done in the domain's frame: positions, "
            "velocities, probes and forces are the domain's, its pose goes to "
            "/observables/domain"},
    {0}};
static const mz_schema domain_schema = {"domain", domain_keys, sizeof(mz_domain)};

static const mz_key box_keys[] = {
    {.name = "min", .type = K_VEC3, .offset = OFF(mz_box, min), .flags = K_REQUIRED,
     .unit = "m", .doc = "lower corner"},
    {.name = "max", .type = K_VEC3, .offset = OFF(mz_box, max), .flags = K_REQUIRED,
     .unit = "m", .doc = "upper corner"},
    {0}};
static const mz_schema box_schema = {"box", box_keys, sizeof(mz_box)};

static const mz_key fluid_keys[] = {
    {.name = "name", .type = K_STRING, .offset = OFF(mz_fluid, name),
     .doc = "label for messages and the output file"},
    {.name = "solver", .type = K_ENUM, .offset = OFF(mz_fluid, solver), .def = "\"ballistic\"",
     .names = mz_solver_names,
     .doc = "ballistic: particles feel gravity and the domain walls, not each other; wcsph: "
            "weakly compressible SPH (Tait equation); collapsed_sph: one-pass SPH using last "
            "step's densities; pbf: position based fluids (a density constraint per particle, "
            "solved with cloths, meshes and rigids in one particle system); flip: FLIP/PIC, "
            "particles carry the velocity and a grid makes it divergence-free (pressure "
            "projection); dfsph: divergence-free SPH (Bender & Koschier), incompressible "
            "within density_tolerance by two pressure solves a step, always with its own CFL "
            "steps"},
    {.name = "box", .type = K_OBJECT, .offset = OFF(mz_fluid, box), .sub = &box_schema,
     .aux_offset = OFF(mz_fluid, has_box),
     .doc = "fill this box with particles on a cubic lattice of `spacing`, at cell centres"},
    {.name = "positions", .type = K_POINTS, .offset = OFF(mz_fluid, positions), .unit = "m",
     .doc = "explicit particles (instead of box)"},
    {.name = "velocities", .type = K_POINTS, .offset = OFF(mz_fluid, velocities),
     .unit = "m/s", .doc = "initial velocity of each explicit particle (one per position)"},
    {.name = "spacing", .type = K_NUMBER, .offset = OFF(mz_fluid, spacing),
     .flags = K_REQUIRED | K_MIN_GT, .min = 0, .unit = "m",
     .doc = "particle spacing; a particle's contact radius is half of it"},
    {.name = "rest_density", .type = K_NUMBER, .offset = OFF(mz_fluid, rest_density),
     .def = "1000", .flags = K_MIN_GT, .min = 0, .unit = "kg/m^3", .doc = "rest density"},
    {.name = "mass", .type = K_NUMBER, .offset = OFF(mz_fluid, mass), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "kg",
     .doc = "mass of one particle; 0: rest_density x spacing^dimensions, for SPH with summation "
            "density divided by the kernel's sum over the lattice so the lattice starts at "
            "rest_density"},
    {.name = "velocity", .type = K_VEC3, .offset = OFF(mz_fluid, velocity), .def = "[0, 0, 0]",
     .unit = "m/s", .doc = "initial velocity of every particle (velocities overrides)"},
    {.name = "relaxation_epsilon", .type = K_NUMBER,
     .offset = OFF(mz_fluid, relaxation_epsilon), .def = "0.001", .flags = K_MIN | K_MAX,
     .min = 0, .max = 10,
     .doc = "PBF: constraint relaxation epsilon, as a fraction of the sum of squared constraint "
            "gradients of a particle inside the rest lattice (so it means the same at any "
            "spacing and mass); softens the constraint where neighbours are few"},
    {.name = "xsph_viscosity", .type = K_NUMBER, .offset = OFF(mz_fluid, xsph_viscosity),
     .def = "0.01", .flags = K_MIN | K_MAX, .min = 0, .max = 1,
     .doc = "PBF: XSPH viscosity c: each step a particle's velocity moves c x the kernel-"
            "weighted mean of its fluid neighbours' relative velocities"},
    {.name = "vorticity", .type = K_NUMBER, .offset = OFF(mz_fluid, vorticity), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "m/s",
     .doc = "PBF: vorticity confinement strength epsilon: acceleration epsilon (N x omega), "
            "omega the velocity's curl, N the unit gradient of |omega|; 0: off"},
    {.name = "warm_start", .type = K_NUMBER, .offset = OFF(mz_fluid, warm_start), .def = "0.5",
     .flags = K_MIN | K_MAX, .min = 0, .max = 1,
     .doc = "PBF: each substep first applies this fraction of the density multipliers the last "
            "substep ended with, so the pressure that holds a column up need not be rebuilt "
            "from compression every substep (0.5 halves the density error of a resting tank "
            "at 4 iterations; 0.7 and above let a resting 2D tank diverge at 2 iterations)"},
    {.name = "tensile_k", .type = K_NUMBER, .offset = OFF(mz_fluid, tensile_k), .def = "100",
     .flags = K_MIN | K_MAX, .min = 0, .max = 10000,
     .doc = "PBF: artificial pressure p = k rho0 |g| h (W(r)/W(dq h))^n between fluid "
            "particles against clumping, a force (applied once per substep, whatever the "
            "iterations); k in units of rho0 |g| h, the weight of a kernel-deep layer of the "
            "fluid; 0, or no gravity: off"},
    {.name = "tensile_n", .type = K_INT, .offset = OFF(mz_fluid, tensile_n), .def = "4",
     .flags = K_MIN | K_MAX, .min = 1, .max = 8, .doc = "PBF: exponent n of s_corr"},
    {.name = "tensile_dq", .type = K_NUMBER, .offset = OFF(mz_fluid, tensile_dq), .def = "0.2",
     .flags = K_MIN_GT | K_MAX, .min = 0, .max = 0.9,
     .doc = "PBF: dq of s_corr as a fraction of the support radius"},
    {.name = "transfer", .type = K_ENUM, .offset = OFF(mz_fluid, transfer), .def = "\"flip\"",
     .names = mz_flip_transfer_names,
     .doc = "flip: how velocities go from the particles to the grid and back: flip, the FLIP/PIC "
            "blend of flip_ratio; apic, the affine particle-in-cell transfer (Jiang et al. "
            "2015): each particle also carries its velocity's gradient, which keeps rotation "
            "(angular momentum) without FLIP's noise; flip_ratio is not used and must keep its "
            "default"},
    /* .def: MZ_FLIP_RATIO_DEFAULT (scene.h), which validation compares with under apic */
    {.name = "flip_ratio", .type = K_NUMBER, .offset = OFF(mz_fluid, flip_ratio), .def = "0.95",
     .flags = K_MIN | K_MAX, .min = 0, .max = 1,
     .doc = "flip: share of FLIP in a particle's new velocity: 1 adds the grid's change to the "
            "particle's velocity (FLIP, little numerical viscosity, noisier), 0 takes the grid "
            "velocity (PIC, smooth and viscous); transfer flip only"},
    {.name = "cell_size", .type = K_NUMBER, .offset = OFF(mz_fluid, cell_size), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "m",
     .doc = "flip: pressure grid cell size, rounded on each axis so the domain is a whole "
            "number of cells; 0: 2 x spacing (2^dimensions particles per cell)"},
    {.name = "volume_correction", .type = K_NUMBER, .offset = OFF(mz_fluid, volume_correction),
     .def = "0.5", .flags = K_MIN | K_MAX, .min = 0, .max = 1,
     .doc = "flip: share of a cell's particle-density error (against the rest lattice's) "
            "undone per step by moving the particles apart (inside the fluid also together); "
            "the correction moves particles but never enters their velocities; 0: off"},
    {.name = "seeding", .type = K_ENUM, .offset = OFF(mz_fluid, seeding), .def = "\"auto\"",
     .names = mz_seeding_names,
     .doc = "where a box's particles start: lattice, at the centres of the box's cells of "
            "spacing; jittered, each at a random point of its cell (simulation.seed), so no "
            "lattice survives into the flow; auto: jittered for flip (its grid keeps a "
            "lattice's sheets and stripes through a whole run), lattice for the others (SPH "
            "and PBF calibrate their rest state on the lattice)"},
    {.name = "walls", .type = K_ENUM, .offset = OFF(mz_fluid, walls), .def = "\"free_slip\"",
     .names = mz_flip_walls_names,
     .doc = "flip and pbf: how walls hold the flow along them: free_slip, the flow runs on "
            "along them (only the velocity into a wall is stopped), no drag at all; no_slip, it "
            "falls to 0 on a wall, a boundary layer half a cell thick whose drag grows with the "
            "cell and which holds particles on the walls (flip only); wall_function, free slip "
            "plus the shear stress of a smooth wall by the log law from the fluid's viscosity, "
            "the same drag at any cell size or spacing (needs viscosity > 0)"},
    {.name = "support_radius", .type = K_NUMBER, .offset = OFF(mz_fluid, support_radius),
     .def = "0", .flags = K_MIN, .min = 0, .unit = "m",
     .doc = "SPH and PBF: kernel support radius h (neighbours within h); 0: 2 x spacing"},
    {.name = "speed_of_sound", .type = K_NUMBER, .offset = OFF(mz_fluid, speed_of_sound),
     .def = "0", .flags = K_MIN | K_MAX, .min = 0, .max = 1e5, .unit = "m/s",
     .doc = "SPH: numerical speed of sound c0 (Tait stiffness B = rest_density c0^2 / 7); 0: "
            "10 x the largest expected speed, sqrt(2 |g| height) or the initial speed"},
    {.name = "viscosity", .type = K_NUMBER, .offset = OFF(mz_fluid, viscosity), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "Pa s",
     .doc = "SPH: dynamic viscosity mu (viscosity-kernel Laplacian form); flip and pbf: the "
            "wall function's (walls: wall_function)"},
    {.name = "artificial_viscosity", .type = K_NUMBER,
     .offset = OFF(mz_fluid, artificial_viscosity), .def = "0", .flags = K_MIN, .min = 0,
     .doc = "SPH: Monaghan's artificial viscosity alpha (0.01 to 0.1 damps noise and shocks)"},
    {.name = "density_method", .type = K_ENUM, .offset = OFF(mz_fluid, density_method),
     .def = "\"summation\"", .names = mz_density_method_names,
     .doc = "SPH: summation: density summed over neighbours each step (a free surface reads "
            "low, so the water near it carries no pressure); continuity: density integrated "
            "from the continuity equation, starting at rest_density (hydrostatic pressure "
            "right up to the surface)"},
    {.name = "gradient_correction", .type = K_BOOL, .offset = OFF(mz_fluid, gradient_correction),
     .def = "false",
     .doc = "wcsph: correct the pressure force's kernel gradient per particle for the packing "
            "the particles settle into (Bonet & Lok 1999): a still tank's pressure within 0.5% "
            "of rho0 g depth, not 2.5% above; costs 10% of a GPU step, 16 (2D) or 32 (3D) bytes "
            "a particle"},
    {.name = "density_tolerance", .type = K_NUMBER, .offset = OFF(mz_fluid, density_tolerance),
     .def = "0.0005", .flags = K_MIN_GT | K_MAX, .min = 0, .max = 0.1,
     .doc = "dfsph: the constant-density solve iterates until the average compression it "
            "predicts for the end of the step is below this fraction of rest_density (0.0005: "
            "0.05%, as SPlisHSPlasH's default)"},
    {.name = "divergence_tolerance", .type = K_NUMBER,
     .offset = OFF(mz_fluid, divergence_tolerance), .def = "0.001", .flags = K_MIN_GT | K_MAX,
     .min = 0, .max = 0.1,
     .doc = "dfsph: the divergence-free solve iterates until the average density change a "
            "step would make from the velocity field, dt Drho/Dt, is below this fraction of "
            "rest_density"},
    {0}};
static const mz_schema fluid_schema = {"fluid", fluid_keys, sizeof(mz_fluid)};

static const mz_key sphere_keys[] = {
    {.name = "center", .type = K_VEC3, .offset = OFF(struct mz_sphere, center),
     .flags = K_REQUIRED, .unit = "m", .doc = "centre"},
    {.name = "radius", .type = K_NUMBER, .offset = OFF(struct mz_sphere, radius),
     .flags = K_REQUIRED | K_MIN_GT, .min = 0, .unit = "m", .doc = "radius"},
    {0}};
static const mz_schema sphere_schema = {"sphere", sphere_keys, sizeof(struct mz_sphere)};

static const mz_key plane_keys[] = {
    {.name = "point", .type = K_VEC3, .offset = OFF(struct mz_plane, point),
     .flags = K_REQUIRED, .unit = "m", .doc = "a point on the plane"},
    {.name = "normal", .type = K_VEC3, .offset = OFF(struct mz_plane, normal),
     .flags = K_REQUIRED, .doc = "direction out of the solid, into the fluid (any length)"},
    {0}};
static const mz_schema plane_schema = {"plane", plane_keys, sizeof(struct mz_plane)};

static const mz_key capsule_keys[] = {
    {.name = "a", .type = K_VEC3, .offset = OFF(struct mz_capsule, a), .flags = K_REQUIRED,
     .unit = "m", .doc = "one end of the axis"},
    {.name = "b", .type = K_VEC3, .offset = OFF(struct mz_capsule, b), .flags = K_REQUIRED,
     .unit = "m", .doc = "the other end of the axis"},
    {.name = "radius", .type = K_NUMBER, .offset = OFF(struct mz_capsule, radius),
     .flags = K_REQUIRED | K_MIN_GT, .min = 0, .unit = "m", .doc = "radius"},
    {0}};
static const mz_schema capsule_schema = {"capsule", capsule_keys, sizeof(struct mz_capsule)};


static const mz_key collider_keys[] = {
    {.name = "name", .type = K_STRING, .offset = OFF(mz_collider, name),
     .doc = "label for people reading the scene (messages name colliders by index)"},
    {.name = "sphere", .type = K_OBJECT, .offset = OFF(mz_collider, sphere),
     .sub = &sphere_schema, .aux_offset = OFF(mz_collider, has_sphere),
     .doc = "a solid sphere (a disc in 2D)"},
    {.name = "box", .type = K_OBJECT, .offset = OFF(mz_collider, box), .sub = &box_schema,
     .aux_offset = OFF(mz_collider, has_box), .doc = "a solid axis-aligned box"},
    {.name = "plane", .type = K_OBJECT, .offset = OFF(mz_collider, plane),
     .sub = &plane_schema, .aux_offset = OFF(mz_collider, has_plane),
     .doc = "the solid half-space behind a plane"},
    {.name = "capsule", .type = K_OBJECT, .offset = OFF(mz_collider, capsule),
     .sub = &capsule_schema, .aux_offset = OFF(mz_collider, has_capsule),
     .doc = "a solid capsule: the points within radius of the segment a-b"},
    {.name = "friction", .type = K_NUMBER, .offset = OFF(mz_collider, friction), .def = "0.3",
     .flags = K_MIN, .min = 0,
     .doc = "position-based: kinetic friction coefficient of contacts with this solid"},
    {.name = "static_friction", .type = K_NUMBER, .offset = OFF(mz_collider, static_friction),
     .def = "0.4", .flags = K_MIN, .min = 0,
     .doc = "position-based: static friction coefficient (a contact sticks while the sliding "
            "it would need is below static_friction x penetration)"},
    {.name = "forces", .type = K_OBJECT, .offset = OFF(mz_collider, forces),
     .sub = &load_schema, .aux_offset = OFF(mz_collider, has_forces),
     .doc = "measure the fluid's force and torque on this solid (needs a name): "
            "/observables/colliders/<name>/{force,torque}"},
    {.name = "motion", .type = K_OBJECT, .offset = OFF(mz_collider, motion),
     .sub = &motion_schema, .aux_offset = OFF(mz_collider, has_motion),
     .doc = "move the collider by a prescribed law (a piston, a paddle); needs a name: its "
            "displacement and angle per frame go to /observables/colliders/<name>"},
    {0}};
static const mz_schema collider_schema = {"collider", collider_keys, sizeof(mz_collider)};

static const mz_key grid_keys[] = {
    {.name = "origin", .type = K_VEC3, .offset = OFF(struct mz_cloth_grid, origin),
     .flags = K_REQUIRED, .unit = "m", .doc = "position of particle (0, 0), a corner"},
    {.name = "size", .type = K_VEC2, .offset = OFF(struct mz_cloth_grid, size),
     .flags = K_REQUIRED | K_MIN_GT, .min = 0, .unit = "m", .doc = "extent along u and v"},
    {.name = "resolution", .type = K_INT2, .offset = OFF(struct mz_cloth_grid, resolution),
     .flags = K_REQUIRED | K_MIN | K_MAX, .min = 2, .max = 16384,
     .doc = "particles along u and v"},
    {.name = "plane", .type = K_ENUM, .offset = OFF(struct mz_cloth_grid, plane),
     .def = "\"xz\"", .names = plane_names,
     .doc = "the axes u and v run along: xz (horizontal), xy or yz (vertical)"},
    {0}};
static const mz_schema grid_schema = {"grid", grid_keys, sizeof(struct mz_cloth_grid)};

/* Keys every position-based body has (cloths[] and meshes[]). */
#define BODY_KEYS                                                                             \
    {.name = "name", .type = K_STRING, .offset = OFF(mz_body, name),                          \
     .doc = "label for messages and the output file"},                                        \
    {.name = "pin_box", .type = K_OBJECT, .offset = OFF(mz_body, pin_box), .sub = &box_schema, \
     .aux_offset = OFF(mz_body, has_pin_box),                                                 \
     .doc = "particles starting inside this box are pinned (inverse mass 0: they never move)"}, \
    {.name = "mass", .type = K_NUMBER, .offset = OFF(mz_body, mass), .def = "1",              \
     .flags = K_MIN_GT, .min = 0, .unit = "kg",                                               \
     .doc = "total mass, shared equally by the particles"},                                   \
    {.name = "compliance", .type = K_NUMBER, .offset = OFF(mz_body, compliance), .def = "0",  \
     .flags = K_MIN, .min = 0, .unit = "m/N",                                                 \
     .doc = "XPBD compliance (inverse stiffness) of the stretch constraints; 0: as stiff as "  \
            "the iterations make it"},                                                        \
    {.name = "bending_compliance", .type = K_NUMBER, .offset = OFF(mz_body, bending_compliance), \
     .def = "0.1", .flags = K_MIN, .min = 0, .unit = "m/N",                                   \
     .doc = "cloth: XPBD compliance of the bending constraints (the distance across each "     \
            "pair of adjacent triangles)"},                                                   \
    {.name = "stiffness", .type = K_NUMBER, .offset = OFF(mz_body, stiffness), .def = "1",    \
     .flags = K_MIN_GT | K_MAX, .min = 0, .max = 1,                                           \
     .doc = "plain PBD stiffness k applied per iteration (below 1, the result depends on the " \
            "iteration count; prefer compliance)"},                                           \
    {.name = "thickness", .type = K_NUMBER, .offset = OFF(mz_body, thickness), .def = "0",    \
     .flags = K_MIN, .min = 0, .unit = "m",                                                   \
     .doc = "contact distance between two particles; 0: the grid spacing, the mean edge "      \
            "length (OBJ cloth) or the voxel spacing (softbody)"},                            \
    {.name = "self_collision", .type = K_BOOL, .offset = OFF(mz_body, self_collision),        \
     .def = "true", .doc = "whether the body's own particles collide with each other (pairs " \
                           "joined by a constraint never do)"},                                \
    {.name = "friction", .type = K_NUMBER, .offset = OFF(mz_body, friction), .def = "0.3",    \
     .flags = K_MIN, .min = 0, .doc = "kinetic friction coefficient of particle contacts"},   \
    {.name = "static_friction", .type = K_NUMBER, .offset = OFF(mz_body, static_friction),    \
     .def = "0.4", .flags = K_MIN, .min = 0,                                                  \
     .doc = "static friction coefficient of particle contacts (at least friction)"},          \
    {.name = "velocity", .type = K_VEC3, .offset = OFF(mz_body, velocity), .def = "[0, 0, 0]", \
     .unit = "m/s", .doc = "initial velocity of every particle"}

static const mz_key cloth_keys[] = {
    {.name = "grid", .type = K_OBJECT, .offset = OFF(mz_body, grid), .sub = &grid_schema,
     .flags = K_REQUIRED, .doc = "a rectangular grid of particles, triangulated"},
    {.name = "pinned", .type = K_FLAGS, .offset = OFF(mz_body, pins), .def = "[]",
     .names = pin_names,
     .doc = "named pins: corner_UV is particle (u, v) with 0 the first and 1 the last index; "
            "edge_u0 is every particle with u index 0, and so on"},
    BODY_KEYS,
    {0}};
static const mz_schema cloth_schema = {"cloth", cloth_keys, sizeof(mz_body)};

static const mz_key mesh_keys[] = {
    {.name = "obj", .type = K_STRING, .offset = OFF(mz_body, obj), .flags = K_REQUIRED,
     .doc = "Wavefront OBJ file (v and f lines), relative to the scene file"},
    {.name = "kind", .type = K_ENUM, .offset = OFF(mz_body, kind), .def = "\"cloth\"",
     .names = mesh_kind_names,
     .doc = "cloth: vertices become particles, edges stretch constraints; softbody: the closed "
            "mesh's inside is filled with a lattice of `spacing`, each point joined to its 26 "
            "neighbours"},
    {.name = "scale", .type = K_NUMBER, .offset = OFF(mz_body, scale), .def = "1",
     .flags = K_MIN_GT, .min = 0, .doc = "uniform scale, applied first"},
    {.name = "rotate", .type = K_VEC3, .offset = OFF(mz_body, rotate), .def = "[0, 0, 0]",
     .unit = "degrees", .doc = "rotation about x, then y, then z, applied after scaling"},
    {.name = "translate", .type = K_VEC3, .offset = OFF(mz_body, translate),
     .def = "[0, 0, 0]", .unit = "m", .doc = "translation, applied last"},
    {.name = "spacing", .type = K_NUMBER, .offset = OFF(mz_body, spacing), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "m", .doc = "softbody: lattice spacing (required)"},
    BODY_KEYS,
    {0}};
static const mz_schema mesh_schema = {"mesh", mesh_keys, sizeof(mz_body)};

static const mz_key rigid_keys[] = {
    {.name = "name", .type = K_STRING, .offset = OFF(mz_body, name),
     .doc = "label for messages and the output file"},
    {.name = "box", .type = K_OBJECT, .offset = OFF(mz_body, box), .sub = &box_schema,
     .aux_offset = OFF(mz_body, has_box), .doc = "a box of particles (cell centres of a "
                                                 "lattice of `spacing`), rotated by rotate"},
    {.name = "sphere", .type = K_OBJECT, .offset = OFF(mz_body, sphere), .sub = &sphere_schema,
     .aux_offset = OFF(mz_body, has_sphere),
     .doc = "the lattice points of `spacing` inside a sphere (a disc in 2D)"},
    {.name = "obj", .type = K_STRING, .offset = OFF(mz_body, obj),
     .doc = "or a closed Wavefront OBJ mesh, relative to the scene file, filled with a lattice "
            "of `spacing` (3D only)"},
    {.name = "scale", .type = K_NUMBER, .offset = OFF(mz_body, scale), .def = "1",
     .flags = K_MIN_GT, .min = 0, .doc = "obj: uniform scale, applied first"},
    {.name = "rotate", .type = K_VEC3, .offset = OFF(mz_body, rotate), .def = "[0, 0, 0]",
     .unit = "degrees",
     .doc = "rotation about x, then y, then z (box: about its centre; obj: after scaling; in 2D "
            "only z)"},
    {.name = "translate", .type = K_VEC3, .offset = OFF(mz_body, translate),
     .def = "[0, 0, 0]", .unit = "m", .doc = "obj: translation, applied last"},
    {.name = "spacing", .type = K_NUMBER, .offset = OFF(mz_body, spacing), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "m",
     .doc = "lattice spacing of the body's particles (their contact diameter); 0: "
            "fluids[0].spacing"},
    {.name = "density", .type = K_NUMBER, .offset = OFF(mz_body, density), .def = "1000",
     .flags = K_MIN_GT, .min = 0, .unit = "kg/m^3",
     .doc = "density: each particle weighs density x spacing^dimensions (mass overrides)"},
    {.name = "mass", .type = K_NUMBER, .offset = OFF(mz_body, mass), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "kg", .doc = "total mass; 0: from density"},
    {.name = "velocity", .type = K_VEC3, .offset = OFF(mz_body, velocity), .def = "[0, 0, 0]",
     .unit = "m/s", .doc = "initial velocity of the centre of mass"},
    {.name = "angular_velocity", .type = K_VEC3, .offset = OFF(mz_body, angular_velocity),
     .def = "[0, 0, 0]", .unit = "rad/s",
     .doc = "initial angular velocity about the centre of mass (in 2D only z)"},
    {.name = "friction", .type = K_NUMBER, .offset = OFF(mz_body, friction), .def = "0.3",
     .flags = K_MIN, .min = 0, .doc = "kinetic friction coefficient of particle contacts"},
    {.name = "static_friction", .type = K_NUMBER, .offset = OFF(mz_body, static_friction),
     .def = "0.4", .flags = K_MIN, .min = 0,
     .doc = "static friction coefficient of particle contacts (at least friction)"},
    {0}};
static const mz_schema rigid_schema = {"rigid", rigid_keys, sizeof(mz_body)};

static const mz_key probe_keys[] = {
    {.name = "name", .type = K_STRING, .offset = OFF(mz_probe, name), .flags = K_REQUIRED,
     .doc = "the probe's group in the output, /observables/probes/<name> (letters, digits, "
            "'_', '-' and '.')"},
    {.name = "position", .type = K_VEC3, .offset = OFF(mz_probe, position), .flags = K_REQUIRED,
     .unit = "m", .doc = "the point sampled (inside the domain)"},
    {.name = "fields", .type = K_FLAGS, .offset = OFF(mz_probe, fields), .def = "[]",
     .names = mz_probe_field_names,
     .doc = "what to sample: pressure, velocity, density (kernel interpolation over the fluid's "
            "particles, Shepard-normalised), fraction (1 in water, 0 in air or a solid; where it "
            "is below 0.05 the other fields read 0: no fluid); []: every field the solver has"},
    {.name = "rate", .type = K_NUMBER, .offset = OFF(mz_probe, rate), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "Hz",
     .doc = "samples a second, taken after the first step that reaches each multiple of "
            "1/rate; 0: after every step"},
    {0}};
static const mz_schema probe_schema = {"probe", probe_keys, sizeof(mz_probe)};

static const mz_key gauge_keys[] = {
    {.name = "name", .type = K_STRING, .offset = OFF(mz_gauge, name), .flags = K_REQUIRED,
     .doc = "the gauge's group in the output, /observables/gauges/<name>"},
    {.name = "start", .type = K_VEC3, .offset = OFF(mz_gauge, start), .flags = K_REQUIRED,
     .unit = "m", .doc = "where the gauge starts: on the floor, under the water (inside the "
                         "domain; a start in the air reads 0)"},
    {.name = "end", .type = K_VEC3, .offset = OFF(mz_gauge, end), .flags = K_REQUIRED,
     .unit = "m", .doc = "where it ends, above the highest water expected (inside the domain)"},
    {.name = "rate", .type = K_NUMBER, .offset = OFF(mz_gauge, rate), .def = "0",
     .flags = K_MIN, .min = 0, .unit = "Hz", .doc = "as probes[].rate"},
    {0}};
static const mz_schema gauge_schema = {"gauge", gauge_keys, sizeof(mz_gauge)};

static const mz_key output_keys[] = {
    {.name = "path", .type = K_STRING, .offset = OFF(mz_output, path),
     .doc = "HDF5 file to write, relative to the working directory (-o overrides; default: "
            "the scene's name with .h5)"},
    {.name = "every", .type = K_INT, .offset = OFF(mz_output, every), .def = "1",
     .flags = K_MIN, .min = 1, .doc = "write every N-th frame (frame 0 is always written)"},
    {.name = "fields", .type = K_FLAGS, .offset = OFF(mz_output, fields),
     .def = "[\"position\", \"velocity\"]", .names = mz_field_names,
     .doc = "per-particle fields to write (position is always written)"},
    {.name = "compression", .type = K_ENUM, .offset = OFF(mz_output, compression),
     .def = "\"none\"", .names = compression_names,
     .doc = "none, or gzip (deflate; smaller files, slower writes)"},
    {.name = "level", .type = K_INT, .offset = OFF(mz_output, level), .def = "4",
     .flags = K_MIN | K_MAX, .min = 1, .max = 9, .doc = "gzip level"},
    {0}};
static const mz_schema output_schema = {"output", output_keys, sizeof(mz_output)};

static const mz_key scene_keys[] = {
    {.name = "mizu_scene", .type = K_INT, .offset = OFF(mz_scene, version), .flags = K_REQUIRED,
     .doc = "scene format version: 1"},
    {.name = "description", .type = K_STRING, .offset = OFF(mz_scene, description),
     .doc = "free text for people: what the scene is, where its numbers come from"},
    {.name = "simulation", .type = K_OBJECT, .offset = OFF(mz_scene, sim),
     .sub = &simulation_schema, .doc = "time stepping and global forces"},
    {.name = "domain", .type = K_OBJECT, .offset = OFF(mz_scene, domain),
     .sub = &domain_schema, .flags = K_REQUIRED, .doc = "the simulation box and its walls"},
    {.name = "fluids", .type = K_LIST, .offset = OFF(mz_scene, fluids),
     .aux_offset = OFF(mz_scene, n_fluids), .sub = &fluid_schema,
     .doc = "particle blocks and lists, each run by one solver"},
    {.name = "colliders", .type = K_LIST, .offset = OFF(mz_scene, colliders),
     .aux_offset = OFF(mz_scene, n_colliders), .sub = &collider_schema,
     .doc = "static solids inside the domain (SPH with particles walls: sampled with boundary "
            "particles; position-based solvers: pushed out along the signed distance)"},
    {.name = "cloths", .type = K_LIST, .offset = OFF(mz_scene, cloths),
     .aux_offset = OFF(mz_scene, n_cloths), .sub = &cloth_schema,
     .doc = "position-based cloth sheets from a grid"},
    {.name = "meshes", .type = K_LIST, .offset = OFF(mz_scene, meshes),
     .aux_offset = OFF(mz_scene, n_meshes), .sub = &mesh_schema,
     .doc = "position-based bodies from OBJ meshes: cloth or softbody"},
    {.name = "rigids", .type = K_LIST, .offset = OFF(mz_scene, rigids),
     .aux_offset = OFF(mz_scene, n_rigids), .sub = &rigid_schema,
     .doc = "rigid bodies by shape matching: particles on a lattice inside a box, a sphere or "
            "a closed OBJ mesh"},
    {.name = "probes", .type = K_LIST, .offset = OFF(mz_scene, probes),
     .aux_offset = OFF(mz_scene, n_probes), .sub = &probe_schema,
     .doc = "points where the fluid's pressure, velocity and density are sampled, as often as "
            "every step: /observables/probes/<name>/<field>/{step,time,value}"},
    {.name = "gauges", .type = K_LIST, .offset = OFF(mz_scene, gauges),
     .aux_offset = OFF(mz_scene, n_gauges), .sub = &gauge_schema,
     .doc = "water-level gauges: the distance from start along the segment to where the fluid "
            "fraction (the walls counted as filled) first falls below 0.5, "
            "/observables/gauges/<name>/{step,time,value}"},
    {.name = "output", .type = K_OBJECT, .offset = OFF(mz_scene, output),
     .sub = &output_schema, .doc = "what is written, and where"},
    {0}};
const mz_schema mz_scene_schema = {"scene", scene_keys, sizeof(mz_scene)};
