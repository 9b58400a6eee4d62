/* Neighbour-grid speed (`make bench`; not a test): full rebuilds (keys, sort, ranges, and the
 * reorder of the six particle buffers a solver registers) and one neighbour-counting pass, for
 * uniform random particles with about 30 neighbours each.
 *
 * Device: $MIZU_DEVICE, else the first GPU, else the first CPU. Sizes 10^4 .. 10^6, and 10^7 on
 * a GPU; BENCH_GRID_MAX=N changes the largest. Each figure is the median of REPS runs after two
 * warm-up builds, by wall clock (enqueue to clFinish) and by the summed device times of the
 * launches (OpenCL profiling events).
 *
 * "build" rebuilds buffers already in grid order, as every build after the first in a running
 * simulation does (particles move little between builds); "shuffled" first restores the random
 * initial order (untimed), so the sort's scatter and the gathers touch memory at random. Both
 * sort every key (MIZU_GRID_RESORT=0's build). The step's line: particles moved by
 * BENCH_GRID_MOVE cells (0.02 unless set) in random directions, then built by the full sort and
 * by the resort (grid_resort.c), alternately. */
#include "device/cl_prog.h"
#include "device/grid.h"
#include "solvers/sim.h"
#include "util/err.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 7
#define PI 3.14159265358979323846

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd_unit(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* Device time per kernel name, summed over the timed builds. */
typedef struct kernel_time {
    const char *name;
    double ms;
    int launches;
} kernel_time;
#define MAX_KT 24
typedef struct kernel_times {
    kernel_time k[MAX_KT];
    int n;
} kernel_times;
static kernel_times full_kt, resort_kt; /* the full builds', the step's resorts' */

static double event_ms(cl_event e)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return 0.0;
    return (double)(t1 - t0) * 1e-6;
}

static void add_kernel_times(const mz_grid *g, kernel_times *t)
{
    for (size_t i = 0; i < g->n_events; i++) {
        int k = 0;
        while (k < t->n && strcmp(t->k[k].name, g->event_kernels[i]))
            k++;
        if (k == t->n && t->n < MAX_KT)
            t->k[t->n++] = (kernel_time){g->event_kernels[i], 0.0, 0};
        if (k < t->n) {
            t->k[k].ms += event_ms(g->events[i]);
            t->k[k].launches++;
        }
    }
}

static void print_kernel_times(const kernel_times *t, int builds)
{
    printf("          ");
    for (int k = 0; k < t->n; k++)
        printf(" %s %.3f%s", t->k[k].name, t->k[k].ms / builds, k + 1 < t->n ? "," : "\n");
}

/* Bytes a build reads and writes in global memory (each buffer access counted once; the
 * histograms, a few KB, left out). */
static double build_bytes(const mz_grid *g)
{
    double n = (double)g->n, used = fmin((double)g->n, (double)g->cells);
    double w = (double)g->words, used_w = fmin(n, w);
    double b = 16 * n + 8 * n;                                     /* cell_keys */
    b += g->words <= g->n ? 8.0 * w : 4 * n + 8 * used_w;          /* emptying the words */
    int passes = (g->key_bits + g->radix_bits - 1) / g->radix_bits;
    b += passes * (4 * n + (12 * n + 8 * n)); /* radix_count; radix_scatter reads keys twice */
    /* (an odd pass count costs no copy: the grid's own buffers trade handles) */
    /* cell_marks (keys, words), word_sums and word_bases (words twice, bases written),
     * cell_firsts (keys, a word each, a first slot per cell) */
    b += (4 * n + 8 * used_w) + (8 * w + 12 * w) + (4 * n + 8 * n + 4 * used);
    for (int r = 0; r < g->n_reg; r++)
        b += 4 * n + 2 * (double)g->reg[r].elem * n; /* gather: index, read, write */
    return b;
}

typedef struct bufs {
    cl_mem pos, vel, pred, id, body, inv_mass;
} bufs;

