/* The adaptive SPH solvers' |v|max and |a|max (kernels/sph/step_size.clh: speed_accel_max),
 * shared by sph.c and dfsph.c. */
#ifndef MZ_SPH_STEP_SIZE_H
#define MZ_SPH_STEP_SIZE_H
#include "solvers/sim.h"

typedef struct sph_step_size {
    size_t local;      /* work-group size: a power of two the device takes */
    size_t max_groups; /* a fixed number of groups, each reducing a strided share */
    cl_mem partial;    /* per group (|v|²max, |a|²max) */
    float *host;
} sph_step_size;

/* The work-group size on a CPU (a GPU's is larger): the most groups a pass over n takes. */
#define SPH_STEP_SIZE_CPU_LOCAL 64

/* 0, or -1 after reporting. */
int sph_step_size_init(sph_step_size *s, mz_sim *sim);
/* Device memory sph_step_size_init makes on a GPU (a CPU's is less), for the fit check. */
size_t sph_step_size_bytes(void);
/* The largest |v|² of vel and a2 of slots begin .. end − 1 (+inf where not finite), by kernel
 * k (speed_accel_max of the solver's program), charged to `stage`. 0, or -1 after reporting. */
int sph_speed_accel_max(sph_step_size *s, mz_sim *sim, cl_kernel k, cl_mem vel, cl_mem a2,
                        size_t begin, size_t end, int stage, float *v2_max, float *a2_max);
void sph_step_size_release(sph_step_size *s);

#endif
