/* render/: the drawing primitives against geometry worked by hand (a sphere's area, its depth,
 * occlusion in either drawing order), views fitting the box, the colour map's ends, the colour
 * range's percentiles, pictures of known particles, moving colliders drawn at their poses, and
 * PNG files written, read back and guarded. */
#include "test_util.h"

#include "render/camera.h"
#include "render/canvas.h"
#include "render/colour.h"
#include "render/render.h"
#include "render/png_read.h"

#include <math.h>
#include <sys/stat.h>

static const double PI = 3.14159265358979323846;
static const mz_rgb white = {255, 255, 255}, red = {200, 0, 0}, blue = {0, 0, 200};

static size_t count_not(const mz_canvas *c, mz_rgb bg)
{
    size_t n = 0;
    for (size_t i = 0; i < (size_t)c->w * (size_t)c->h; i++)
        n += c->rgb[3 * i] != bg.r || c->rgb[3 * i + 1] != bg.g || c->rgb[3 * i + 2] != bg.b;
    return n;
}

static void test_sphere_area_and_depth(void **state)
{
    (void)state;
    mz_canvas c;
    canvas_init(&c, 100, 100, white);
    canvas_sphere(&c, 50, 50, 7, 20, red);
    /* pi r^2 pixel centres inside the disc, within the rim's pixels */
    double area = (double)count_not(&c, white);
    assert_true(fabs(area - PI * 400) < 2 * PI * 20 * 0.5);
    /* The nearest point, at the middle, is r in front of the centre. */
    assert_true(fabs(c.depth[50 * 100 + 50] - (7 - 20)) < 0.2);
    assert_true(isinf(c.depth[0]));
    /* Lit from the upper left: brighter there than lower right. */
    const uint8_t *ul = c.rgb + 3 * (40 * 100 + 40), *lr = c.rgb + 3 * (60 * 100 + 60);
    assert_true(ul[0] > lr[0]);
    /* Below a pixel a particle still covers its pixel. */
    canvas_free(&c);
    canvas_init(&c, 10, 10, white);
    canvas_sphere(&c, 5.5, 5.5, 0, 0.1, red);
    assert_true(count_not(&c, white) >= 1);
    canvas_free(&c);
}

/* Two overlapping spheres: the nearer wins wherever they overlap, whichever is drawn first. */
static void test_depth_order_independent(void **state)
{
    (void)state;
    mz_canvas a, b;
    canvas_init(&a, 80, 60, white);
    canvas_init(&b, 80, 60, white);
    canvas_sphere(&a, 30, 30, 0, 15, red);
    canvas_sphere(&a, 45, 30, -50, 15, blue);
    canvas_sphere(&b, 45, 30, -50, 15, blue);
    canvas_sphere(&b, 30, 30, 0, 15, red);
    assert_memory_equal(a.rgb, b.rgb, 80 * 60 * 3);
    assert_true(a.rgb[3 * (30 * 80 + 40) + 2] > a.rgb[3 * (30 * 80 + 40)]); /* blue in front */
    canvas_free(&a);
    canvas_free(&b);
}

static void test_triangle_and_lines(void **state)
{
    (void)state;
    mz_canvas c;
    canvas_init(&c, 100, 100, white);
    double v[3][3] = {{10, 10, 0}, {90, 10, 0}, {10, 90, 0}};
    const mz_rgb cols[3] = {red, red, red};
    canvas_triangle(&c, v, cols, 1.0);
    double area = (double)count_not(&c, white);
    assert_true(fabs(area - 0.5 * 80 * 80) < 80 * 3); /* within the hypotenuse's pixels */
    assert_int_equal(c.rgb[3 * (20 * 100 + 20)], 200);
    /* A line behind the triangle shows faintly over it, in full where nothing covers it. */
    double a[3] = {0, 30, 10}, b[3] = {99, 30, 10};
    canvas_line(&c, a, b, blue, 0.25);
    const uint8_t *hidden = c.rgb + 3 * (30 * 100 + 20), *open = c.rgb + 3 * (30 * 100 + 95);
    assert_int_equal(open[2], 0 + 0 * hidden[2] + blue.b); /* full blue where open */
    assert_true(hidden[0] > 100 && hidden[2] > 30);       /* mostly the triangle's red */
    /* A vertical line along a pixel boundary stays in one column. */
    double p[3] = {50.0000001, 0, 0}, q[3] = {49.9999999, 99, 0};
    mz_canvas d;
    canvas_init(&d, 100, 100, white);
    canvas_line(&d, p, q, blue, 1);
    assert_int_equal(count_not(&d, white), 100);
    canvas_free(&d);
    canvas_free(&c);
}

