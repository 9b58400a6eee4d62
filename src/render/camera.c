#include "render/camera.h"

#include <math.h>

const char *const mz_view_names[] = {"auto", "front", "side", "top", "iso", 0};

static double dot(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void set3(double v[3], double x, double y, double z)
{
    v[0] = x;
    v[1] = y;
    v[2] = z;
}

/* y is up in mizu's scenes. front looks along -z (x to the right), side along -x (from +x, z
 * running to the left as seen from there), top down -y (x right, -z up on screen); iso from
 * front-right-above, 30 degrees round and 25 up, so that a flume along x reads left to right. */
static void orient(mz_camera *cam, mz_view_kind view)
{
    switch (view) {
    case MZ_VIEW_SIDE:
        set3(cam->right, 0, 0, -1), set3(cam->up, 0, 1, 0), set3(cam->toward, 1, 0, 0);
        break;
    case MZ_VIEW_TOP:
        set3(cam->right, 1, 0, 0), set3(cam->up, 0, 0, -1), set3(cam->toward, 0, 1, 0);
        break;
    case MZ_VIEW_ISO: {
        const double deg = 3.14159265358979323846 / 180, yaw = 30 * deg, pitch = 25 * deg;
        double *e = cam->toward;
        set3(e, sin(yaw) * cos(pitch), sin(pitch), cos(yaw) * cos(pitch));
        double len = sqrt(e[2] * e[2] + e[0] * e[0]);
        set3(cam->right, e[2] / len, 0, -e[0] / len); /* world up × toward */
        set3(cam->up, e[1] * cam->right[2] - e[2] * cam->right[1],
             e[2] * cam->right[0] - e[0] * cam->right[2],
             e[0] * cam->right[1] - e[1] * cam->right[0]); /* toward × right */
        break;
    }
    default:
        set3(cam->right, 1, 0, 0), set3(cam->up, 0, 1, 0), set3(cam->toward, 0, 0, 1);
        break;
    }
}

void camera_fit(mz_camera *cam, mz_view_kind view, const double lo[3], const double hi[3], int x,
                int y, int w, int h)
{
    orient(cam, view);
    double rmin = INFINITY, rmax = -INFINITY, umin = INFINITY, umax = -INFINITY;
    for (int k = 0; k < 8; k++) {
        double p[3] = {k & 1 ? hi[0] : lo[0], k & 2 ? hi[1] : lo[1], k & 4 ? hi[2] : lo[2]};
        double r = dot(p, cam->right), u = dot(p, cam->up);
        rmin = fmin(rmin, r), rmax = fmax(rmax, r), umin = fmin(umin, u), umax = fmax(umax, u);
    }
    double sr = rmax > rmin ? w / (rmax - rmin) : INFINITY;
    double su = umax > umin ? h / (umax - umin) : INFINITY;
    cam->scale = fmin(sr, su);
    if (!isfinite(cam->scale))
        cam->scale = 1;
    cam->ox = x + 0.5 * w - cam->scale * 0.5 * (rmin + rmax);
    cam->oy = y + 0.5 * h + cam->scale * 0.5 * (umin + umax);
}

void camera_project(const mz_camera *cam, const double p[3], double s[3])
{
    s[0] = cam->ox + cam->scale * dot(p, cam->right);
    s[1] = cam->oy - cam->scale * dot(p, cam->up);
    s[2] = -cam->scale * dot(p, cam->toward);
}

void camera_rotate(const mz_camera *cam, const double d[3], double out[3])
{
    out[0] = dot(d, cam->right);
    out[1] = dot(d, cam->up);
    out[2] = dot(d, cam->toward);
}
