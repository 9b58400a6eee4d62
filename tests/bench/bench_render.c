/* `mizu render`'s speed (`make bench`; not a test): one picture of N particles, the particles
 * of a dam break's water as a sheet on the floor of a 3D tank (random, seeded), 1280x720, iso
 * and front views; drawing and the PNG write timed apart. One core: the renderer is serial.
 * The bar: 10^6 particles in under a second. BENCH_RENDER_MAX=N changes the largest. */
#include "render/render.h"
#include "util/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

static const char scene[] =
    "{\"domain\": {\"min\": [0, 0, 0], \"max\": [1.6, 0.6, 0.6]}, \"fluids\": [{\"spacing\": %g}]}";

int main(void)
{
    const char *max_env = getenv("BENCH_RENDER_MAX");
    size_t max = max_env ? strtoul(max_env, NULL, 10) : 1000000;
    printf("mizu render: 1280x720, one core; seconds per picture (median of %d)\n", REPS);
    printf("%10s %6s %10s %10s %12s\n", "particles", "view", "draw_s", "png_s", "particles/s");
    char path[64];
    snprintf(path, sizeof path, "/tmp/mizu-bench-render-%d.png", (int)getpid());
    for (size_t n = 10000; n <= max; n *= 10) {
        float *pos = xmalloc(3 * n * sizeof *pos), *val = xmalloc(n * sizeof *val);
        /* n particles in a sheet 1.6 x 0.1 x 0.6: the spacing that packs them */
        double spacing = 0;
        for (double v = 1.6 * 0.1 * 0.6 / (double)n; spacing * spacing * spacing < v;)
            spacing += 1e-5;
        for (size_t i = 0; i < n; i++) {
            pos[3 * i] = 1.6f * uniform();
            pos[3 * i + 1] = 0.1f * uniform() * (1 - pos[3 * i] / 1.7f);
            pos[3 * i + 2] = 0.6f * uniform();
            val[i] = pos[3 * i] * 2;
        }
        char json[256];
        snprintf(json, sizeof json, scene, spacing);
        for (int view = MZ_VIEW_FRONT; view <= MZ_VIEW_ISO; view += MZ_VIEW_ISO - MZ_VIEW_FRONT) {
            double draw[REPS], png[REPS];
            for (int r = 0; r < REPS; r++) {
                mz_picture pic = {.n = n, .pos = pos, .value = val, .scene_json = json,
                                  .field_label = "speed", .field_unit = "m s-1",
                                  .caption = "bench"};
                mz_render_opts o = {.width = 1280, .height = 720, .view = (mz_view_kind)view};
                mz_image img;
                double t0 = now_s();
                if (render_picture(&pic, &o, &img) != 0)
                    return 1;
                double t1 = now_s();
                if (render_write_png(path, &img, "bench") != 0)
                    return 1;
                png[r] = now_s() - t1;
                draw[r] = t1 - t0;
                image_free(&img);
            }
            for (int i = 1; i < REPS; i++) /* insertion sort: medians */
                for (int j = i; j > 0 && draw[j] < draw[j - 1]; j--) {
                    double t = draw[j];
                    draw[j] = draw[j - 1], draw[j - 1] = t;
                }
            for (int i = 1; i < REPS; i++)
                for (int j = i; j > 0 && png[j] < png[j - 1]; j--) {
                    double t = png[j];
                    png[j] = png[j - 1], png[j - 1] = t;
                }
            printf("%10zu %6s %10.3f %10.3f %12.3g\n", n, mz_view_names[view], draw[REPS / 2],
                   png[REPS / 2], (double)n / (draw[REPS / 2] + png[REPS / 2]));
        }
        free(pos);
        free(val);
    }
    unlink(path);
    return 0;
}
