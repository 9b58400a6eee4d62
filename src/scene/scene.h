/* scene/: the JSON scene read, checked and described: key tables (keys.c) through a
 * table-driven reader (schema.c), --set overrides and syntax errors (parse.c), cross-key checks
 * (validate.c), what a scene implies (derived.c), counts without building (sizes.c), OBJ meshes
 * and position-based bodies (mesh.c, bodies.c), output field names (fields.c). May include:
 * util/. Nothing here knows OpenCL, HDF5 or the particle arrays.
 *
 * The scene as plain structs: what the JSON says, validated, defaults filled in, SI units, y up.
 * cJSON never leaks past scene/parse.c and scene/schema.c; solvers and builders read only these. */
#ifndef MZ_SCENE_H
#define MZ_SCENE_H
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MZ_SCENE_VERSION 1
/* The largest scene file read (explicit positions of ~10^6 particles fit). */
#define MZ_SCENE_MAX_BYTES ((size_t)256 << 20)

typedef enum mz_solver_kind {
    MZ_SOLVER_BALLISTIC,     /* gravity and the domain walls; particles do not see each other */
    MZ_SOLVER_WCSPH,         /* weakly compressible SPH: density pass, then forces */
    MZ_SOLVER_COLLAPSED_SPH, /* one neighbour pass: density now, forces from last step's */
    MZ_SOLVER_PBF,           /* position based fluids: a density constraint per particle */
    MZ_SOLVER_FLIP,          /* FLIP/PIC: particles carry velocity, a grid projects pressure */
    MZ_SOLVER_DFSPH,         /* divergence-free SPH: incompressible by two pressure solves */
    MZ_SOLVER_COUNT
} mz_solver_kind;

/* How SPH gets a particle's density: summed over its neighbours each step, or integrated from
 * the continuity equation (Dρ/Dt = Σ_j m (v_i − v_j)·∇W_ij), starting from the rest density. */
typedef enum mz_density_method { MZ_DENSITY_SUMMATION, MZ_DENSITY_CONTINUITY } mz_density_method;

/* FLIP: how the pressure Poisson equation is solved. */
typedef enum mz_pressure_solver {
    MZ_PRESSURE_RBGS,
    MZ_PRESSURE_JACOBI,
    MZ_PRESSURE_MGPCG
} mz_pressure_solver;

typedef enum mz_boundary_kind {
    MZ_BOUNDARY_PENALTY, /* spring-damper walls (stiffness, damping, acceleration limit) */
    MZ_BOUNDARY_CLAMP,   /* positions projected back inside, normal velocity removed */
    MZ_BOUNDARY_PARTICLES, /* SPH and PBF: the lattice continued into the walls (Adami et al.
                            * 2012; PBF counts them in its density, Akinci et al. 2012) */
    MZ_BOUNDARY_COUNT
} mz_boundary_kind;

typedef enum mz_compression { MZ_COMPRESSION_NONE, MZ_COMPRESSION_GZIP } mz_compression;

typedef struct mz_box {
    double min[3], max[3];
} mz_box;

typedef struct mz_points {
    double (*p)[3];
    size_t n;
} mz_points;

typedef struct mz_simulation {
    double fps;        /* output frames per simulated second */
    int frames;        /* set from duration when that is given */
    double duration;   /* simulated seconds; 0: frames decides */
    int substeps;      /* solver steps per frame */
    int iterations;    /* constraint iterations per substep (position-based solvers) */
    double gravity[3];
    int dimensions;    /* 2: z fixed at 0 */
    bool adaptive;     /* SPH: time step from CFL and force limits instead of substeps; pbf: more
                        * substeps where the water's depth needs them */
    double cfl;        /* λ in dt = λ·h / max(c, |v|max) */
    double damping;    /* position-based: velocity damping rate, 1/s */
    double relaxation; /* position-based: Jacobi over-relaxation ω */
    double max_speed;  /* blow-up bound, m/s; 0: automatic (sim_speed_bound) */
    int pressure_solver;       /* FLIP: mz_pressure_solver */
    int pressure_iterations;   /* FLIP: most sweeps per projection */
    double pressure_tolerance; /* FLIP: divergence left, relative to the largest before */
    int seed;                  /* jittered seeding's random numbers */
} mz_simulation;

