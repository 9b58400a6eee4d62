/* A picture of one state: colliders, cloth surfaces and particles into one depth buffer, then
 * the domain's edges over them (faint where hidden), the caption and the colour bar. */
#include "render/camera.h"
#include "render/canvas.h"
#include "render/colour.h"
#include "render/render.h"
#include "render/setting.h"
#include "util/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SIDE = 16384, MARGIN = 12, PANEL = 128 };

static const mz_rgb background = {246, 246, 244}, ink = {30, 30, 30}, edge_ink = {70, 70, 70},
                    solid = {178, 178, 188};

/* Particles a body's particles are drawn as: half the fluid's spacing for fluids; for other
 * bodies, half their mean triangle edge, else half the spacing their bounding box and count
 * imply (exact for lattices, a little large for round bodies). */
/* Whether triangle t names particles of the picture (a damaged file's may not). */
static bool triangle_ok(const mz_picture *pic, size_t t)
{
    const uint32_t *id = pic->tri + 3 * t;
    return id[0] < pic->n && id[1] < pic->n && id[2] < pic->n;
}

static size_t body_of(const mz_picture *pic, size_t i, size_t n_bodies)
{
    return pic->body && pic->body[i] < n_bodies ? pic->body[i] : 0;
}

static double *body_radii(const mz_picture *pic, const mz_setting *st, size_t *nb)
{
    /* A body has a particle at least: an index beyond the count is a damaged file's, drawn as
     * body 0 (body_of), not an allocation of its size. */
    size_t n_bodies = 1;
    for (size_t i = 0; pic->body && i < pic->n; i++)
        if (pic->body[i] < pic->n && pic->body[i] + 1 > n_bodies)
            n_bodies = pic->body[i] + 1;
    double *r = xcalloc(n_bodies, sizeof *r), *lo = xmalloc(3 * n_bodies * sizeof *lo),
           *hi = xmalloc(3 * n_bodies * sizeof *hi), *edge = xcalloc(n_bodies, sizeof *edge);
    size_t *count = xcalloc(n_bodies, sizeof *count), *edges = xcalloc(n_bodies, sizeof *edges);
    for (size_t k = 0; k < 3 * n_bodies; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (size_t i = 0; i < pic->n; i++) {
        size_t b = body_of(pic, i, n_bodies);
        count[b]++;
        for (int a = 0; a < 3; a++) {
            lo[3 * b + a] = fmin(lo[3 * b + a], pic->pos[3 * i + a]);
            hi[3 * b + a] = fmax(hi[3 * b + a], pic->pos[3 * i + a]);
        }
    }
    for (size_t t = 0; t < pic->n_tri; t++)
        for (int e = 0; e < 3 && triangle_ok(pic, t); e++) {
            const float *p = pic->pos + 3 * (size_t)pic->tri[3 * t + e];
            const float *q = pic->pos + 3 * (size_t)pic->tri[3 * t + (e + 1) % 3];
            size_t b = body_of(pic, pic->tri[3 * t + e], n_bodies);
            edge[b] += sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) +
                            (p[2] - q[2]) * (p[2] - q[2]));
            edges[b]++;
        }
    for (size_t b = 0; b < n_bodies; b++) {
        if (b < st->n_fluids && st->fluid_spacing[b] > 0)
            r[b] = 0.5 * st->fluid_spacing[b];
        else if (edges[b])
            r[b] = 0.5 * edge[b] / (double)edges[b];
        else if (count[b]) {
            double vol = 1;
            int dims = 0;
            for (int a = 0; a < 3; a++)
                if (hi[3 * b + a] - lo[3 * b + a] > 0)
                    vol *= hi[3 * b + a] - lo[3 * b + a], dims++;
            r[b] = dims ? 0.5 * pow(vol / (double)count[b], 1.0 / dims) : 0;
        }
    }
    free(lo), free(hi), free(edge), free(count), free(edges);
    *nb = n_bodies;
    return r;
}

static mz_rgb particle_colour(const mz_picture *pic, const mz_render_opts *o, size_t i)
{
    if (!pic->value)
        return colour_phase(pic->phase ? pic->phase[i] : 0);
    return colour_map((pic->value[i] - o->lo) / (o->hi - o->lo));
}

