/* Inside render/: the drawing surface. RGB with a depth buffer (depth grows away from the
 * viewer), and the primitives pictures are made of: lit spheres, lit triangles, lines that
 * show faintly where something hides them, filled rectangles and text. */
#ifndef MZ_CANVAS_H
#define MZ_CANVAS_H
#include <stdint.h>

typedef struct mz_canvas {
    int w, h;
    uint8_t *rgb;
    float *depth;
} mz_canvas;

typedef struct mz_rgb {
    uint8_t r, g, b;
} mz_rgb;

void canvas_init(mz_canvas *c, int w, int h, mz_rgb background);
void canvas_free(mz_canvas *c);

/* A sphere of radius r pixels at screen (x, y) and depth z (in pixels too: the camera scales
 * depth as it scales the screen), lit from the upper left; pixels nearer than what is there. */
void canvas_sphere(mz_canvas *c, double x, double y, double z, double r, mz_rgb colour);
/* A triangle from screen vertices v[k] = {x, y, depth}, each with its colour, lit by the
 * brightness given (the caller knows the surface's normal). */
void canvas_triangle(mz_canvas *c, double v[3][3], const mz_rgb colour[3], double light);
/* A line between screen points {x, y, depth}: full colour where nothing nearer covers it,
 * `hidden` (0..1) of it where something does. */
/* Brightness of a flat surface with normal n in camera coordinates, lit on the side seen. */
double canvas_surface_light(const double n[3]);
void canvas_line(mz_canvas *c, const double a[3], const double b[3], mz_rgb colour,
                 double hidden);
void canvas_rect(mz_canvas *c, int x, int y, int w, int h, mz_rgb colour);
/* Text with its top-left corner at (x, y); returns its width in pixels. */
int canvas_text(mz_canvas *c, int x, int y, const char *s, mz_rgb colour);
int canvas_text_width(const char *s);
int canvas_line_height(void);

#endif