/* SPH boundary particles: how the walls act along themselves (kernels/sph/sph_kernels.clh). */
typedef enum mz_wall_friction {
    MZ_FRICTION_NO_SLIP,       /* both viscosities against walls at rest */
    MZ_FRICTION_WALL_FUNCTION, /* a smooth wall's log-law shear stress, from the viscosity */
    MZ_FRICTION_FREE_SLIP      /* nothing along the wall */
} mz_wall_friction;

/* colliders[].forces and domain.boundary.forces: the fluid's force on a solid and its torque
 * about a point, sampled between steps (solvers/observe.h). */
typedef struct mz_load {
    double rate;     /* samples a second; 0: after every step */
    double about[3]; /* m; validation puts the solid's centre here when the scene gives none */
    bool has_about;
} mz_load;

/* colliders[].motion and domain.motion: a prescribed law s(t) that translates the solid by s
 * along `direction` or turns it by s (radians) about the line through `center` along `axis`.
 * s(t) is A r(t) sin(2π t / T + φ), r the ramp (1 − cos(π t / ramp)) / 2 over the first `ramp`
 * seconds, or a table of times and values through which a monotone cubic (Fritsch–Carlson, as
 * PCHIP) runs: s, ds/dt and d²s/dt² of one curve, no overshoot between rows. The scene's
 * geometry is the pose s = 0; validation checks that s(0) = 0. */
typedef enum mz_motion_kind { MZ_MOTION_TRANSLATION, MZ_MOTION_ROTATION } mz_motion_kind;
typedef struct mz_motion {
    int type; /* mz_motion_kind */
    double direction[3], center[3], axis[3];
    bool has_center;
    double amplitude; /* m, or degrees as given (validation keeps radians in `scale`) */
    double period, phase, ramp;
    char *table;      /* CSV file (relative to the scene's directory), or NULL */
    /* Filled by validation: the unit direction or axis, the table's rows, and the factor from
     * the given unit to SI (1 for metres, π/180 for degrees). */
    double unit[3];
    double *table_t, *table_v, *table_d; /* times, values, the cubic's slopes there */
    size_t table_n;
    uint64_t table_digest; /* of the file as read (util/digest.h), for --resume */
    double scale;
} mz_motion;
extern const char *const mz_motion_names[];
/* The law at t: s, ds/dt and d²s/dt² (SI: m or rad). */
void motion_eval(const mz_motion *m, double t, double out[3]);
/* A table's slopes at its rows into table_d (room for table_n), from its times and values. */
void motion_table_slopes(mz_motion *m);
/* Most colliders that move in one scene; and the poses the output records (theirs, and the
 * domain's). */
#define MZ_MAX_MOVING 16
#define MZ_MAX_POSES (MZ_MAX_MOVING + 1)

typedef struct mz_boundary {
    int type; /* mz_boundary_kind */
    bool has_forces;
    mz_load forces; /* on each wall of the domain */
    int friction; /* mz_wall_friction */
    double stiffness, damping, acceleration_limit;
} mz_boundary;

typedef struct mz_domain {
    double min[3], max[3];
    mz_boundary boundary;
    /* domain.motion: the whole domain (its walls and every collider in it) moves by this law;
     * the run is done in the domain's frame (solvers/frame.h), where it stands still. */
    bool has_motion;
    mz_motion motion;
} mz_domain;

typedef struct mz_fluid {
    char *name;
    int solver;          /* mz_solver_kind */
    bool has_box;
    mz_box box;          /* filled on a lattice of `spacing`, particles at cell centres */
    mz_points positions; /* or explicit particles */
    mz_points velocities;/* optional, one per position */
    double spacing, rest_density, mass;
    double velocity[3];
    /* SPH */
    double support_radius;       /* h; 0: 2 × spacing */
    double speed_of_sound;       /* c0; 0: 10 × the expected largest speed */
    double viscosity;            /* dynamic viscosity μ, Pa·s (viscosity-kernel Laplacian) */
    double artificial_viscosity; /* Monaghan's α */
    int density_method;          /* mz_density_method */
    bool gradient_correction;    /* WCSPH: the pressure force's kernel gradient corrected */
    /* DFSPH: the pressure solves stop below these (relative density error, average) */
    double density_tolerance;    /* of ρ* − ρ0, over ρ0 */
    double divergence_tolerance; /* of dt · Dρ/Dt, over ρ0 */
    /* PBF (support_radius as for SPH) */
    double relaxation_epsilon;   /* ε, relative to a full neighbourhood's Σ|∇C|² */
    double xsph_viscosity;       /* XSPH c */
    double vorticity;            /* vorticity confinement ε, m/s */
    double tensile_k, tensile_dq; /* s_corr: p = k ρ0 |g| h (W(r)/W(dq·h))^n, a force */
    double warm_start;           /* fraction of last substep's multipliers applied first */
    int tensile_n;
    /* FLIP */
    double flip_ratio;           /* 0: PIC, 1: FLIP (transfer flip only) */
    int transfer;                /* mz_flip_transfer: how velocities go to the grid and back */
    double cell_size;            /* grid cell; 0: 2 × spacing */
    double volume_correction;    /* share of a cell's excess density undone per step */
    int walls;                   /* mz_flip_walls: the grid velocity along the walls */
    int seeding;                 /* mz_seeding: where a box's particles start in their cells */
} mz_fluid;

