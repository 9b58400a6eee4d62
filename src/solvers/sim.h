/* solvers/: the simulation on the device. This header is the interface every solver family
 * implements (mz_solver) and the common buffers they share; sph/, pbd/ and flip/ each hold one
 * family, which includes this interface but never another family; health.c checks a run for
 * blow-ups. May include: build/, device/, scene/, util/.
 *
 * The simulation on the device: common particle buffers, the solver that advances them, and
 * per-stage device times for --profile.
 *
 * Buffers hold particles in device order (the neighbour grid may reorder them); `id` maps each
 * slot back to its particle id, and readback writes output in id order. */
#ifndef MZ_SIM_H
#define MZ_SIM_H
#include "build/build.h"
#include "device/cl_ctx.h"
#include "device/kargs.h"
#include "scene/fields.h"
#include "scene/scene.h"
#include "solvers/pace.h"

#include <stdio.h>

#define MZ_MAX_STAGES 16
/* The stage --profile charges probes, gauges and forces on solids to (solvers/observe.h, shown
 * as "observers"), after the solver's. */
#define MZ_STAGE_OBSERVE (MZ_MAX_STAGES - 1)

struct mz_slabs;
struct mz_grid;
struct mz_observers;

typedef struct mz_sim mz_sim;

/* One piece of the state a step reads before it writes it (beyond the common buffers, which
 * sim_state_parts lists): what a checkpoint saves and a resume restores, byte for byte, so
 * that a resumed run is bit-identical. A device buffer (mem) or host bytes (host). */
typedef struct mz_state_part {
    const char *name; /* the dataset name in the checkpoint: letters, digits, '_' */
    cl_mem *mem;      /* the variable holding the buffer (handles may be swapped), or NULL */
    void *host;       /* or host memory */
    size_t bytes;
    /* A buffer of one element per particle in device order: its bytes per particle (a
     * distributed rank saves and restores its owned stretch of it). 0 for anything else. */
    size_t elem;
} mz_state_part;

#define MZ_MAX_STATE_PARTS 48

/* Those of all[0..n) that exist (host bytes, or a buffer that was made) into parts[0..max):
 * how many. For the state callbacks, whose buffers depend on the scene. */
size_t sim_state_existing(const mz_state_part *all, size_t n, mz_state_part *parts, size_t max);

/* A solver family: its stage names (for --profile) and its operations. A solver advances by
 * fixed substeps (substep), or chooses its own steps within each frame (advance). */
typedef struct mz_solver {
    const char *name;
    const char *const *stages;    /* NULL-terminated, in the order they run */
    /* Device memory the solver needs for n particles of the scene beyond the common buffers
     * (its own per-particle buffers, grids, boundary particles, constraints), in bytes: the
     * most it holds at any time, and *held, what it holds once init is done (the observers,
     * made after it, add to that). */
    size_t (*device_bytes)(const mz_scene *scene, size_t n, size_t *held);
    int (*init)(mz_sim *sim);     /* programs, kernels, the solver's own buffers */
    int (*substep)(mz_sim *sim, double dt);        /* one step of dt, or NULL */
    int (*advance)(mz_sim *sim, double frame_dt);  /* a whole frame, or NULL */
    void (*release)(mz_sim *sim);
    /* The solver's own state parts into parts[0..max): how many. Everything a later step
     * reads that this step wrote (e.g. last step's density, multipliers for a warm start, a
     * time-step controller, buffers kept in the particles' device order). */
    size_t (*state)(mz_sim *sim, mz_state_part *parts, size_t max);
    /* Distributed runs (dist/slabs.h): the cell size of the grid init builds and the halo
     * layers a step reads beyond the owned ones; NULL when the solver does not run distributed. */
    void (*slab_geometry)(const mz_scene *scene, double *h, int *halo);
    /* Lines of its own for the run's summary (indented two spaces), or NULL. */
    void (*report)(const mz_sim *sim, FILE *out);
    /* One process keeps every per-particle buffer in id order (constraints name particles by
     * id as slots): a checkpoint a distributed run wrote, in the ranks' order, is put back in
     * id order when one process restores it. */
    bool id_order;
    /* A solver whose step starts by building sim->grid from the positions the last step left
     * (nothing moves them before), and calls sim_grid_built right after: the probes and
     * gauges due at a step's end are sampled then, on a grid of the positions sampled
     * (solvers/observe.h). grid_now gives that grid without a step, for a sample that cannot
     * wait (a checkpoint, the run's end): in one process indexed only (grid_index: nothing
     * moves, and the step's build orders the particles alike); a distributed rank exchanges
     * and builds as its step would, which then changes nothing (a stable sort of sorted keys).
     * NULL: samples are taken at once, on the step's own grid. */
    int (*grid_now)(mz_sim *sim);
    /* The largest single device buffer for n particles beyond a float4 a particle, in bytes,
     * and what it is (the fit check's refusal names it); NULL: none larger. */
    size_t (*largest_buffer)(const mz_scene *scene, size_t n, const char **what);
} mz_solver;

