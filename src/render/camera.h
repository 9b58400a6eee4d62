/* Inside render/: orthographic views. A camera maps world points to screen pixels and a depth
 * in pixels (growing away from the viewer), so one scale serves sizes on screen and in depth. */
#ifndef MZ_CAMERA_H
#define MZ_CAMERA_H
#include "render/render.h"

typedef struct mz_camera {
    double right[3], up[3], toward[3]; /* unit vectors; toward points at the viewer */
    double scale;                      /* pixels per metre */
    double ox, oy;                     /* screen position of the world origin */
} mz_camera;

/* The view's camera, fitting the box lo..hi into the screen rectangle x, y, w, h. */
void camera_fit(mz_camera *cam, mz_view_kind view, const double lo[3], const double hi[3], int x,
                int y, int w, int h);
/* Screen x, y and depth of world point p. */
void camera_project(const mz_camera *cam, const double p[3], double s[3]);
/* A world direction in camera coordinates (x right, y up, z toward the viewer). */
void camera_rotate(const mz_camera *cam, const double d[3], double out[3]);

#endif