static void test_camera_fits_box(void **state)
{
    (void)state;
    const double lo[3] = {0, 0, 0}, hi[3] = {0.6, 0.3, 0.2};
    for (int view = MZ_VIEW_FRONT; view <= MZ_VIEW_ISO; view++) {
        mz_camera cam;
        camera_fit(&cam, (mz_view_kind)view, lo, hi, 10, 20, 300, 200);
        double xmin = 1e9, xmax = -1e9, ymin = 1e9, ymax = -1e9;
        for (int k = 0; k < 8; k++) {
            double p[3] = {k & 1 ? hi[0] : lo[0], k & 2 ? hi[1] : lo[1], k & 4 ? hi[2] : lo[2]};
            double s[3];
            camera_project(&cam, p, s);
            xmin = fmin(xmin, s[0]), xmax = fmax(xmax, s[0]);
            ymin = fmin(ymin, s[1]), ymax = fmax(ymax, s[1]);
        }
        assert_true(xmin >= 10 - 1e-9 && xmax <= 310 + 1e-9);
        assert_true(ymin >= 20 - 1e-9 && ymax <= 220 + 1e-9);
        /* Fitted: fills the rectangle along one axis, centred along both. */
        assert_true(fabs((xmax - xmin) - 300) < 1e-6 || fabs((ymax - ymin) - 200) < 1e-6);
        assert_true(fabs(0.5 * (xmin + xmax) - 160) < 1e-6);
        assert_true(fabs(0.5 * (ymin + ymax) - 120) < 1e-6);
    }
    /* front: y up on screen, x to the right; nearer points have smaller depth. */
    mz_camera cam;
    camera_fit(&cam, MZ_VIEW_FRONT, lo, hi, 0, 0, 600, 300);
    double s0[3], s1[3], p0[3] = {0, 0, 0}, p1[3] = {0.6, 0.3, 0.2};
    camera_project(&cam, p0, s0);
    camera_project(&cam, p1, s1);
    assert_true(s1[0] > s0[0] && s1[1] < s0[1] && s1[2] < s0[2]);
}

static void test_colour_map(void **state)
{
    (void)state;
    mz_rgb a = colour_map(0), b = colour_map(1), c = colour_map(-5), m = colour_map(NAN);
    assert_true(a.r == 0x44 && a.g == 0x01 && a.b == 0x54);
    assert_true(b.r == 0xfd && b.g == 0xe7 && b.b == 0x25);
    assert_true(c.r == a.r && c.g == a.g && c.b == a.b);
    assert_true(m.r == 230 && m.g == 0 && m.b == 230);
    /* Lightness rises along viridis. */
    for (int k = 0; k < 10; k++) {
        mz_rgb x = colour_map(k / 10.0), y = colour_map((k + 1) / 10.0);
        assert_true(x.r * 3 + x.g * 6 + x.b < y.r * 3 + y.g * 6 + y.b);
    }
}

static void test_range_percentiles(void **state)
{
    (void)state;
    float v[1001];
    for (int i = 0; i <= 1000; i++)
        v[i] = (float)i;
    v[17] = NAN;
    double lo, hi;
    assert_true(render_range(v, 1001, &lo, &hi));
    /* the 0.5th and 99.5th percentiles, to a rank and a histogram bin */
    assert_true(fabs(lo - 5) <= 1.5 && fabs(hi - 995) <= 1.5);
    v[1000] = 1e6f;                                         /* one splash: ignored */
    assert_true(render_range(v, 1001, &lo, &hi));
    assert_true(hi < 1e3);
    for (int i = 0; i < 10; i++)
        v[i] = 2.5f;
    assert_true(render_range(v, 10, &lo, &hi));
    assert_true(lo == 2.5 && hi == 2.5);
    for (int i = 0; i < 10; i++)
        v[i] = NAN;
    assert_false(render_range(v, 10, &lo, &hi));
}