static int bench(mz_cl *cl, size_t n, double move)
{
    /* Unit cube; 30 neighbours = n · (4/3)π h³. */
    double h = cbrt(30.0 * 3.0 / (4.0 * PI * (double)n)), lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    float *pos = malloc(16 * n), *vel = malloc(16 * n), *inv_mass = malloc(4 * n);
    uint32_t *id = malloc(4 * n), *body = malloc(4 * n);
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            pos[4 * i + a] = (float)rnd_unit();
            vel[4 * i + a] = (float)(rnd_unit() - 0.5);
        }
        pos[4 * i + 3] = (float)(0.25 * h);
        vel[4 * i + 3] = 0.0f;
        inv_mass[i] = 1.0f;
        id[i] = (uint32_t)i;
        body[i] = (uint32_t)(i % 7);
    }
    mz_grid g;
    if (grid_create(&g, cl, n, h, 3, lo, hi, MZ_GRID_AUTO) != 0)
        return -1;
    g.resort_mode = 0; /* full rebuilds, but in the step's rows */
    bufs b;
    cl_mem *handles[] = {&b.pos, &b.vel, &b.pred, &b.id, &b.body, &b.inv_mass};
    const void *data[] = {pos, vel, pos, id, body, inv_mass};
    size_t elem[] = {16, 16, 16, 4, 4, 4};
    for (int r = 0; r < 6; r++) {
        *handles[r] = mz_cl_buffer(cl, CL_MEM_READ_WRITE, elem[r] * n, (void *)data[r], "bench");
        if (!*handles[r] || grid_register(&g, handles[r], elem[r]) != 0)
            return -1;
    }
    cl_kernel count = cl_prog_kernel(g.program, "count_neighbours");
    cl_mem counts = mz_cl_buffer(cl, CL_MEM_READ_WRITE, 4 * n, NULL, "bench counts");
    if (!count || !counts)
        return -1;

    double wall[REPS], dev[REPS], cold[REPS], cwall[REPS], cdev[REPS];
    for (int w = 0; w < 2; w++)
        if (grid_build(&g, b.pred) != 0 || !cl_ok(clFinish(cl->queue), "clFinish"))
            return -1;
    grid_collect_profile(&g);
    full_kt.n = resort_kt.n = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ms();
        if (grid_build(&g, b.pred) != 0 || !cl_ok(clFinish(cl->queue), "clFinish"))
            return -1;
        wall[r] = now_ms() - t0;
        add_kernel_times(&g, &full_kt);
        grid_collect_profile(&g);
        dev[r] = g.last_build_ms;
    }
    for (int r = 0; r < REPS; r++) {
        for (int k = 0; k < 6; k++)
            if (!cl_ok(clEnqueueWriteBuffer(cl->queue, *handles[k], CL_TRUE, 0, elem[k] * n,
                                            data[k], 0, NULL, NULL),
                       "clEnqueueWriteBuffer"))
                return -1;
        double t0 = now_ms();
        if (grid_build(&g, b.pred) != 0 || !cl_ok(clFinish(cl->queue), "clFinish"))
            return -1;
        cold[r] = now_ms() - t0;
        grid_collect_profile(&g);
    }
    /* A step's builds: every particle moved by move · h in a random direction (in the grid
     * order the last build left, untimed), then built by the full sort and by the resort in
     * turn, each from its own displacement. */
    double step[2][REPS], moved = 0.0;
    float *p = malloc(16 * n);
    for (int r = 0; r < 2 * REPS; r++) {
        if (!cl_ok(clEnqueueReadBuffer(cl->queue, b.pred, CL_TRUE, 0, 16 * n, p, 0, NULL, NULL),
                   "clEnqueueReadBuffer"))
            return -1;
        for (size_t i = 0; i < n; i++) {
            double u = 2.0 * rnd_unit() - 1.0, phi = 2.0 * PI * rnd_unit(), s = sqrt(1 - u * u);
            double d[3] = {s * cos(phi), s * sin(phi), u};
            for (int a = 0; a < 3; a++)
                p[4 * i + a] = (float)fmin(1.0, fmax(0.0, p[4 * i + a] + move * h * d[a]));
        }
        if (!cl_ok(clEnqueueWriteBuffer(cl->queue, b.pred, CL_TRUE, 0, 16 * n, p, 0, NULL, NULL),
                   "clEnqueueWriteBuffer"))
            return -1;
        g.resort_mode = r % 2 ? 2 : 0;
        double t0 = now_ms();
        if (grid_build(&g, b.pred) != 0 || !cl_ok(clFinish(cl->queue), "clFinish"))
            return -1;
        step[r % 2][r / 2] = now_ms() - t0;
        if (r % 2) {
            add_kernel_times(&g, &resort_kt);
            moved += (double)g.moved_seen / (double)n / REPS;
        }
        grid_collect_profile(&g);
    }
    free(p);
    cl_uint n_u = (cl_uint)n;
    if (!KARGS(count, "count_neighbours", A(n_u), A(g.desc), A(g.cell_words), A(g.cell_first),
               A(b.pred), A(counts)))
        return -1;
    for (int r = 0; r < REPS + 1; r++) {
        cl_event ev;
        double t0 = now_ms();
        if (!mz_cl_run1d(cl, count, n, &ev, "count_neighbours") ||
            !cl_ok(clFinish(cl->queue), "clFinish"))
            return -1;
        if (r > 0) { /* the first is a warm-up */
            cwall[r - 1] = now_ms() - t0;
            cdev[r - 1] = event_ms(ev);
        }
        clReleaseEvent(ev);
    }
    /* The mean neighbour count, to show the density is what the table claims. */
    uint32_t *c = malloc(4 * n);
    double mean = 0;
    if (!cl_ok(clEnqueueReadBuffer(cl->queue, counts, CL_TRUE, 0, 4 * n, c, 0, NULL, NULL),
               "clEnqueueReadBuffer"))
        return -1;
    for (size_t i = 0; i < n; i++)
        mean += c[i];
    mean /= (double)n;

    double bw = median(wall, REPS), bd = median(dev, REPS), cw = median(cwall, REPS),
           cd = median(cdev, REPS), bc = median(cold, REPS), bytes = build_bytes(&g);
    printf("%9zu %9.2f %9.2f %9.1f %9.2f %9.2f %9.1f %6s %5.1f %8.1f %7.1f  %s\n", n, bw, bd,
           (double)n / bw * 1e-3, bc, cw, (double)n / cw * 1e-3,
           g.desc.hashed ? "hashed" : "dense", mean, bytes / 1048576.0, bytes / bw * 1e-6,
           cl->device_name);
    printf("          a step's build (every particle moved %.3g h, %.1f%% to other cells): "
           "full sort %.2f ms, resort %.2f ms (wall)\n",
           move, 100.0 * moved, median(step[0], REPS), median(step[1], REPS));
    printf("          per build, device time by kernel (%d key bits, %d passes of %d bits, "
           "sort geometry %zux%zu; count_neighbours %.2f):\n",
           g.key_bits, (g.key_bits + g.radix_bits - 1) / g.radix_bits, g.radix_bits,
           g.group_size, g.items_per_item, cd);
    print_kernel_times(&full_kt, REPS);
    printf("          per resort of the step's line:\n");
    print_kernel_times(&resort_kt, REPS);

    for (int r = 0; r < 6; r++)
        clReleaseMemObject(*handles[r]);
    clReleaseMemObject(counts);
    clReleaseKernel(count);
    grid_release(&g);
    free(pos);
    free(vel);
    free(inv_mass);
    free(id);
    free(body);
    free(c);
    return 0;
}