static void project(const mz_camera *cam, const float *p, double s[3])
{
    double w[3] = {p[0], p[1], p[2]};
    camera_project(cam, w, s);
}

/* Cloth triangles as a lit surface; marks the particles they cover, which are not splatted. */
static void draw_surfaces(mz_canvas *c, const mz_camera *cam, const mz_picture *pic,
                          const mz_render_opts *o, uint8_t *covered)
{
    for (size_t t = 0; t < pic->n_tri; t++) {
        if (!triangle_ok(pic, t))
            continue;
        double v[3][3], e1[3], e2[3], n[3], nc[3];
        mz_rgb col[3];
        const uint32_t *id = pic->tri + 3 * t;
        for (int k = 0; k < 3; k++) {
            project(cam, pic->pos + 3 * (size_t)id[k], v[k]);
            col[k] = particle_colour(pic, o, id[k]);
            covered[id[k]] = 1;
        }
        const float *a = pic->pos + 3 * (size_t)id[0], *b = pic->pos + 3 * (size_t)id[1],
                    *d = pic->pos + 3 * (size_t)id[2];
        for (int k = 0; k < 3; k++)
            e1[k] = b[k] - a[k], e2[k] = d[k] - a[k];
        n[0] = e1[1] * e2[2] - e1[2] * e2[1];
        n[1] = e1[2] * e2[0] - e1[0] * e2[2];
        n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        camera_rotate(cam, n, nc);
        canvas_triangle(c, v, col, canvas_surface_light(nc));
    }
}

static void draw_particles(mz_canvas *c, const mz_camera *cam, const mz_picture *pic,
                           const mz_render_opts *o, const uint8_t *covered, const double *radius,
                           size_t n_bodies)
{
    for (size_t i = 0; i < pic->n; i++) {
        if (covered[i] || !isfinite(pic->pos[3 * i]) || !isfinite(pic->pos[3 * i + 1]) ||
            !isfinite(pic->pos[3 * i + 2]))
            continue;
        double s[3];
        project(cam, pic->pos + 3 * i, s);
        canvas_sphere(c, s[0], s[1], s[2], cam->scale * radius[body_of(pic, i, n_bodies)],
                      particle_colour(pic, o, i));
    }
}

/* The wall particles behind the fluid: those outside the domain only across walls that face
 * away from the viewer (the floor and far walls seen from inside, as in a cut-away), so that the
 * near walls do not hide the water. Those inside the domain belong to colliders, drawn as
 * solids. */
static void draw_boundary(mz_canvas *c, const mz_camera *cam, const mz_picture *pic,
                          const double lo[3], const double hi[3], double radius)
{
    static const mz_rgb wall = {214, 214, 218};
    for (size_t i = 0; i < pic->n_boundary; i++) {
        const float *p = pic->boundary + 3 * i;
        bool outside = false, hidden = false;
        for (int a = 0; a < 3; a++) {
            double side = p[a] < lo[a] ? -1 : p[a] > hi[a] ? 1 : 0;
            outside |= side != 0;
            hidden |= side * cam->toward[a] > 1e-9; /* that wall's outside faces the viewer */
        }
        if (!outside || hidden)
            continue;
        double s[3];
        project(cam, p, s);
        canvas_sphere(c, s[0], s[1], s[2], cam->scale * radius, wall);
    }
}

/* A box's corners: corner k takes hi on axis j where bit j of k is set. */
static void box_corners(const double lo[3], const double hi[3], double p[8][3])
{
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 3; j++)
            p[k][j] = k & (1 << j) ? hi[j] : lo[j];
}

/* The twelve edges between corners (box_corners' order; moved boxes keep it). */
static void corner_edges(mz_canvas *c, const mz_camera *cam, double p[8][3], mz_rgb colour,
                         double hidden)
{
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++) {
            if (k & (1 << a)) /* each edge once: from the corner with the bit clear */
                continue;
            int m = k | (1 << a);
            if (p[k][0] == p[m][0] && p[k][1] == p[m][1] && p[k][2] == p[m][2])
                continue; /* a flat box (2D) has edges of length zero */
            double sp[3], sq[3];
            camera_project(cam, p[k], sp);
            camera_project(cam, p[m], sq);
            canvas_line(c, sp, sq, colour, hidden);
        }
}