/* A static solid; exactly one shape. SPH samples it with boundary particles; position-based
 * solvers push particles out along its signed distance, with friction. */
typedef struct mz_collider {
    char *name;
    bool has_sphere, has_box, has_plane, has_capsule;
    struct mz_sphere {
        double center[3], radius;
    } sphere;
    mz_box box;
    struct mz_plane {
        double point[3], normal[3]; /* normal points out of the solid, into the fluid */
    } plane;
    struct mz_capsule {
        double a[3], b[3], radius; /* the segment a–b, swept by a sphere */
    } capsule;
    double friction, static_friction; /* position-based contacts */
    bool has_forces;
    mz_load forces;
    bool has_motion;
    mz_motion motion;
} mz_collider;

/* The kind of body a particle belongs to (the `phase` output field). */
typedef enum mz_phase {
    MZ_PHASE_FLUID = 0,    /* fluids[] */
    MZ_PHASE_CLOTH = 1,    /* cloths[] and meshes[] of kind cloth */
    MZ_PHASE_SOFTBODY = 2, /* meshes[] of kind softbody */
    MZ_PHASE_RIGID = 3,    /* reserved for rigid bodies */
} mz_phase;

/* fluids[].walls (flip). */
typedef enum mz_flip_walls { MZ_WALLS_NO_SLIP, MZ_WALLS_FREE_SLIP, MZ_WALLS_WALL_FUNCTION }
    mz_flip_walls;
extern const char *const mz_flip_walls_names[];

/* Where a fluid box's particles start: at their lattice cells' centres, or at a random point
 * of each cell (from simulation.seed and the particle's id); auto: jittered for FLIP, whose
 * grid keeps a lattice's sheets for the whole run, the lattice for the others. */
typedef enum mz_seeding { MZ_SEEDING_AUTO, MZ_SEEDING_LATTICE, MZ_SEEDING_JITTERED } mz_seeding;
extern const char *const mz_seeding_names[];

/* fluids[].transfer (flip): FLIP/PIC blended by flip_ratio, or APIC (Jiang et al. 2015: each
 * particle carries its velocity's gradient; flip_ratio not used, so it must keep its default). */
typedef enum mz_flip_transfer { MZ_TRANSFER_FLIP, MZ_TRANSFER_APIC } mz_flip_transfer;
extern const char *const mz_flip_transfer_names[];
#define MZ_FLIP_RATIO_DEFAULT 0.95 /* keys.c's default of fluids[].flip_ratio */

typedef enum mz_cloth_plane { MZ_PLANE_XZ, MZ_PLANE_XY, MZ_PLANE_YZ } mz_cloth_plane;
typedef enum mz_mesh_kind { MZ_MESH_CLOTH, MZ_MESH_SOFTBODY } mz_mesh_kind;

/* Named pins of a cloth grid (bits of mz_body.pins): corner_UV and edge_u0 (all particles with
 * u index 0) ... */
enum {
    MZ_PIN_CORNER_00, MZ_PIN_CORNER_10, MZ_PIN_CORNER_01, MZ_PIN_CORNER_11,
    MZ_PIN_EDGE_U0, MZ_PIN_EDGE_U1, MZ_PIN_EDGE_V0, MZ_PIN_EDGE_V1, MZ_PIN_COUNT
};

struct mz_body_geom; /* built at load time (scene/bodies.h) */

