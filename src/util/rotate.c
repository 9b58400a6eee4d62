#include "util/rotate.h"

#include <math.h>

void rotate_about(const double k[3], double angle, const double v[3], double out[3])
{
    double c = cos(angle), sn = sin(angle), kv = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    double kxv[3] = {k[1] * v[2] - k[2] * v[1], k[2] * v[0] - k[0] * v[2],
                     k[0] * v[1] - k[1] * v[0]};
    for (int a = 0; a < 3; a++)
        out[a] = c * v[a] + sn * kxv[a] + (1 - c) * kv * k[a];
}