static void box_edges(mz_canvas *c, const mz_camera *cam, const double lo[3], const double hi[3],
                      mz_rgb colour, double hidden)
{
    double p[8][3];
    box_corners(lo, hi, p);
    corner_edges(c, cam, p, colour, hidden);
}

static void quad(mz_canvas *c, const mz_camera *cam, double p[4][3], mz_rgb colour)
{
    double s[4][3], e1[3], e2[3], n[3], nc[3];
    for (int k = 0; k < 4; k++)
        camera_project(cam, p[k], s[k]);
    for (int k = 0; k < 3; k++)
        e1[k] = p[1][k] - p[0][k], e2[k] = p[3][k] - p[0][k];
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
    camera_rotate(cam, n, nc);
    double light = canvas_surface_light(nc);
    const mz_rgb cols[3] = {colour, colour, colour};
    double t1[3][3] = {{s[0][0], s[0][1], s[0][2]}, {s[1][0], s[1][1], s[1][2]},
                             {s[2][0], s[2][1], s[2][2]}};
    double t2[3][3] = {{s[0][0], s[0][1], s[0][2]}, {s[2][0], s[2][1], s[2][2]},
                             {s[3][0], s[3][1], s[3][2]}};
    canvas_triangle(c, t1, cols, light);
    canvas_triangle(c, t2, cols, light);
}

/* The six faces between corners (box_corners' order). */
static void solid_corners(mz_canvas *c, const mz_camera *cam, double P[8][3])
{
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            int u = (a + 1) % 3, v = (a + 2) % 3;
            double p[4][3];
            for (int k = 0; k < 4; k++) {
                int corner = (side << a) | ((k == 1 || k == 2) << u) | ((k >= 2) << v);
                memcpy(p[k], P[corner], sizeof p[k]);
            }
            quad(c, cam, p, solid);
        }
}

/* A plane collider is the half-space behind it: drawn as the plane's polygon inside the
 * domain (where the box's edges cross it), outlined. */
static void plane(mz_canvas *c, const mz_camera *cam, const mz_shape *sh, const double lo[3],
                  const double hi[3])
{
    double pts[12][3], ctr[3] = {0, 0, 0};
    int np = 0;
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++) {
            if (k & (1 << a))
                continue;
            double p[3], q[3];
            for (int j = 0; j < 3; j++) {
                p[j] = k & (1 << j) ? hi[j] : lo[j];
                q[j] = (k | (1 << a)) & (1 << j) ? hi[j] : lo[j];
            }
            double dp = 0, dq = 0;
            for (int j = 0; j < 3; j++) {
                dp += (p[j] - sh->a[j]) * sh->b[j];
                dq += (q[j] - sh->a[j]) * sh->b[j];
            }
            if ((dp < 0) == (dq < 0) || dp == dq)
                continue;
            double t = dp / (dp - dq);
            for (int j = 0; j < 3; j++)
                ctr[j] += (pts[np][j] = p[j] + t * (q[j] - p[j]));
            np++;
        }
    if (np < 2)
        return;
    for (int j = 0; j < 3; j++)
        ctr[j] /= np;
    /* Order the points round the centre, as seen along the normal. */
    double ang[12], sc[3];
    camera_project(cam, ctr, sc);
    for (int k = 0; k < np; k++) {
        double s[3];
        camera_project(cam, pts[k], s);
        ang[k] = atan2(s[1] - sc[1], s[0] - sc[0]);
    }
    for (int k = 1; k < np; k++)
        for (int j = k; j > 0 && ang[j] < ang[j - 1]; j--) {
            double t = ang[j];
            ang[j] = ang[j - 1], ang[j - 1] = t;
            for (int m = 0; m < 3; m++)
                t = pts[j][m], pts[j][m] = pts[j - 1][m], pts[j - 1][m] = t;
        }
    double nc[3];
    camera_rotate(cam, sh->b, nc);
    double light = canvas_surface_light(nc);
    const mz_rgb cols[3] = {solid, solid, solid};
    for (int k = 0; k < np; k++) {
        double v[3][3], a[3], b[3];
        camera_project(cam, pts[k], a);
        camera_project(cam, pts[(k + 1) % np], b);
        for (int m = 0; m < 3; m++)
            v[0][m] = sc[m], v[1][m] = a[m], v[2][m] = b[m];
        canvas_triangle(c, v, cols, light);
    }
    for (int k = 0; k < np; k++) {
        double a[3], b[3];
        camera_project(cam, pts[k], a);
        camera_project(cam, pts[(k + 1) % np], b);
        canvas_line(c, a, b, edge_ink, 0.3);
    }
}