/* A position-based body: cloths[] (a grid) and meshes[] (an OBJ file) share this. */
typedef struct mz_body {
    char *name;
    /* cloths[] */
    struct mz_cloth_grid {
        double origin[3]; /* the corner of particle (0, 0) */
        double size[2];   /* extent along u and v, m */
        int resolution[2];/* particles along u and v */
        int plane;        /* mz_cloth_plane: the axes u, v run along */
    } grid;
    unsigned pins;        /* MZ_PIN_* bits */
    /* meshes[] */
    char *obj;
    uint64_t obj_digest;  /* of the OBJ file as read (util/digest.h), for --resume */
    int kind;             /* mz_mesh_kind */
    double scale, rotate[3], translate[3];
    double spacing;       /* softbody: voxel lattice spacing */
    /* both */
    bool has_pin_box;
    mz_box pin_box;       /* particles starting inside are pinned */
    double mass;          /* total, kg */
    double compliance, bending_compliance; /* XPBD, m/N */
    double stiffness;     /* PBD k in (0, 1] */
    double thickness;     /* contact distance between particles, m; 0: from the geometry */
    bool self_collision;
    double friction, static_friction;
    double velocity[3];

    /* rigids[] (also obj, scale, rotate, translate, spacing, velocity, friction) */
    bool has_box, has_sphere;
    mz_box box;
    struct mz_sphere sphere;
    double density;             /* kg/m³ (0: from mass) */
    double angular_velocity[3]; /* rad/s, about the centre of mass */

    struct mz_body_geom *geom; /* particles and constraints, made when the scene loads */
} mz_body;

/* Signed distance from p to the collider's surface: negative inside the solid. */
double collider_distance(const mz_collider *c, const double p[3], int dimensions);

/* Most probes, and most gauges, a scene may have. */
#define MZ_MAX_OBSERVERS 4096

/* probes[]: a point sampled by kernel interpolation over the fluid's particles
 * (solvers/observe.h); the fields are MZ_PROBE_FIELD_BIT of scene/fields.h's probe fields. */
typedef struct mz_probe {
    char *name;
    double position[3];
    unsigned fields;
    double rate; /* samples a second; 0: after every step */
} mz_probe;

/* gauges[]: a water-level gauge along the segment start → end. */
typedef struct mz_gauge {
    char *name;
    double start[3], end[3];
    double rate;
} mz_gauge;

typedef struct mz_output {
    char *path;
    int every;        /* write every N-th frame */
    unsigned fields;  /* MZ_FIELD_BIT mask */
    int compression;  /* mz_compression */
    int level;        /* gzip level */
} mz_output;

typedef struct mz_scene {
    int version;
    char *description;
    mz_simulation sim;
    mz_domain domain;
    mz_fluid *fluids;
    size_t n_fluids;
    mz_collider *colliders;
    size_t n_colliders;
    mz_body *cloths, *meshes, *rigids;
    size_t n_cloths, n_meshes, n_rigids;
    mz_probe *probes;
    size_t n_probes;
    mz_gauge *gauges;
    size_t n_gauges;
    mz_output output;

    char *path;           /* as given on the command line */
    char *dir;            /* inputs named in the scene resolve against this */
    char *given_json;     /* the file's text, verbatim */
    char *effective_json; /* every key after --set and defaults, as mizu used it */
    char **overrides;     /* the --set arguments, in order */
    size_t n_overrides;
} mz_scene;

extern const char *const mz_solver_names[MZ_SOLVER_COUNT + 1];
extern const char *const mz_density_method_names[];
extern const char *const mz_wall_friction_names[];
extern const char *const mz_pressure_solver_names[];

/* The solver of the scene (every fluid shares it; the scene checks that). */
mz_solver_kind scene_solver(const mz_scene *s);
bool scene_is_sph(const mz_scene *s);
/* Whether the solver makes the walls and colliders boundary particles: domain.boundary.type
 * "particles" with an SPH solver or PBF. */
bool scene_boundary_particles(const mz_scene *s);
/* Whether fluid f's box starts jittered (fluids[].seeding, auto resolved by the solver). */
bool scene_fluid_jittered(const mz_scene *s, const mz_fluid *f);
/* The points a gauge samples: one every half of fluids[0].spacing from start to end (the
 * fraction is smooth over the support radius: linear between points that close). */
size_t scene_gauge_points(const mz_scene *s, const mz_gauge *g);
/* Its length, from start to end in the simulated axes. */
double scene_gauge_length(const mz_scene *s, const mz_gauge *g);
/* SPH: the support radius h and the speed of sound c0 the scene resolves to. */
double scene_support_radius(const mz_scene *s);
double scene_speed_of_sound(const mz_scene *s);
/* FLIP: the pressure grid: cells per axis (1 on an axis a 2D run does not simulate) and the
 * cell size on each, fluids[0].cell_size (or 2 × spacing) rounded so that the domain is a whole
 * number of cells. */
