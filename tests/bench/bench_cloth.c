/* make bench: cloth throughput. A 1 m square cloth of N x N particles dropped onto a sphere,
 * 4 substeps x 2 iterations a frame, XPBD stretch and bending, self-collision on: frames per
 * wall-clock second and particle-substeps per second over timed frames after warm-up frames
 * (the cloth is already on the sphere and folding when timing starts), with device time per
 * stage. N = 128 and 256, and 1024 (one timed frame on a CPU; BENCH_CLOTH_MAX overrides the
 * largest N). Not a test: prints a table, exits 0. */
#include "bench/bench_frames.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bench(mz_cl *cl, int res, int warm, int frames)
{
    char json[1536];
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"substeps\": 4, \"iterations\": 2,"
             "   \"damping\": 0.2},"
             " \"domain\": {\"min\": [-0.5,0,-0.5], \"max\": [1.5,1.5,1.5], \"boundary\": {\"type\": "
             "\"clamp\"}},"
             " \"cloths\": [{\"grid\": {\"origin\": [0,0.505,0], \"size\": [1,1], \"resolution\": [%d,%d]},"
             "   \"mass\": 0.1, \"compliance\": 1e-7, \"bending_compliance\": 0.1,"
             "   \"self_collision\": true}],"
             " \"colliders\": [{\"sphere\": {\"center\": [0.5,0.25,0.5], \"radius\": 0.25}}]}",
             res, res);
    char label[32];
    snprintf(label, sizeof label, "%5d x %-5d", res, res);
    return bench_frames(cl, json, label, true, warm, frames);
}

int main(void)
{
    mz_cl cl;
    if (mz_cl_open(&cl, NULL, true) != 0)
        return 1;
    bool gpu = (cl.type & CL_DEVICE_TYPE_GPU) != 0;
    const char *env = getenv("BENCH_CLOTH_MAX");
    int max_res = env ? atoi(env) : 1024;
    printf("Cloth: N x N sheet on a sphere, 4 substeps x 2 iterations, self-collision; device %s\n",
           cl.device_name);
    printf("(frames/s and particle-substeps/s by wall clock, the queue drained every frame; stage "
           "columns in device ns per particle-substep)\n");
    printf("%-13s %9s %10s %6s %10s %9s %11s", "cloth", "particles", "constraints", "frames",
           "ms/frame", "frames/s", "p-subst/s");
    for (int i = 0; mz_solver_pbd.stages[i]; i++)
        printf(" %9s", mz_solver_pbd.stages[i]);
    printf("\n");
    const int res[] = {128, 256, 1024};
    for (int k = 0; k < 3; k++) {
        if (res[k] > max_res)
            break;
        int frames = gpu ? 60 : res[k] <= 128 ? 20 : res[k] <= 256 ? 5 : 1;
        int warm = gpu ? 30 : res[k] <= 256 ? 20 : 2;
        if (bench(&cl, res[k], warm, frames))
            return 1;
    }
    mz_cl_close(&cl);
    return 0;
}
