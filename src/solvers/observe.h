/* Probes, gauges and forces (the scene's probes[], gauges[], colliders[].forces and
 * domain.boundary.forces): the fluid sampled at points and the forces on solids summed between
 * steps, on the device, as often as every step, and read back in batches.
 *
 * After each step (sim_count_step) the observers that are due sample the state just reached,
 * writing a row of a device buffer of sample rows; the rows are read back when the buffer is
 * full and when the run asks (observe_flush once a frame, without waiting: they land at the
 * next flush, long done by then; observe_collect, waiting, at a checkpoint or the end).
 *
 * Probes and gauges sum the particles near their points on the solver's grid. With a solver
 * that builds its next step's grid from the positions the step ends with (mz_solver.grid_now:
 * WCSPH, collapsed SPH, DFSPH), the sums wait for that build (sim_grid_built), where each point
 * searches the 3 × 3 × 3 cells around it, and one launch does a sample's sums and the levels
 * of the gauges of the sample before (probe_near in kernels/grid/probes.cl; the last sample's
 * levels, launched at the flush that reads it). The values are those of the step's end: the
 * build only reorders the particles, the buffers it does not move (last step's densities and
 * pressures) are read through its map. A sample that cannot wait for a step is given the grid
 * at once (grid_now: a checkpoint, the run's end), the same particles in the same order. Other
 * solvers (PBF builds on predicted positions, FLIP) are sampled at once, on the grid of the
 * step just taken, which the particles left by up to a cell: 5 × 5 × 5 cells a point, and a
 * second launch for the gauges' levels.
 *
 * A row holds, for each probe, its
 * fluid fraction, pressure, density and velocity (6 floats), then each gauge's level (1), then
 * each load's force and torque (6: the sums of the elements the solver filled in the step,
 * sim->loads, one work-group per load with a fixed reduction tree), then each moving
 * collider's pose (3: its displacement, or its angle and two zeros), which the host computes from
 * the law and a launch copies into the row (the values travel as a kernel argument). A moving
 * collider's pose is due with its forces when they are measured, else once a frame.
 *
 * When: an observer of rate r is due after a step that ends at or past a multiple of 1/r it
 * had not reached before (k = floor(t r) grew); rate 0, after every step. The rule depends on
 * the steps' times only, so a resumed run samples where an uninterrupted one does. The state
 * at t = 0 is not sampled. */
#ifndef MZ_OBSERVE_H
#define MZ_OBSERVE_H
#include "solvers/sim.h"

/* Samples read back, in the order taken: row k holds sample k of every observer; due[k × m +
 * o] says whether observer o (probes first, then gauges, loads, moving colliders; m of them) was due then (those that
 * were not hold a value the output skips). */
typedef struct mz_samples {
    size_t count, cap;
    long *step;
    double *time;
    unsigned char *due;
    float *rows;
} mz_samples;

typedef struct mz_observers {
    size_t n_probes, n_gauges, n_loads, n_motion;
    size_t row;         /* floats a sample row holds: 6 per probe, 1 per gauge, 6 per load, 3 per
                         * moving collider */
    double *rate;       /* per observer */
    unsigned char *due_now; /* per observer: due after the step observe_step looks at */
    cl_program program;
    cl_kernel k_sums, k_near, k_level, k_loads, k_motion;
    cl_mem about;       /* per load, the point its torque is taken about (float4) */
    cl_mem points;      /* the probes, then the gauges' points */
    /* the gauges' points' sums (two samples' worth: one launch writes a sample's while it
     * reads the sample before's for the levels), ... */
    cl_mem gauge_sums, gauge_first, gauge_count, gauge_ds;
    cl_mem wall_table;  /* the walls' share of a kernel by distance (gauge_level) */
    cl_float4 lo, hi;   /* the domain */
    size_t n_gauge_pts;
    float kh, inv_rest; /* interpolation radius; 1 / the weights' sum on the rest lattice */
    cl_uint fluid_bodies;
    cl_mem rows;        /* device sample rows */
    size_t cap_rows;    /* rows it holds */
    size_t used;        /* rows written since the last read-back began */
    /* Samples taken, not yet handed on: the first on_host have their rows; the next staged
     * are on their way into stage (pinned, behind the event staged_done); the last `used` are
     * still in the device's rows. */
    mz_samples taken;
    size_t on_host, staged;
    float *stage;
    cl_mem stage_pin;
    cl_event staged_done;
    struct mz_obs_dist *dist; /* under mpirun: the samples' assembly (observe_dist.h) */
    /* The solver has grid_now (sim.h): probes and gauges wait for the next grid build. */
    bool deferred;
    struct {
        bool on, probes, gauges;
        size_t slot; /* its device row (the last one used) */
    } waiting; /* the sample whose probes and gauges wait for the next build */
    struct {
        bool on;
        size_t slot;
        cl_uint sums; /* where its points' sums are in gauge_sums (points, not bytes) */
    } levels; /* the sample whose gauges' levels wait for the next launch (one process) */
    long samples;       /* taken in this process (the run's summary) */
    bool failed;        /* a launch or a read-back failed (reported); observe_collect says so */
} mz_observers;

/* The scene's probes and gauges for sim (whose solver has built its grid: sim->grid). 0, or -1
 * after reporting. sim_create calls it; NULL sim->obs when the scene has none. */
int observe_create(mz_observers *o, mz_sim *sim);
/* Device memory observe_create makes for the scene's observers (one process), in bytes: 0 when
 * it has none. For the fit check (sim_device_bytes). */
size_t observe_device_bytes(const mz_scene *s);
/* Whether a load (a force on a solid) is due after a step from t0 to t1. */
bool observe_loads_due(const mz_observers *o, double t0, double t1);
/* After a step from t0 to sim->time: sample what is due (probes and gauges, with a grid_now
 * solver, after the next build). */
void observe_step(mz_observers *o, mz_sim *sim, double t0);
/* After a grid_now solver's build (sim_grid_built): the waiting probes and gauges sampled. */
void observe_after_build(mz_observers *o, mz_sim *sim);
/* Start reading back the samples taken so far, without waiting (those of the read-back before
 * land first). 0, or -1 after a failure (reported). */
int observe_flush(mz_observers *o, mz_sim *sim);
/* Every sample taken so far read back into o->taken (waits). 0, or -1 after a failure. */
int observe_collect(mz_observers *o, mz_sim *sim);
/* How many of the samples in o->taken, from the first, are of steps up to `step` and have
 * their rows on the host. */
size_t observe_upto(const mz_observers *o, long step);
/* Forget the samples in o->taken up to and including step `step` (handed on; only those whose
 * rows are on the host). */
void observe_forget(mz_observers *o, long step);
/* Move the samples of o->taken up to and including step `step` whose rows are on the host to
 * the end of *dst. */
void observe_take(mz_observers *o, long step, mz_samples *dst);
/* Free a batch's arrays (what observe_take filled). */
void observe_samples_free(mz_samples *t);
void observe_release(mz_observers *o, mz_cl *cl);

#endif
