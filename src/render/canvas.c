#include "render/canvas.h"
#include "render/font.h"
#include "util/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The light, in camera coordinates (x right, y up, z toward the viewer), normalised. */
static const double light_dir[3] = {-0.4082, 0.5443, 0.7303};
enum { AMBIENT_PERCENT = 35 };

void canvas_init(mz_canvas *c, int w, int h, mz_rgb background)
{
    c->w = w;
    c->h = h;
    c->rgb = xmalloc((size_t)w * (size_t)h * 3);
    c->depth = xmalloc((size_t)w * (size_t)h * sizeof *c->depth);
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
        c->rgb[3 * i] = background.r;
        c->rgb[3 * i + 1] = background.g;
        c->rgb[3 * i + 2] = background.b;
        c->depth[i] = INFINITY;
    }
}

void canvas_free(mz_canvas *c)
{
    free(c->rgb);
    free(c->depth);
    c->rgb = NULL;
    c->depth = NULL;
}

static uint8_t lit(uint8_t v, double light)
{
    double x = v * light;
    return (uint8_t)(x > 255 ? 255 : x < 0 ? 0 : x + 0.5);
}

static void put(mz_canvas *c, size_t i, mz_rgb col, double light)
{
    c->rgb[3 * i] = lit(col.r, light);
    c->rgb[3 * i + 1] = lit(col.g, light);
    c->rgb[3 * i + 2] = lit(col.b, light);
}

static void blend(mz_canvas *c, size_t i, mz_rgb col, double a)
{
    uint8_t *p = c->rgb + 3 * i;
    p[0] = (uint8_t)(p[0] + (col.r - p[0]) * a + 0.5);
    p[1] = (uint8_t)(p[1] + (col.g - p[1]) * a + 0.5);
    p[2] = (uint8_t)(p[2] + (col.b - p[2]) * a + 0.5);
}

static double brightness(double nx, double ny, double nz)
{
    double d = nx * light_dir[0] + ny * light_dir[1] + nz * light_dir[2];
    return AMBIENT_PERCENT / 100.0 + (1 - AMBIENT_PERCENT / 100.0) * (d > 0 ? d : 0);
}

void canvas_sphere(mz_canvas *c, double x, double y, double z, double r, mz_rgb colour)
{
    /* A particle smaller than a pixel still covers the pixels round its centre: a sparse
     * lattice must not show the background, or edges behind it, through its gaps. */
    if (r < 0.75)
        r = 0.75;
    if (!isfinite(x) || !isfinite(y) || !isfinite(z) || !isfinite(r))
        return; /* a damaged file's NaN or inf: nothing to draw */
    /* Clipped in double: a huge sphere or a far point must not overflow an int. */
    double bx0 = fmax(floor(x - r), 0), bx1 = fmin(ceil(x + r), c->w - 1);
    double by0 = fmax(floor(y - r), 0), by1 = fmin(ceil(y + r), c->h - 1);
    if (bx0 > bx1 || by0 > by1)
        return;
    int x0 = (int)bx0, x1 = (int)bx1, y0 = (int)by0, y1 = (int)by1;
    double inv = 1 / r;
    for (int py = y0; py <= y1; py++) {
        double dy = (py + 0.5 - y) * inv;
        for (int px = x0; px <= x1; px++) {
            double dx = (px + 0.5 - x) * inv, d2 = dx * dx + dy * dy;
            if (d2 > 1)
                continue;
            double nz = sqrt(1 - d2), depth = z - r * nz;
            size_t i = (size_t)py * (size_t)c->w + (size_t)px;
            if (depth < c->depth[i]) {
                c->depth[i] = (float)depth;
                put(c, i, colour, brightness(dx, -dy, nz)); /* screen y runs down */
            }
        }
    }
}

static double edge(const double *a, const double *b, double x, double y)
{
    return (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]);
}

