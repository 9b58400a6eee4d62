/* The simulation on the device: common particle buffers, the solver that advances them, and
 * per-stage device times for --profile.
 *
 * Buffers hold particles in device order (the neighbour grid may reorder them); `id` maps each
 * slot back to its particle id, and readback writes output in id order. */
#ifndef MZ_SIM_H
#define MZ_SIM_H
#include "build.h"
#include "cl_ctx.h"
#include "fields.h"
#include "scene.h"

#define MZ_MAX_STAGES 16

typedef struct mz_sim mz_sim;

/* A solver family: its stage names (for --profile) and its three operations. */
typedef struct mz_solver {
    const char *name;
    const char *const *stages;    /* NULL-terminated, in the order they run */
    size_t extra_bytes_per_particle; /* device memory beyond the common buffers */
    int (*init)(mz_sim *sim);     /* programs, kernels, the solver's own buffers */
    int (*substep)(mz_sim *sim, double dt);
    void (*release)(mz_sim *sim);
} mz_solver;

typedef struct mz_stage_stat {
    double seconds;
    unsigned long launches;
} mz_stage_stat;

struct mz_sim {
    mz_cl *cl;
    const mz_scene *scene;
    const mz_solver *solver;
    void *state; /* the solver's own */
    size_t n;
    cl_uint n_u; /* n as a kernel argument */
    cl_mem pos, pred, vel, inv_mass, id, body;
    cl_mem field_buf[MZ_FIELD_COUNT]; /* where each output field lives on the device */
    long step;   /* substeps taken */
    double time; /* simulated seconds */

    mz_stage_stat stages[MZ_MAX_STAGES];
    cl_event *events; /* launches not yet timed (profiling only) */
    int *event_stage;
    size_t n_events, cap_events;
};

/* Device memory a scene needs (the common buffers and the solver's own), in bytes. */
size_t sim_device_bytes(const mz_scene *scene, size_t n);
const mz_solver *sim_solver_for(const mz_scene *scene);

/* Upload the particles and build the solver's kernels. 0, or -1 after reporting. */
int sim_create(mz_sim *sim, mz_cl *cl, const mz_scene *scene, const mz_particles *p);
int sim_substep(mz_sim *sim, double dt);
void sim_release(mz_sim *sim);

/* Launch a 1D kernel over n items, charged to a stage of the solver for --profile. */
bool sim_launch(mz_sim *sim, cl_kernel k, size_t n, int stage, const char *kernel_name);
/* Fold finished launches into the stage times (call after clFinish). */
void sim_collect_profile(mz_sim *sim);

/* Kernel arguments in one call: KARGS(kernel, "name", A(x), A(y), ...). */
typedef struct mz_karg {
    size_t size;
    const void *ptr;
} mz_karg;
#define A(x) ((mz_karg){sizeof(x), &(x)})
#define KARGS(k, name, ...) \
    set_kernel_args((k), (name), (const mz_karg[]){__VA_ARGS__}, \
                    sizeof((const mz_karg[]){__VA_ARGS__}) / sizeof(mz_karg))
bool set_kernel_args(cl_kernel k, const char *name, const mz_karg *args, size_t count);

/* The solvers. */
extern const mz_solver mz_solver_pbd;

#endif
