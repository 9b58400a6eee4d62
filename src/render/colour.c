#include "render/colour.h"
#include "render/render.h"

#include <math.h>
#include <stdlib.h>

/* matplotlib's viridis at eleven evenly spaced points (#440154 ... #fde725); linear between. */
static const uint8_t viridis[11][3] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37}};

mz_rgb colour_map(double t)
{
    if (isnan(t))
        return (mz_rgb){230, 0, 230};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double x = t * 10;
    int k = x >= 10 ? 9 : (int)x;
    double f = x - k;
    const uint8_t *a = viridis[k], *b = viridis[k + 1];
    return (mz_rgb){(uint8_t)(a[0] + f * (b[0] - a[0]) + 0.5), (uint8_t)(a[1] + f * (b[1] - a[1]) + 0.5),
                    (uint8_t)(a[2] + f * (b[2] - a[2]) + 0.5)};
}

static const mz_rgb phase_colours[COLOUR_PHASES] = {
    {60, 130, 230}, {240, 140, 40}, {90, 185, 90}, {150, 150, 165}};
static const char *const phase_names[COLOUR_PHASES] = {"fluid", "cloth", "soft body", "rigid"};

mz_rgb colour_phase(uint32_t p)
{
    return p < COLOUR_PHASES ? phase_colours[p] : (mz_rgb){200, 60, 60};
}

const char *colour_phase_name(uint32_t p)
{
    return p < COLOUR_PHASES ? phase_names[p] : "other";
}

enum { SAMPLE = 1 << 16 };

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Percentiles from a sorted sample of at most SAMPLE finite values taken at an even stride
 * (every value when there are fewer): exact for small states, a few milliseconds for 10^7
 * particles, and one far outlier moves them by one rank at most. */
bool render_range(const float *value, size_t n, double *lo, double *hi)
{
    size_t stride = n > SAMPLE ? (n + SAMPLE - 1) / SAMPLE : 1, m = 0;
    float *s = malloc((n / stride + 1) * sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < n; i += stride)
        if (isfinite(value[i]))
            s[m++] = value[i];
    if (m == 0) {
        free(s);
        return false;
    }
    qsort(s, m, sizeof *s, by_value);
    double min = s[(size_t)(0.005 * (double)(m - 1) + 0.5)];
    double max = s[(size_t)(0.995 * (double)(m - 1) + 0.5)];
    free(s);
    *lo = min;
    *hi = max;
    return true;
}