void scene_flip_grid(const mz_scene *s, int cells[3], double cell[3]);
/* SPH: the CFL number in force (simulation.cfl, or the solver's default). */
double scene_cfl(const mz_scene *s);
/* The fluids' initial depth: from their lowest to their highest point along gravity (a spacing
 * added for explicit positions); 0 without gravity or fluid. */
double scene_fluid_depth(const mz_scene *s);
/* PBF: the longest step a resting column keeps still, MZ_PBF_DEPTH_LIMIT h / sqrt(|g| H), H
 * the fluid's initial depth (from its lowest to its highest point along gravity, a spacing added
 * for explicit positions; *depth receives it when not NULL); infinite without gravity or for
 * other solvers. */
#define MZ_PBF_DEPTH_LIMIT 0.35
double scene_pbf_step_limit(const mz_scene *s, double *depth);
/* Steps a frame takes with fixed steps: simulation.substeps, or for PBF with
 * simulation.adaptive as many more as keep a step within scene_pbf_step_limit. */
int scene_steps_per_frame(const mz_scene *s);

/* The solids whose forces a run measures: colliders with `forces` (in scene order), then the
 * domain's walls when domain.boundary.forces is given (x_min, x_max, y_min, y_max, then in 3D
 * z_min, z_max). A boundary particle or solid element carries its owner: the wall's index
 * (MZ_WALL_X_MIN ..) or MZ_OWNER_COLLIDER + the collider's index. */
#define MZ_OWNER_COLLIDER 6
typedef struct mz_load_ref {
    const char *name; /* the collider's name or the wall's ("x_min", ...) */
    bool wall;
    int owner;
    const mz_load *load;
} mz_load_ref;
extern const char *const mz_wall_names[6];
/* How many, and the k-th. */
size_t scene_load_count(const mz_scene *s);
/* How many colliders move (colliders[].motion). */
size_t scene_moving_count(const mz_scene *s);
/* The laws whose poses the output records (/observables/colliders/<name>, /observables/domain):
 * the moving colliders' in order, then the domain's. The k-th, its slot (the collider's index,
 * n_colliders for the domain) into *slot. */
/* domain.motion over the run: the largest speed and acceleration it gives a point of the
 * domain (a turning one's at its diagonal's distance); 0 and 0 when it stands still. */
void scene_frame_extremes(const mz_scene *s, double *speed, double *accel);
size_t scene_pose_count(const mz_scene *s);
const mz_motion *scene_pose_law(const mz_scene *s, size_t k, size_t *slot);
/* Warns (mz_warn) of every table law that ends while the run goes on and still moving there:
 * it holds its last value after, stopped dead. */
void scene_motion_warnings(const mz_scene *s);
/* A file the scene names (meshes, motion tables), resolved against its directory (malloc'd). */
char *scene_input_path(const mz_scene *s, const char *file);
/* The files a run reads besides the scene, whose change a --resume refuses: the bodies' OBJ
 * meshes (in body order; 0 for bodies without one), then the motion tables (in collider order):
 * how many, the k-th's digest, and its name for messages. */
size_t scene_input_count(const mz_scene *s);
uint64_t scene_input_digest(const mz_scene *s, size_t k);
const char *scene_input_name(const mz_scene *s, size_t k, char buf[96]);
mz_load_ref scene_load_ref(const mz_scene *s, size_t k);

/* Read, override, validate. Returns 0, or -1 with every problem found in *diag (messages name
 * the JSON path: "fluids[0].spacing must be > 0 (got -0.01)"; syntax errors "line:column: ...")
 * and *scene left empty (freeing it again is harmless). */
int scene_load(const char *path, const char *const *overrides, size_t n_overrides,
               mz_scene *scene, mz_diag *diag);
/* Same from text in memory (tests); name is used for nothing but dir. */
int scene_load_text(const char *text, size_t len, const char *name,
                    const char *const *overrides, size_t n_overrides, mz_scene *scene,
                    mz_diag *diag);
void scene_free(mz_scene *scene);

/* Seconds of simulated time per frame and per substep (scene_steps_per_frame a frame). */
double scene_frame_dt(const mz_scene *s);
double scene_substep_dt(const mz_scene *s);

/* `mizu keys`: every key with type, default, bounds, unit and meaning. */
void scene_print_keys(FILE *out);
/* Every documented key path ("fluids[].spacing"), for the docs tests. NULL-terminated, static. */
const char *const *scene_key_paths(void);

#endif