static void draw_colliders(mz_canvas *c, const mz_camera *cam, const mz_setting *st,
                           const double lo[3], const double hi[3])
{
    for (size_t k = 0; k < st->n_shapes; k++) {
        const mz_shape *sh = &st->shapes[k];
        double s[3];
        switch (sh->kind) {
        case SHAPE_SPHERE: {
            double ctr[3];
            setting_place(sh, sh->a, ctr);
            camera_project(cam, ctr, s);
            canvas_sphere(c, s[0], s[1], s[2], cam->scale * sh->r, solid);
            break;
        }
        case SHAPE_CAPSULE: { /* a row of spheres close enough that their union is smooth */
            double len = sqrt((sh->b[0] - sh->a[0]) * (sh->b[0] - sh->a[0]) +
                              (sh->b[1] - sh->a[1]) * (sh->b[1] - sh->a[1]) +
                              (sh->b[2] - sh->a[2]) * (sh->b[2] - sh->a[2]));
            double want = sh->r > 0 ? ceil(len / (0.05 * sh->r)) : 1;
            int steps = want >= 1 && want <= 4096 ? (int)want : want > 4096 ? 4096 : 1;
            for (int j = 0; j <= steps; j++) {
                double t = (double)j / steps, p[3];
                for (int m = 0; m < 3; m++)
                    p[m] = sh->a[m] + t * (sh->b[m] - sh->a[m]);
                setting_place(sh, p, p);
                camera_project(cam, p, s);
                canvas_sphere(c, s[0], s[1], s[2], cam->scale * sh->r, solid);
            }
            break;
        }
        case SHAPE_BOX: {
            double blo[3], bhi[3], P[8][3]; /* the part inside the domain, moved */
            for (int m = 0; m < 3; m++)
                blo[m] = fmax(sh->a[m], lo[m]), bhi[m] = fmin(sh->b[m], hi[m]);
            if (blo[0] <= bhi[0] && blo[1] <= bhi[1] && blo[2] <= bhi[2]) {
                box_corners(blo, bhi, P);
                for (int q = 0; q < 8; q++)
                    setting_place(sh, P[q], P[q]);
                solid_corners(c, cam, P);
                corner_edges(c, cam, P, edge_ink, 0.0);
            }
            break;
        }
        case SHAPE_PLANE: {
            mz_shape moved = *sh; /* its point moved, its normal turned */
            setting_place(sh, sh->a, moved.a);
            setting_turn(sh, sh->b, moved.b);
            plane(c, cam, &moved, lo, hi);
            break;
        }
        }
    }
}

static void colour_bar(mz_canvas *c, const mz_picture *pic, const mz_render_opts *o, int x, int y,
                       int h)
{
    int lh = canvas_line_height();
    canvas_text(c, x, y, pic->field_label ? pic->field_label : "", ink);
    if (pic->field_unit && *pic->field_unit) {
        char unit[64];
        snprintf(unit, sizeof unit, "[%s]", pic->field_unit);
        canvas_text(c, x, y + lh, unit, ink);
    }
    int top = y + 2 * lh + 8, bar = 18;
    for (int k = 0; k < h; k++)
        canvas_rect(c, x, top + k, bar, 1, colour_map(1 - (double)k / (h - 1)));
    for (int k = 0; k < 3; k++) {
        char label[32];
        double v = o->hi - k * 0.5 * (o->hi - o->lo);
        snprintf(label, sizeof label, "%.3g", v);
        int ty = top + k * (h - 1) / 2;
        canvas_rect(c, x + bar, ty, 4, 1, ink);
        canvas_text(c, x + bar + 7, ty - lh / 2, label, ink);
    }
}