static const char scene2d[] =
    "{\"simulation\": {\"dimensions\": 2}, \"domain\": {\"min\": [0, 0, 0], \"max\": [2, 1, 0]},"
    " \"fluids\": [{\"spacing\": 0.1}],"
    " \"colliders\": [{\"sphere\": {\"center\": [1.5, 0.5, 0], \"radius\": 0.2}}]}";

/* One fluid particle at (0.5, 0.5) and a collider at (1.5, 0.5) in a 2 x 1 domain, seen from
 * the front: the particle's colour at its place, the collider grey at its, the colour bar. */
static void test_picture_of_known_particles(void **state)
{
    (void)state;
    float pos[3] = {0.5f, 0.5f, 0}, value[1] = {1};
    uint32_t phase[1] = {0}, body[1] = {0};
    mz_picture pic = {.n = 1, .pos = pos, .value = value, .phase = phase, .body = body,
                      .scene_json = scene2d, .field_label = "speed", .field_unit = "m s-1",
                      .caption = "test"};
    mz_render_opts o = {.width = 640, .height = 400, .fixed_range = true, .lo = 0, .hi = 1};
    mz_image img;
    assert_int_equal(render_picture(&pic, &o, &img), 0);
    assert_int_equal(img.width, 640);
    /* The plot area: x 12 .. 640 - 128 - 12, y from below the caption to 400 - 12. */
    mz_camera cam;
    const double lo[3] = {0, 0, 0}, hi[3] = {2, 1, 0};
    int top = 12 + canvas_line_height() + 10;
    camera_fit(&cam, MZ_VIEW_FRONT, lo, hi, 12, top, 640 - 128 - 24, 400 - top - 12);
    double p[3] = {0.5, 0.5, 0}, q[3] = {1.5, 0.5, 0}, s[3];
    camera_project(&cam, p, s);
    const uint8_t *px = img.rgb + 3 * ((size_t)s[1] * 640 + (size_t)s[0]);
    mz_rgb top_colour = colour_map(1); /* value 1 at the top of the range: yellow, lit */
    assert_true(px[0] > px[2] && px[1] > px[2] && top_colour.r > top_colour.b);
    camera_project(&cam, q, s);
    px = img.rgb + 3 * ((size_t)s[1] * 640 + (size_t)s[0]);
    assert_true(abs(px[0] - px[1]) < 20 && abs(px[1] - px[2]) < 30 && px[0] > 60); /* grey */
    image_free(&img);

    o.view = MZ_VIEW_ISO; /* a 2D run has only the front */
    assert_int_equal(render_picture(&pic, &o, &img), -2);
    o.view = MZ_VIEW_AUTO;
    o.width = 100; /* no room for the colour bar */
    assert_int_equal(render_picture(&pic, &o, &img), -2);
    o.width = 640;
    pic.scene_json = "{\"no\": \"domain\"}";
    assert_int_equal(render_picture(&pic, &o, &img), -1);
}

/* A moving collider drawn where its pose puts it: a sphere turned a quarter turn about
 * (1, 0.5) from (1.5, 0.5) to (1, 1.0) (counter-clockwise about +z), and a box slid by its
 * displacement; a pose for another name moves nothing. */
