/* What the neighbour grid's tests share (test_grid.c: queries; test_grid_build.c: the sort and
 * whole builds): a seeded random source, buffers to and from the device, and clouds of particles. */
#ifndef MZ_GRID_FIXTURE_H
#define MZ_GRID_FIXTURE_H
#include "test_util.h"
#include "test_world.h"

#include "device/cl_prog.h"
#include "device/grid.h"
#include "solvers/sim.h"

#include <math.h>

#define PI 3.14159265358979323846

/* xorshift64*: the same clouds on every run. */
static uint64_t rng = 88172645463325252ull;
static inline uint32_t rnd32(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}
static inline double rnd_unit(void) { return rnd32() / 4294967296.0; }
static inline double rnd_gauss(void)
{
    double u = rnd_unit() + 1e-12, v = rnd_unit();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static inline cl_mem upload(const void *data, size_t bytes)
{
    cl_mem m = mz_cl_buffer(&cl, CL_MEM_READ_WRITE, bytes, (void *)data, "test buffer");
    assert_non_null(m);
    return m;
}

static inline void download(cl_mem m, void *data, size_t bytes)
{
    assert_int_equal(clEnqueueReadBuffer(cl.queue, m, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
                     CL_SUCCESS);
}

static inline void write_buf(cl_mem m, const void *data, size_t bytes)
{
    assert_int_equal(clEnqueueWriteBuffer(cl.queue, m, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
                     CL_SUCCESS);
}

static inline uint32_t *iota(size_t n)
{
    uint32_t *v = malloc(4 * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    return v;
}


/* A cloud of particles and the grid it is queried in. */
typedef struct cloud {
    size_t n;
    int dim;
    double h, lo[3], hi[3];
    mz_grid_mode mode;
    float *pos; /* 4n: x, y, z, radius */
} cloud;

static inline cloud new_cloud(size_t n, int dim, double h, double lo, double hi, mz_grid_mode mode)
{
    cloud c = {n, dim, h, {lo, lo, dim == 3 ? lo : 0}, {hi, hi, dim == 3 ? hi : 0}, mode,
               calloc(4 * (n ? n : 1), sizeof(float))};
    return c;
}

static inline void set_pos(cloud *c, size_t i, double x, double y, double z)
{
    c->pos[4 * i] = (float)x;
    c->pos[4 * i + 1] = (float)y;
    c->pos[4 * i + 2] = c->dim == 3 ? (float)z : 0.0f;
    c->pos[4 * i + 3] = (float)(0.25 * c->h); /* a radius: must not count as a coordinate */
}


/* Uniform in the box, h giving about 30 neighbours. */
static inline cloud uniform(size_t n, int dim, double lo, double hi, mz_grid_mode mode)
{
    double side = hi - lo, volume = dim == 3 ? side * side * side : side * side;
    double per = 30.0 / (double)n * volume; /* volume holding 30 particles */
    double h = dim == 3 ? cbrt(per * 3.0 / (4.0 * PI)) : sqrt(per / PI);
    cloud c = new_cloud(n, dim, h, lo, hi, mode);
    for (size_t i = 0; i < n; i++)
        set_pos(&c, i, lo + side * rnd_unit(), lo + side * rnd_unit(), lo + side * rnd_unit());
    return c;
}

static const mz_grid_mode modes[] = {MZ_GRID_DENSE, MZ_GRID_HASHED};
static const char *const mode_names[] = {"dense", "hashed"};

#endif
