/* The position-based solver's parts (src/solvers/pbd/pbd.c runs the substep): shared state, the
 * fluid density constraints (src/solvers/pbd/fluid.c), the rigid bodies (src/solvers/pbd/rigid.c)
 * and distributed runs (src/solvers/pbd/pbf_dist.c, cloth_dist.c). */
#ifndef MZ_SOLVER_PBD_H
#define MZ_SOLVER_PBD_H
#include "device/grid.h"
#include "dist/slabs.h"
#include "solvers/boundary.h"
#include "solvers/colliders.h"
#include "solvers/pbd/loads.h"
#include "solvers/sim.h"

/* --profile rows, in the order they run. */
enum pbd_stage {
    STAGE_PREDICT, STAGE_GRID, STAGE_DENSITY, STAGE_DISTANCE, STAGE_CONTACTS, STAGE_COLLIDERS,
    STAGE_DOMAIN, STAGE_SHAPE, STAGE_UPDATE, STAGE_VISCOSITY
};

/* Layout of mz_pbf in kernels/pbd/pbf.cl. */
typedef struct pbf_params {
    cl_float h, h2, poly6, spiky, volume, rest_density, epsilon, p_corr, inv_w_dq;
    cl_int n_corr;
    cl_float xsph, vorticity, r_min, lattice, wall_nu, wall_layer;
} pbf_params;

typedef struct pbd_fluid {
    bool on;       /* the scene has PBF fluid */
    bool velocity; /* XSPH or vorticity confinement after the update */
    pbf_params P;
    cl_float warm_start;
    cl_float k_iter; /* s_corr's k_corr for each iteration's pbf_delta (m²), set per substep */
    double k_cap;    /* the largest k_iter (m²) */
    cl_program program;
    cl_kernel warm, solve, delta, curl, confine, sort_attr, sort_x, sort_v;
    cl_mem attr, attr_sorted, lambda, lambda_s, density, vs, omega, dv, walls, solid;
    cl_kernel attributes; /* a distributed rank's: attr from attr_table by body */
    cl_mem attr_table;
    /* domain.boundary.type "particles": the walls and colliders as boundary particles
     * (SPH's, solvers/boundary.h) in place of the walls' and colliders' tables */
    boundary_set bound;
    cl_int bparts;
} pbd_fluid;

/* A rank's rigid bodies (src/solvers/pbd/rigid_dist.c): every rigid particle's x* by id. */
typedef struct pbd_rigid_dist {
    cl_kernel place, velocity, to_ids, from_ids; /* over the window's slots */
    cl_mem x;         /* per rigid particle, by id: the x* shape matching reads */
    uint32_t *host;   /* its bytes, OR-ed over the ranks */
} pbd_rigid_dist;

typedef struct pbd_rigid {
    cl_uint nb, n, first; /* bodies, their particles, the first one's id */
    cl_program program;
    cl_kernel predict, place, match, update, velocity;
    cl_mem bodies, owner, r0;
    pbd_rigid_dist dist;
} pbd_rigid;

/* Cloth and soft bodies on a rank of a distributed run (src/solvers/pbd/cloth_dist.c): the
 * constraint tables stay by particle id, whole on every rank; what a rank adds to them. */
typedef struct pbd_cloth_dist {
    bool on;
    cl_kernel gather, map;
    cl_mem slot_of; /* per id: its slot in the window (stale entries fail the kernels' check) */
    cl_mem lambda;  /* per adjacency entry: each end's own copy of its constraint's λ */
    cl_mem out;     /* per slot: the gather's x* */
    cl_mem missing; /* 0, or the id + 1 of a partner the window lacked */
} pbd_cloth_dist;

/* A distributed run of the position-based solver (src/solvers/pbd/pbf_dist.c): the slabs, and
 * the buffers kept in the grid's order there, so that the kernels' slot map is the identity. */
typedef struct pbd_dist {
    bool on;
    mz_slabs slabs;
    cl_mem slot;       /* 0, 1, 2, ...: the kernels' slot argument */
    cl_mem keys, vals; /* the window's sort by id before each build */
    int id_bits;
    cl_kernel reach; /* pbd_reach: whether the owned particles' queries stay in the window */
    cl_mem far;      /* its answer: the smallest id of one that reached beyond, or ~0 */
    pbd_cloth_dist cloth;
} pbd_dist;

typedef struct pbd_state {
    cl_program program, cprogram;
    cl_kernel predict, domain, update;
    cl_kernel solve, apply, sort, collide, colliders;
    cl_uint nc, n_colliders;
    bool contacts;
    mz_grid grid;
    bool grid_made;
    cl_mem ends, params, lambda, corr, degree, adj_start, adj, adj_other, sorted, bodies, solids;
    pbd_fluid fluid;
    pbd_rigid rigid;
    pbd_loads loads; /* forces on walls and colliders, when the scene measures them */
    int mover_collider[MZ_MAX_MOVING]; /* colliders[].motion: the moving ones, in slot order */
    int n_movers;
    motion_now now; /* their laws at this substep's end (colliders and PBF's density) */
    pbd_dist dist;
} pbd_state;

/* Fluid: buffers and kernels (before the grid exists); the substep's s_corr share; the grid's
 * arguments after every build (its slot buffer moves); one density iteration; the velocity
 * passes after the update. */
int pbf_init(mz_sim *sim, pbd_state *st);
/* Device memory pbf_init makes for n particles of the scene, in bytes. */
size_t pbf_device_bytes(const mz_scene *s, size_t n);
/* After the neighbour grid exists: the boundary particles, when the scene's walls are particles
 * (their grid in the fluid grid's mode). 0, or -1 after reporting. */