/* The domain walls as kernels take them (layout of mz_walls in kernels/common/walls.clh). */
typedef struct mz_walls_arg {
    cl_float4 min, max;
    cl_float stiffness, damping, accel_limit, pad;
} mz_walls_arg;

/* The domain's frame at a time, as kernels take it (mz_frame in kernels/common/frame.clh):
 * gravity less the frame's acceleration, in the frame's axes; the angular velocity and its
 * rate; a point on the axis. Without domain.motion, gravity and zeros. */
typedef struct mz_frame_arg {
    cl_float4 g, w, dw, centre;
} mz_frame_arg;

/* The forces on the scene's solids (scene_load_ref), for observe.c: in a step sim_loads_due
 * marks, the solver writes one force per element of a solid (a boundary particle) and where it
 * acts; load k's elements are first[k] .. first[k] + count[k] − 1 (cl_uint each). Or, with
 * `sums`, each load's force and torque itself, 6 floats a load. The solver makes them in init;
 * n 0 and no sums: it measures none. */
typedef struct mz_load_elems {
    size_t n;
    cl_mem at, force; /* float4 per element: position (m), the fluid's force on it (N) */
    cl_mem first, count;
    cl_mem sums;
} mz_load_elems;

typedef struct mz_stage_stat {
    double seconds;
    unsigned long launches;
} mz_stage_stat;

/* --profile's device time of one kernel in one stage; the first MZ_MAX_KERNEL_STATS kernels a
 * run launches are told apart, any later ones are charged to their stage only. */
#define MZ_MAX_KERNEL_STATS 64
typedef struct mz_kernel_stat {
    char name[40];
    int stage;
    mz_stage_stat t;
} mz_kernel_stat;

struct mz_sim {
    mz_cl *cl;
    const mz_scene *scene;
    const mz_solver *solver;
    void *state; /* the solver's own */
    size_t n;
    cl_uint n_u; /* n as a kernel argument */
    size_t cap;  /* particles the buffers have room for: n in one process */
    size_t n_total; /* particles of the whole run: n in one process */
    /* A distributed run (dist/slabs.h; NULL in one process): the slabs of the solver's grid.
     * Then n is this rank's window (owned particles and halo copies), which changes every
     * step; the owned ones are slots ring_begin[0] .. ring_end[0]. */
    struct mz_slabs *slabs;
    /* Under mpirun, for the solver's init: the plan this rank's share was built from; the
     * solver makes the slabs from it. NULL in one process. */
    const struct mz_slab_plan *plan;
    cl_mem pos, pred, vel, inv_mass, id, body;
    const mz_particles *parts; /* what sim_create uploaded: for the solver's init only */
    /* Rigid bodies (rigids[], in scene order; their body index in /particles/all/body is
     * n_fluids + n_cloths + n_meshes + k): per body two float4, the centre of mass (x, y, z, 0)
     * and the orientation quaternion (x, y, z, w) that rotates the body's rest offsets (taken
     * from the centre of mass at the start, world axes) into the world. Kept current by the
     * solver after every step; 0 and NULL when the scene has none. */
    size_t n_rigids;
    cl_mem rigid_pose;
    /* Where each output field lives: the variable holding its buffer handle, so that handles
     * swapped by the grid's reorder or a solver's double buffering are always followed. */
    cl_mem *field[MZ_FIELD_COUNT];
    long step;   /* solver steps taken */
    double time; /* simulated seconds */
    double dt_min, dt_max; /* range of the steps taken */
    /* How far into the frame in progress: steps and seconds (both 0 between frames). A run
     * stopped in the middle of a frame checkpoints them and goes on from there. */
    long frame_steps;
    double frame_time;
    mz_pace pace; /* pace.stop_requested: set to let a frame stop between two steps */
    /* The particle grid the solver built for its last step (cells at least its support
     * radius wide), for what samples the fluid between steps; NULL when it keeps none. With
     * grid_by_vals the grid sorts a copy and its vals map a sorted slot to the particle;
     * otherwise the particle buffers themselves are in the grid's order. */
    struct mz_grid *grid;
    bool grid_by_vals;
    /* The scene's probes and gauges (solvers/observe.h), sampled as steps are counted; NULL
     * when it has none. */
    struct mz_observers *obs;
    mz_load_elems loads;

    mz_stage_stat stages[MZ_MAX_STAGES];
    cl_event *events; /* launches not yet timed (profiling only) */
    int *event_stage, *event_kernel; /* event_kernel: into kernels, or -1 */
    size_t n_events, cap_events;
    mz_kernel_stat kernels[MZ_MAX_KERNEL_STATS];
    int n_kernels;
};

/* Device memory a scene needs (the common buffers and the solver's own), in bytes. */
size_t sim_device_bytes(const mz_scene *scene, size_t n);
const mz_solver *sim_solver_for(const mz_scene *scene);
/* Whether n particles of the scene fit the device (its memory and its largest buffer): 0, or
 * -1 after saying what is needed and what the device has. */
int sim_check_fits(const mz_cl *cl, const mz_scene *scene, size_t n);

/* Upload the particles and build the solver's kernels. 0, or -1 after reporting. */
int sim_create(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p);
/* Distributed (under mpirun): plan the slabs of the scene's solver (slabs_plan; plan->cap is
 * this rank's room, slabs_plan_build its share). 0, or -1 after reporting (also when the
 * solver does not run distributed). */