int main(void)
{
    mz_cl cl;
    if (mz_cl_open(&cl, NULL, true) != 0)
        return 1;
    bool gpu = (cl.type & CL_DEVICE_TYPE_GPU) != 0;
    size_t max_n = gpu ? 10000000 : 1000000;
    const char *env = getenv("BENCH_GRID_MAX");
    if (env && *env)
        max_n = (size_t)strtod(env, NULL);
    printf("neighbour grid: rebuild = keys + radix sort + ranges + reorder of 3 float4 and 3 "
           "uint/float buffers; count = one count_neighbours pass\n"
           "(ms: medians of %d; build = input already in grid order, shuffled = random order; "
           "wall = enqueue..clFinish, dev = summed event times)\n",
           REPS);
    printf("%9s %9s %9s %9s %9s %9s %9s %6s %5s %8s %7s  %s\n", "particles", "build ms",
           "dev ms", "Mpart/s", "shuf ms", "count ms", "Mpart/s", "mode", "nbrs", "MB/build",
           "GB/s", "device");
    /* A step's displacement, in cells: WCSPH's CFL step moves a dam break's particles some
     * hundredths of h. */
    env = getenv("BENCH_GRID_MOVE");
    double move = env && *env ? strtod(env, NULL) : 0.02;
    int status = 0;
    for (size_t n = 10000; n <= max_n && status == 0; n *= 10)
        status = bench(&cl, n, move);
    mz_cl_close(&cl);
    return status ? 1 : 0;
}