int pbf_boundary_init(mz_sim *sim, pbd_state *st);
/* Before a substep's grid build: moving colliders' boundary particles placed at time t (the
 * substep's end, where the colliders kernel meets them). 0, or -1 after reporting. */
int pbf_boundary_move(mz_sim *sim, pbd_state *st, double t);
bool pbf_bind_grid(mz_sim *sim, pbd_state *st);
bool pbf_iterate(mz_sim *sim, pbd_state *st);
void pbf_substep(pbd_state *st, int iterations, double dt);
bool pbf_velocities(mz_sim *sim, pbd_state *st, float dt);
void pbf_release(pbd_fluid *f);

/* Rigid bodies: state and kernels; predicted poses and particles; one shape-matching
 * projection; velocities and momenta after the update. */
int rigid_init(mz_sim *sim, pbd_state *st);
/* Device memory rigid_init makes for the scene's rigid bodies, in bytes. */
size_t rigid_device_bytes(const mz_scene *s);
bool rigid_predict(mz_sim *sim, pbd_state *st, float dt, float keep, const mz_frame_arg *frame);
bool rigid_match(mz_sim *sim, pbd_state *st);
bool rigid_update(mz_sim *sim, pbd_state *st, float dt);
void rigid_release(mz_sim *sim, pbd_rigid *r);

/* Rigid bodies under mpirun (src/solvers/pbd/rigid_dist.c). rigid_dist_init: after
 * pbf_dist_init, the copy by id and the kernels by slot, rigid_match pointed at the copy.
 * rigid_dist_place and rigid_dist_velocity: the window's rigid particles from their bodies
 * (rigid_place and rigid_velocity by slot). rigid_dist_gather: before shape matching, every
 * rigid particle's x* from its owner into every rank's copy by id; rigid_dist_scatter: after
 * it, the matched x* into the window's slots. */
int rigid_dist_init(mz_sim *sim, pbd_state *st);
bool rigid_dist_place(mz_sim *sim, pbd_state *st);
bool rigid_dist_gather(mz_sim *sim, pbd_state *st);
bool rigid_dist_scatter(mz_sim *sim, pbd_state *st);
bool rigid_dist_velocity(mz_sim *sim, pbd_state *st);
void rigid_dist_release(pbd_rigid_dist *d);

/* Distributed PBF (src/solvers/pbd/pbf_dist.c). pbf_dist_init: after the grid and the fluid's
 * buffers exist, under mpirun: the buffers that travel registered, this rank's window kept,
 * the first build. pbf_dist_bind: the integration kernels' counts and buffers (they move with
 * every exchange and build). pbf_dist_exchange: before the grid build, the owned particles to
 * the windows of their predicted positions, then the window in id order (one process's order
 * within a cell). pbf_dist_share: the owned values of buf into the other windows' halo slots.
 * pbf_dist_bind_contacts: after every build, the contacts' buffers and the window's slots.
 * pbf_dist_launch_owned: a per-particle kernel on the owned particles only (their inverse
 * masses and bodies do not travel to the halo). pbf_dist_slot: the kernels' slot argument.
 * pbf_dist_reach: after every share of the predicted positions, whether each owned particle's
 * neighbour query at its position now stays within the window the last build filled;
 * pbf_dist_reach_check: once a substep, stops the run (after reporting, false) when one did not
 * (a particle moved further than the halo within the substep's iterations). */
int pbf_dist_init(mz_sim *sim, pbd_state *st);
bool pbf_dist_bind(mz_sim *sim, pbd_state *st);
bool pbf_dist_exchange(mz_sim *sim, pbd_state *st);
bool pbf_dist_share(mz_sim *sim, pbd_state *st, cl_mem buf, size_t elem);
bool pbf_dist_bind_contacts(mz_sim *sim, pbd_state *st);
bool pbf_dist_launch_owned(mz_sim *sim, pbd_state *st, cl_kernel k, int stage,
                           const char *name);
cl_mem pbf_dist_slot(const pbd_state *st);
bool pbf_dist_reach(mz_sim *sim, pbd_state *st);
bool pbf_dist_reach_check(mz_sim *sim, pbd_state *st);
void pbf_dist_release(mz_sim *sim, pbd_state *st);
void pbd_slab_geometry(const mz_scene *s, double *h, int *halo);
/* The cells of the solver's grid (pbd.c): 1.5 contact distances (PBF's spacing, the bodies'
 * thickness), the support radius when wider, 1.5 spacings of ballistic fluid alone. */
double pbd_cell_size(const mz_scene *s);

/* Distributed cloth and soft bodies (src/solvers/pbd/cloth_dist.c). cloth_dist_init: after
 * pbf_dist_init, the rank's buffers and kernels. cloth_dist_bind: after every build, the slot of
 * every window particle's id, and the gather's and contacts' arguments (the buffers moved).
 * cloth_dist_project: one sweep of the distance constraints on the owned particles (first: the
 * substep's first, λ from 0). cloth_dist_check: once a substep, whether every constraint found
 * its partner in the window (false after reporting). */
int cloth_dist_init(mz_sim *sim, pbd_state *st);
bool cloth_dist_bind(mz_sim *sim, pbd_state *st, float inv_dt2);
bool cloth_dist_project(mz_sim *sim, pbd_state *st, bool first);
bool cloth_dist_check(mz_sim *sim, pbd_state *st);
void cloth_dist_release(pbd_cloth_dist *c);

#endif
