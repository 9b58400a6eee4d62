/* make bench: PBF throughput. A 3D dam break: a cube of n^3 water particles (spacing 1 cm)
 * against the wall of a tank 4n x 2n x n spacings, 4 substeps x 2 iterations a frame (the
 * setting of the GPU target: 10^6 particles at 60 frames per wall-clock second), XSPH on:
 * frames per wall-clock second and particle-substeps per second over timed frames after
 * warm-up frames, with device time per stage. n^3 ~ 10^5 and 10^6, and 10^7 on a GPU
 * (BENCH_PBF_MAX overrides the largest count). Not a test: prints a table, exits 0. */
#include "bench/bench_frames.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bench(mz_cl *cl, int res, int warm, int frames)
{
    char json[1536];
    double a = 0.01 * res;
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 4, \"iterations\": 2},"
             " \"domain\": {\"min\": [0,0,0], \"max\": [%.17g,%.17g,%.17g], \"boundary\": {\"type\": "
             "\"clamp\"}},"
             " \"fluids\": [{\"solver\": \"pbf\", \"box\": {\"min\": [0,0,0], \"max\": [%.17g,%.17g,%.17g]},"
             "   \"spacing\": 0.01}]}",
             4 * a, 2 * a, a, a, a, a);
    char label[16];
    snprintf(label, sizeof label, "%4d^3", res);
    return bench_frames(cl, json, label, false, warm, frames);
}

int main(void)
{
    mz_cl cl;
    if (mz_cl_open(&cl, NULL, true) != 0)
        return 1;
    bool gpu = (cl.type & CL_DEVICE_TYPE_GPU) != 0;
    const char *env = getenv("BENCH_PBF_MAX");
    double max_n = env ? atof(env) : gpu ? 1.1e7 : 1.1e6;
    printf("PBF dam break: n^3 particles, 4 substeps x 2 iterations, XSPH; device %s\n",
           cl.device_name);
    printf("(frames/s and particle-substeps/s by wall clock, the queue drained every frame; stage "
           "columns in device ns per particle-substep)\n");
    printf("%-6s %10s %6s %10s %9s %11s", "column", "particles", "frames", "ms/frame",
           "frames/s", "p-subst/s");
    for (int i = 0; mz_solver_pbd.stages[i]; i++)
        printf(" %9s", mz_solver_pbd.stages[i]);
    printf("\n");
    const int res[] = {46, 100, 215}; /* 9.7e4, 1e6, 9.9e6 particles */
    for (int k = 0; k < 3; k++) {
        if ((double)res[k] * res[k] * res[k] > max_n)
            break;
        int frames = gpu ? 60 : k == 0 ? 3 : 1;
        int warm = gpu ? 30 : k == 0 ? 2 : 0;
        if (bench(&cl, res[k], warm, frames))
            return 1;
    }
    mz_cl_close(&cl);
    return 0;
}
