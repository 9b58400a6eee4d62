/* The step's neighbour lists on the device (kernels/grid/neighbour_list.clh): written by a
 * solver's one grid walk of the step, read by its later passes. Shared by DFSPH (a dozen passes
 * a step) and WCSPH (its force pass). */
#ifndef MZ_SPH_NEIGHBOUR_LIST_H
#define MZ_SPH_NEIGHBOUR_LIST_H
#include "solvers/sim.h"

typedef struct sph_lists {
    cl_mem fluid, fluid_count; /* neighbour k of particle i at fluid[k · stride + i], or with
                                * rows at fluid[i · stride + k] (neighbour_list.clh) */
    cl_mem wall, wall_count;   /* the wall particles within h, likewise */
    cl_mem overflow;           /* the largest count over cap the last build met, then the most
                                * windows over `windows` a masked row needed */
    cl_uint cap;               /* entries a particle (the wall list's; the fluid's unless masked) */
    cl_uint windows;           /* the fluid list masked (a GPU's WCSPH): 64-slot windows a row of
                                * the walk; 0: entries like the walls' */
    cl_uint fluid_stride;      /* the fluid list's stride: `stride`, or a masked list's own */
    cl_uint particles;         /* the particle capacity */
    cl_uint stride;            /* the kernels' stride: the particle capacity, or with rows cap */
    bool rows;                 /* the device's layout (mz_cl.list_rows) */
    long grown;                /* builds that found the lists short */
    /* DFSPH: the fluid list's kernel gradients ∇W_ij, three planes (x, y, z) of the list's
     * shape, `plane` floats apart, made where `grads` asks and each build's buffer can be made
     * (else NULL: the kernels compute them as they go). */
    bool grads;
    cl_mem grad;
    cl_uint plane;
} sph_lists;

/* Entries a particle the lists start with: 1.5 × the lattice's neighbours within h, + 8, up to
 * a multiple of 8 (every cap is). */
cl_uint sph_lists_cap_first(const mz_scene *s);
/* Whether each of the two lists, at its first size times `room` (1.25: room to grow by a
 * quarter), is a buffer sim's device can make and the kernels can index (2^32 entries). */
bool sph_lists_buffers_fit(const mz_sim *sim, bool masked, double room);
/* Whether a run's fluid list is masked: on a device that masks (mz_cl.list_masks), where the
 * rows fit and the grid is dense (a hashed grid's walk goes cell by cell); for a run of n
 * particles, its grid described as a run makes it (mizu check). */
bool sph_lists_masked_on(const mz_scene *s, bool device_masks, bool hashed);
bool sph_lists_masked(const mz_scene *s, size_t n, bool device_masks);
/* Device bytes a particle the lists take at their first capacity, the fluid's masked or not;
 * the gradients' beside them. */
size_t sph_lists_bytes(const mz_scene *s, bool masked);
size_t sph_lists_grad_bytes(const mz_scene *s);
/* Whether the device has room for `bytes` more beside what the run needs (sim_device_bytes,
 * which the fit check counts): at most 80% of its memory in all. What decides WCSPH's lists and
 * DFSPH's gradients, which a run that fits without them is never refused for. */
bool sph_lists_room(const mz_sim *sim, double bytes);
/* The fluid list masked (sim's device chooses: mz_cl.list_masks) or not. 0, or -1 after
 * reporting. */
int sph_lists_init(sph_lists *l, mz_sim *sim, bool masked);
/* Room for cap entries a particle from now on, and a masked list's rows `windows` windows
 * (ignored for entry lists). 0, or -1 after reporting. */
int sph_lists_resize(sph_lists *l, mz_sim *sim, cl_uint cap, cl_uint windows);
/* Before a build: clears the overflow marks. After it: 1 when the lists were long enough, 0
 * when they were short and have been grown (build again), -1 after reporting. */
int sph_lists_before_build(sph_lists *l, mz_sim *sim);
int sph_lists_after_build(sph_lists *l, mz_sim *sim);
void sph_lists_release(sph_lists *l);

#endif
