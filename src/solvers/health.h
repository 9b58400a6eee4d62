/* Blow-up detection: after each frame, on the device, the first particle (by id) whose position
 * or velocity is not finite or whose speed is beyond a physical bound. The check is queued
 * behind the frame and read one frame later, so it never stalls the device. */
#ifndef MZ_HEALTH_H
#define MZ_HEALTH_H
#include "solvers/sim.h"

typedef struct mz_health {
    double max_speed; /* m/s */
    cl_program program;
    cl_kernel scan, detail;
    cl_mem worst, out;
    cl_uint worst_host, out_host[8];
    cl_event done;
    bool pending;
    long frame, step; /* the frame the pending check looks at, and its step and time */
    double time;
} mz_health;

/* The speed bound of simulation.max_speed, or when it is 0: 10 × the largest of the free-fall
 * speed across the domain, the fastest initial particle speed (p: the built particles, with
 * rigid spin in their velocities), the SPH speed of sound, and 1 m/s. */
double health_speed_bound(const mz_scene *s, const mz_particles *p);

int health_init(mz_health *h, mz_sim *sim, double max_speed);
/* Queue the check of the state after `frame`. */
bool health_enqueue(mz_health *h, mz_sim *sim, long frame);
/* Wait for a queued check (none queued: 0). 0 healthy; -1 after reporting the particle, its
 * body, its state and the likely cause. */
int health_result(mz_health *h, const mz_sim *sim);
void health_release(mz_health *h);

#endif