static void test_posed_colliders(void **state)
{
    (void)state;
    static const char json[] =
        "{\"simulation\": {\"dimensions\": 2}, \"domain\": {\"min\": [0, 0, 0], \"max\": "
        "[2, 1.5, 0]}, \"fluids\": [{\"spacing\": 0.1}], \"colliders\": [{\"name\": \"ball\", "
        "\"sphere\": {\"center\": [1.5, 0.5, 0], \"radius\": 0.1}, \"motion\": {\"type\": "
        "\"rotation\", \"center\": [1, 0.5, 0], \"axis\": [0, 0, 2]}}, {\"name\": \"gate\", "
        "\"box\": {\"min\": [0.1, 0.1, 0], \"max\": [0.2, 0.3, 0]}, \"motion\": {\"type\": "
        "\"translation\", \"center\": [0, 0, 0], \"axis\": [0, 0, 1]}}]}";
    mz_pose poses[3] = {{.name = "ball", .angle = PI / 2},
                        {.name = "gate", .displacement = {0.5, 0.25, 0}},
                        {.name = "other", .displacement = {9, 9, 9}}};
    float pos[3] = {0.05f, 1.45f, 0};
    mz_picture pic = {.n = 1, .pos = pos, .scene_json = json, .caption = "posed",
                      .poses = poses, .n_poses = 3};
    mz_render_opts o = {.width = 640, .height = 400};
    mz_image img;
    assert_int_equal(render_picture(&pic, &o, &img), 0);
    mz_camera cam;
    const double lo[3] = {0, 0, 0}, hi[3] = {2, 1.5, 0};
    int top = 12 + canvas_line_height() + 10;
    camera_fit(&cam, MZ_VIEW_FRONT, lo, hi, 12, top, 640 - 128 - 24, 400 - top - 12);
    /* Grey where the moved shapes are, background where they were. */
    static const double grey_at[][3] = {{1.0, 1.0, 0}, {0.65, 0.45, 0}},
                        empty_at[][3] = {{1.5, 0.5, 0}, {0.15, 0.2, 0}};
    for (int k = 0; k < 2; k++) {
        double s[3];
        camera_project(&cam, grey_at[k], s);
        const uint8_t *px = img.rgb + 3 * ((size_t)s[1] * 640 + (size_t)s[0]);
        assert_true(abs(px[0] - px[1]) < 20 && px[0] > 60 && px[0] < 230);
        camera_project(&cam, empty_at[k], s);
        px = img.rgb + 3 * ((size_t)s[1] * 640 + (size_t)s[0]);
        assert_true(px[0] > 235 && px[1] > 235 && px[2] > 235);
    }
    image_free(&img);
}

static void test_png_written_and_guarded(void **state)
{
    (void)state;
    mz_image img = {.width = 3, .height = 2, .rgb = malloc(18)};
    for (int i = 0; i < 18; i++)
        img.rgb[i] = (uint8_t)(i * 13);
    const char *path = test_path("guard.png");
    assert_int_equal(render_write_png(path, &img, "a title"), 0);
    test_png p = {0};
    assert_int_equal(png_load(path, &p), 0);
    assert_int_equal(p.w, 3);
    assert_int_equal(p.h, 2);
    assert_memory_equal(p.rgb, img.rgb, 18);
    free(p.rgb);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(sb.st_mode & 0777, 0666 & ~mask); /* as any created file, not 0600 */
    /* Its own picture is replaced; anything else is left alone. */
    img.rgb[0] = 1;
    assert_int_equal(render_write_png(path, &img, NULL), 0);
    assert_int_equal(png_load(path, &p), 0);
    assert_int_equal(p.rgb[0], 1);
    free(p.rgb);
    const char *other = test_path("notes.png");
    write_text(other, "my notes, not a picture");
    assert_int_equal(render_write_png(other, &img, NULL), -1);
    FILE *f = fopen(other, "rb");
    char buf[64] = {0};
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "my notes, not a picture");
    /* No temporary file left behind by either. */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", test_dir());
    assert_int_not_equal(system(cmd), 0);
    free(img.rgb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_area_and_depth),
        cmocka_unit_test(test_depth_order_independent),
        cmocka_unit_test(test_triangle_and_lines),
        cmocka_unit_test(test_camera_fits_box),
        cmocka_unit_test(test_colour_map),
        cmocka_unit_test(test_range_percentiles),
        cmocka_unit_test(test_picture_of_known_particles),
        cmocka_unit_test(test_posed_colliders),
        cmocka_unit_test(test_png_written_and_guarded),
    };
    return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