void canvas_triangle(mz_canvas *c, double v[3][3], const mz_rgb colour[3], double light)
{
    for (int k = 0; k < 3; k++)
        if (!isfinite(v[k][0]) || !isfinite(v[k][1]) || !isfinite(v[k][2]))
            return;
    double area = edge(v[0], v[1], v[2][0], v[2][1]);
    if (fabs(area) < 1e-12 || !isfinite(area))
        return;
    double xmin = fmin(v[0][0], fmin(v[1][0], v[2][0])), xmax = fmax(v[0][0], fmax(v[1][0], v[2][0]));
    double ymin = fmin(v[0][1], fmin(v[1][1], v[2][1])), ymax = fmax(v[0][1], fmax(v[1][1], v[2][1]));
    double bx0 = fmax(floor(xmin), 0), bx1 = fmin(ceil(xmax), c->w - 1);
    double by0 = fmax(floor(ymin), 0), by1 = fmin(ceil(ymax), c->h - 1);
    if (bx0 > bx1 || by0 > by1)
        return;
    int x0 = (int)bx0, x1 = (int)bx1, y0 = (int)by0, y1 = (int)by1;
    for (int py = y0; py <= y1; py++)
        for (int px = x0; px <= x1; px++) {
            double sx = px + 0.5, sy = py + 0.5;
            double w0 = edge(v[1], v[2], sx, sy) / area, w1 = edge(v[2], v[0], sx, sy) / area;
            double w2 = 1 - w0 - w1;
            if (w0 < 0 || w1 < 0 || w2 < 0)
                continue;
            double depth = w0 * v[0][2] + w1 * v[1][2] + w2 * v[2][2];
            size_t i = (size_t)py * (size_t)c->w + (size_t)px;
            if (depth >= c->depth[i])
                continue;
            c->depth[i] = (float)depth;
            mz_rgb col = {(uint8_t)(w0 * colour[0].r + w1 * colour[1].r + w2 * colour[2].r + 0.5),
                          (uint8_t)(w0 * colour[0].g + w1 * colour[1].g + w2 * colour[2].g + 0.5),
                          (uint8_t)(w0 * colour[0].b + w1 * colour[1].b + w2 * colour[2].b + 0.5)};
            put(c, i, col, light);
        }
}

double canvas_surface_light(const double n[3])
{
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (len == 0)
        return brightness(0, 0, 1);
    double s = n[2] < 0 ? -1 / len : 1 / len; /* the side the viewer sees */
    return brightness(n[0] * s, n[1] * s, n[2] * s);
}

void canvas_line(mz_canvas *c, const double a[3], const double b[3], mz_rgb colour,
                 double hidden)
{
    /* Between the pixels the ends fall in, so that an edge along a pixel boundary does not
     * flicker between two columns by rounding. */
    if (!isfinite(a[0]) || !isfinite(a[1]) || !isfinite(a[2]) || !isfinite(b[0]) ||
        !isfinite(b[1]) || !isfinite(b[2]))
        return;
    double ax = floor(a[0]), ay = floor(a[1]), dx = floor(b[0]) - ax, dy = floor(b[1]) - ay;
    /* far outside: clip crudely by sampling no more than this many points */
    int steps = (int)fmin(fmax(fabs(dx), fabs(dy)), 4.0 * (c->w + c->h));
    for (int k = 0; k <= steps; k++) {
        double t = steps ? (double)k / steps : 0;
        double fx = floor(ax + t * dx + 0.5), fy = floor(ay + t * dy + 0.5);
        if (!(fx >= 0 && fy >= 0 && fx < c->w && fy < c->h))
            continue;
        int px = (int)fx, py = (int)fy;
        size_t i = (size_t)py * (size_t)c->w + (size_t)px;
        double depth = a[2] + t * (b[2] - a[2]);
        /* A small allowance so that edges of a solid's own faces stay visible. */
        blend(c, i, colour, depth <= c->depth[i] + 1.5 ? 1 : hidden);
    }
}

void canvas_rect(mz_canvas *c, int x, int y, int w, int h, mz_rgb colour)
{
    for (int py = y < 0 ? 0 : y; py < y + h && py < c->h; py++)
        for (int px = x < 0 ? 0 : x; px < x + w && px < c->w; px++)
            put(c, (size_t)py * (size_t)c->w + (size_t)px, colour, 1);
}

int canvas_text_width(const char *s)
{
    return (int)strlen(s) * mz_font_mono.width;
}

int canvas_line_height(void)
{
    return mz_font_mono.height;
}

int canvas_text(mz_canvas *c, int x, int y, const char *s, mz_rgb colour)
{
    const mz_font *f = &mz_font_mono;
    int x0 = x;
    for (; *s; s++, x += f->width) {
        int ch = (unsigned char)*s;
        if (ch < 32 || ch > 126)
            ch = '?';
        const uint8_t *g = f->coverage[ch - 32];
        for (int gy = 0; gy < f->height; gy++)
            for (int gx = 0; gx < f->width; gx++) {
                int px = x + gx, py = y + gy;
                if (g[gy * f->width + gx] && px >= 0 && py >= 0 && px < c->w && py < c->h)
                    blend(c, (size_t)py * (size_t)c->w + (size_t)px, colour,
                          g[gy * f->width + gx] / 255.0);
            }
    }
    return x - x0;
}