static void phase_legend(mz_canvas *c, const mz_picture *pic, int x, int y)
{
    bool seen[COLOUR_PHASES + 1] = {false};
    for (size_t i = 0; i < pic->n; i++)
        seen[pic->phase && pic->phase[i] < COLOUR_PHASES ? pic->phase[i] : 0] = true;
    int lh = canvas_line_height();
    for (uint32_t p = 0; p < COLOUR_PHASES; p++)
        if (seen[p]) {
            canvas_rect(c, x, y + 3, lh - 6, lh - 6, colour_phase(p));
            canvas_text(c, x + lh, y, colour_phase_name(p), ink);
            y += lh + 4;
        }
}

int render_picture(const mz_picture *pic, const mz_render_opts *o, mz_image *img)
{
    if (o->width < 2 * PANEL || o->height < 160 || o->width > MAX_SIDE || o->height > MAX_SIDE) {
        mz_error("a picture must be %d to %d pixels wide and 160 to %d high (asked for %dx%d)",
                 2 * PANEL, MAX_SIDE, MAX_SIDE, o->width, o->height);
        return -2;
    }
    mz_setting st;
    if (setting_read(pic->scene_json, &st) < 0) {
        mz_error("the file's scene (/parameters/scene/effective) has no domain to draw");
        return -1;
    }
    for (size_t k = 0; k < pic->n_poses; k++)
        setting_pose(&st, &pic->poses[k]);
    mz_view_kind view = o->view;
    if (view == MZ_VIEW_AUTO)
        view = st.dimensions == 2 ? MZ_VIEW_FRONT : MZ_VIEW_ISO;
    if (st.dimensions == 2 && view != MZ_VIEW_FRONT) {
        mz_error("a 2D run lies in the x-y plane: only --view front shows it");
        setting_free(&st);
        return -2;
    }
    mz_render_opts ro = *o;
    if (!ro.fixed_range && pic->value && !render_range(pic->value, pic->n, &ro.lo, &ro.hi))
        ro.lo = 0, ro.hi = 1;
    if (!(ro.hi > ro.lo)) { /* all one value: a range around it, so it sits mid-scale */
        double w = fabs(ro.lo) > 0 ? 0.01 * fabs(ro.lo) : 1e-6;
        ro.hi = ro.lo + w;
        ro.lo -= w;
    }

    double lo[3], hi[3];
    memcpy(lo, st.lo, sizeof lo);
    memcpy(hi, st.hi, sizeof hi);
    if (st.dimensions == 2)
        lo[2] = hi[2] = 0;
    double flo[3], fhi[3]; /* what the view fits: the domain and the walls' particles */
    memcpy(flo, lo, sizeof flo);
    memcpy(fhi, hi, sizeof fhi);
    for (size_t i = 0; i < pic->n_boundary; i++)
        for (int a = 0; a < 3; a++) {
            flo[a] = fmin(flo[a], pic->boundary[3 * i + a]);
            fhi[a] = fmax(fhi[a], pic->boundary[3 * i + a]);
        }
    int lh = canvas_line_height(), top = MARGIN + lh + 10;
    mz_camera cam;
    camera_fit(&cam, view, flo, fhi, MARGIN, top, o->width - PANEL - 2 * MARGIN,
               o->height - top - MARGIN);
    mz_canvas c;
    canvas_init(&c, o->width, o->height, background);

    draw_colliders(&c, &cam, &st, lo, hi);
    size_t nb;
    double *radius = body_radii(pic, &st, &nb);
    uint8_t *covered = xcalloc(pic->n + 1, 1);
    draw_boundary(&c, &cam, pic, lo, hi, st.n_fluids ? 0.5 * st.fluid_spacing[0] : 0);
    draw_surfaces(&c, &cam, pic, &ro, covered);
    draw_particles(&c, &cam, pic, &ro, covered, radius, nb);
    box_edges(&c, &cam, lo, hi, edge_ink, 0.3);
    free(covered);
    free(radius);

    canvas_text(&c, MARGIN, MARGIN, pic->caption ? pic->caption : "", ink);
    int px = o->width - PANEL + 8;
    if (pic->value)
        colour_bar(&c, pic, &ro, px, top, (o->height - top - MARGIN) * 6 / 10);
    else
        phase_legend(&c, pic, px, top);

    img->width = c.w;
    img->height = c.h;
    img->rgb = c.rgb;
    free(c.depth);
    setting_free(&st);
    return 0;
}

void image_free(mz_image *img)
{
    free(img->rgb);
    img->rgb = NULL;
}