int sim_plan_slabs(const mz_scene *scene, struct mz_slab_plan *plan);
/* sim_create for this rank's share of the particles, buffers with room for plan->cap. */
int sim_create_share(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p,
                     const struct mz_slab_plan *plan);
/* One frame, or what is left of it: the solver's own steps, or simulation.substeps steps of
 * frame_dt / substeps. 0 when the frame is done; 1 when pace.stop_requested stopped it between
 * two steps (frame_steps and frame_time say where); -1 on failure, after reporting. */
int sim_advance_frame(mz_sim *sim, double frame_dt);
/* The fixed steps of a frame (simulation.substeps), from frame_steps on: as sim_advance_frame. */
int sim_fixed_steps(mz_sim *sim, double frame_dt);
/* After a step of an advance solver, inside a frame: whether to stop there (pace.h). */
bool sim_stop_here(mz_sim *sim);
/* Whether a frame's progress (frame_steps, frame_time, as a checkpoint restores them) is one
 * this scene's steps can reach: NULL, or what is wrong. */
const char *sim_check_progress(const mz_scene *scene, long frame_steps, double frame_time);
/* Adaptive solvers: whether any of the frame is left, and the step to take when `want` is the
 * one the solver chose: want, never past the frame's end, and half of what is left when a full
 * step would leave a sliver under a quarter step behind. */
bool sim_frame_left(const mz_sim *sim, double frame_dt);
double sim_frame_step(const mz_sim *sim, double frame_dt, double want);
/* One step of dt (solvers with fixed substeps; tests). */
int sim_substep(mz_sim *sim, double dt);
/* Whether a step of dt from sim->time ends where a force on a solid is due (the solver then
 * fills sim->loads in it). */
bool sim_loads_due(const mz_sim *sim, double dt);
/* Count a step a solver took (advance solvers call it), in the run and in the frame, and
 * sample the probes and gauges that are due (or mark them, mz_solver.grid_now). */
void sim_count_step(mz_sim *sim, double dt);
/* A grid_now solver's step has built its grid: the samples marked at the last step's end are
 * taken now. */
void sim_grid_built(mz_sim *sim);

mz_walls_arg sim_walls(const mz_scene *scene);
/* The domain's frame at time t (solvers/frame.c); whether it turns (kernels are then built
 * with MZ_SPIN, for the terms of a turning frame). */
mz_frame_arg sim_frame(const mz_scene *scene, double t);
bool sim_frame_spins(const mz_scene *scene);
cl_float4 sim_float4(const double v[3]);
void sim_release(mz_sim *sim);

/* The slots of the particles this rank owns (all of them in one process), and of those plus
 * `ring` halo layers on either side. */
void sim_owned(const mz_sim *sim, size_t *begin, size_t *end);
void sim_ring(const mz_sim *sim, int ring, size_t *begin, size_t *end);
/* n changed (a distributed run's exchange). */
void sim_set_count(mz_sim *sim, size_t n);

/* Launch a 1D kernel over n items, charged to a stage of the solver for --profile. */
bool sim_launch(mz_sim *sim, cl_kernel k, size_t n, int stage, const char *kernel_name);
/* Over slots begin .. end − 1 (a global offset; the kernel's count argument must be end). */
bool sim_launch_range(mz_sim *sim, cl_kernel k, size_t begin, size_t end, int stage,
                      const char *kernel_name);
/* With an explicit global offset and size and work-group size (kernels that use local
 * memory). */
bool sim_launch_local(mz_sim *sim, cl_kernel k, size_t offset, size_t global, size_t local,
                      int stage, const char *kernel_name);
/* --profile: a grid build keeps its own events; wait for them and charge its device time to a
 * stage. Nothing without profiling. */
struct mz_grid;
void sim_profile_grid(mz_sim *sim, struct mz_grid *g, int stage);
/* Fold finished launches into the stage times (call after clFinish). */
void sim_collect_profile(mz_sim *sim);

/* Whether the kernels sim builds are a distributed rank's (-DMZ_SLABS=1: its grid a window of
 * layers; the CPU lanes off). */
bool sim_kernels_slabs(const mz_sim *sim);
/* Build a solver's kernel file for the scene (-DMZ_DIM) and look up its kernels: names[i] into
 * *out[i], names NULL-terminated. The program, or NULL after reporting. */
cl_program sim_build_kernels(mz_sim *sim, const char *file, const char *const *names,
                             cl_kernel *const *out);
/* The same, asking for correctly rounded division and square root (mz_cl.exact_divide): DFSPH,
 * whose resting tank is sensitive to the last bits (docs/ARCHITECTURE.md). */
cl_program sim_build_exact_kernels(mz_sim *sim, const char *file, const char *const *names,
                                   cl_kernel *const *out);

/* The solvers. */
extern const mz_solver mz_solver_pbd;
extern const mz_solver mz_solver_sph;
extern const mz_solver mz_solver_flip;
extern const mz_solver mz_solver_dfsph;

#endif
