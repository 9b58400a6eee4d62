/* `mizu render` and `--preview` on the shipped scenes: the 3D dam break (WCSPH), the cloth
 * drape and the FLIP dam break, a few frames each. The PNGs are read back: their size, coloured
 * particles inside the plot and nowhere else, the colour bar from yellow to purple; the same
 * picture twice is the same bytes; --every writes numbered frames; errors exit 1 or 2 and touch
 * nothing. */
#include "test_util.h"
#include "util/err.h"
#include "render/png_read.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <sys/stat.h>

enum { PANEL = 128, MARGIN = 12 };

static const char *DAM, *CLOTH, *FLIP;

static const char *run_scene(const char *scene, const char *name)
{
    char args[1024], *err = NULL;
    const char *out = test_path(name);
    snprintf(args, sizeof args, "run scenes/%s.json -o %s --frames 3 -q", scene, out);
    int rc = run_mizu(args, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err ? err : "");
    free(err);
    return rc == 0 ? strdup(out) : NULL;
}

static int setup(void **state)
{
    (void)state;
    DAM = run_scene("dam_break_3d", "dam.h5");
    CLOTH = run_scene("cloth_drape", "cloth.h5");
    FLIP = run_scene("flip_dam_break_3d", "flip.h5");
    return DAM && CLOTH && FLIP ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free((void *)DAM);
    free((void *)CLOTH);
    free((void *)FLIP);
    return 0;
}

/* A pixel of a field's colour: viridis is never grey, the background, ink and solids are. */
static bool coloured(const unsigned char *p)
{
    int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
    int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
    return mx - mn > 40;
}

/* Check a picture of a field: size, particles in the plot, none outside it, the colour bar. */
static void check_picture(const char *png, int w, int h, size_t min_particle_pixels)
{
    test_png p = {0};
    assert_int_equal(png_load(png, &p), 0);
    assert_int_equal(p.w, w);
    assert_int_equal(p.h, h);
    size_t inside = 0, outside = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w - PANEL; x++) {
            bool in_plot = x >= MARGIN && x < w - PANEL - MARGIN && y >= 30 && y < h - MARGIN;
            if (coloured(png_px(&p, x, y)))
                in_plot ? inside++ : outside++;
        }
    if (inside < min_particle_pixels)
        fprintf(stderr, "%s: %zu coloured pixels in the plot\n", png, inside);
    assert_true(inside >= min_particle_pixels);
    assert_int_equal(outside, 0);
    /* The bar: a column 18 pixels wide in the panel, yellow at its top, purple at its foot. */
    int bx = w - PANEL + 8 + 9, top = -1, foot = -1;
    for (int y = 0; y < h; y++)
        if (coloured(png_px(&p, bx, y))) {
            if (top < 0)
                top = y;
            foot = y;
        }
    assert_true(top > 0 && foot - top > h / 3);
    const unsigned char *t = png_px(&p, bx, top), *f = png_px(&p, bx, foot);
    assert_true(t[0] > 200 && t[1] > 200 && t[2] < 100); /* #fde725 */
    assert_true(f[0] < 100 && f[1] < 30 && f[2] > 60);   /* #440154 */
    free(p.rgb);
}

static void render_ok(const char *args, const char *expect_out)
{
    char *err = NULL, full[2048], outpath[600];
    snprintf(outpath, sizeof outpath, "%s/stdout.txt", test_dir());
    snprintf(full, sizeof full, "%s >%s", args, outpath);
    int rc = run_mizu(full, &err);
    if (rc != 0)
        fprintf(stderr, "mizu %s: %s", args, err ? err : "");
    assert_int_equal(rc, 0);
    /* Nothing from HDF5's own error printer (a lookup through a dataset printed a stack). */
    if (err && strstr(err, "HDF5"))
        fail_msg("mizu %s printed: %.300s", args, err);
    free(err);
    if (expect_out) {
        FILE *f = fopen(outpath, "rb");
        char line[1024] = {0};
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof line, f));
        fclose(f);
        assert_non_null(strstr(line, expect_out)); /* says where the picture went */
    }
}

static void test_shipped_scenes(void **state)
{
    (void)state;
    char args[1024];
    const char *dam = test_path("dam.png"), *cloth = test_path("cloth.png"),
               *flip = test_path("flip.png");
    snprintf(args, sizeof args, "render %s -o %s", DAM, dam);
    render_ok(args, dam);
    check_picture(dam, 1280, 720, 2000);
    snprintf(args, sizeof args, "render %s -o %s --size 800x500 --view top", CLOTH, cloth);
    render_ok(args, cloth);
    check_picture(cloth, 800, 500, 2000);
    snprintf(args, sizeof args, "render %s -o %s --frame 1 --field density --view side", FLIP,
             flip);
    render_ok(args, flip);
    check_picture(flip, 1280, 720, 2000);
}

static bool same_bytes(const char *a, const char *b)
{
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

/* SPH's wall particles are in the output once, as many as mizu check counts, and the picture
 * shows the far walls (light grey) without hiding the water; a cloth scene has none. */
static void test_boundary_particles(void **state)
{
    (void)state;
    char args[1024], *err = NULL, line[512];
    const char *out = test_path("check.txt");
    snprintf(args, sizeof args, "check scenes/dam_break_3d.json >%s", out);
    assert_int_equal(run_mizu(args, &err), 0);
    free(err);
    FILE *f = fopen(out, "rb");
    unsigned long counted = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "boundary particles"))
            counted = strtoul(strstr(line, "and ") + 4, NULL, 10);
    fclose(f);
    assert_true(counted > 1000);
    snprintf(args, sizeof args, "info %s >%s", DAM, out);
    assert_int_equal(run_mizu(args, NULL), 0);
    char *info = read_file(out, NULL);
    snprintf(line, sizeof line, "%lu wall and collider particles in /particles/boundary", counted);
    assert_non_null(strstr(info, line));
    free(info);
    snprintf(args, sizeof args, "info %s >%s", CLOTH, out);
    assert_int_equal(run_mizu(args, NULL), 0);
    info = read_file(out, NULL);
    assert_null(strstr(info, "/particles/boundary"));
    free(info);
    /* The render: wall-grey pixels (214, 214, 218, lit) in numbers, and the water still seen. */
    const char *png = test_path("walls.png");
    snprintf(args, sizeof args, "render %s -o %s -q", DAM, png);
    render_ok(args, NULL);
    check_picture(png, 1280, 720, 20000);
    test_png p = {0};
    assert_int_equal(png_load(png, &p), 0);
    size_t grey = 0;
    for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w - PANEL; x++) {
            const unsigned char *c = png_px(&p, x, y);
            grey += !coloured(c) && c[0] > 120 && c[0] < 235 && c[2] >= c[0];
        }
    assert_true(grey > 50000);
    free(p.rgb);
}

static void test_deterministic_and_default_path(void **state)
{
    (void)state;
    char args[1024];
    const char *a = test_path("a.png"), *b = test_path("b.png");
    snprintf(args, sizeof args, "render %s -o %s --field pressure -q", DAM, a);
    render_ok(args, NULL);
    snprintf(args, sizeof args, "render %s -o %s --field pressure -q", DAM, b);
    render_ok(args, NULL);
    assert_true(same_bytes(a, b));
    /* Without -o: beside the input, its name with .png; replaced on the next render. */
    snprintf(args, sizeof args, "render %s", DAM);
    render_ok(args, test_path("dam.png"));
    render_ok(args, test_path("dam.png"));
    /* -o DIR: the input's name inside it. */
    mkdir(test_path("pics"), 0777);
    snprintf(args, sizeof args, "render %s -o %s", CLOTH, test_path("pics"));
    render_ok(args, test_path("pics/cloth.png"));
}

static void test_every_writes_numbered_frames(void **state)
{
    (void)state;
    char args[1024];
    const char *dir = test_path("frames");
    snprintf(args, sizeof args, "render %s --every 2 -o %s", FLIP, dir);
    render_ok(args, dir);
    /* 4 frame records (0..3): 0 and 2 */
    char p0[700], p2[700], p1[700];
    snprintf(p0, sizeof p0, "%s/frame_000000.png", dir);
    snprintf(p1, sizeof p1, "%s/frame_000001.png", dir);
    snprintf(p2, sizeof p2, "%s/frame_000002.png", dir);
    struct stat sb;
    assert_int_equal(stat(p0, &sb), 0);
    assert_int_equal(stat(p2, &sb), 0);
    assert_int_not_equal(stat(p1, &sb), 0);
    check_picture(p2, 1280, 720, 2000);

    /* scripts/frames-to-mp4.sh: a two-frame video where ffmpeg is installed; a clear refusal
     * where it is not. */
    char cmd[2048], mp4[700], log[700];
    snprintf(mp4, sizeof mp4, "%s/frames.mp4", test_dir());
    snprintf(log, sizeof log, "%s/mp4.txt", test_dir());
    snprintf(cmd, sizeof cmd, "scripts/frames-to-mp4.sh %s %s >%s 2>&1", dir, mp4, log);
    int rc = system(cmd);
    char *said = read_file(log, NULL);
    if (system("command -v ffmpeg >/dev/null 2>&1") != 0) {
        print_message("ffmpeg not installed: checked only that frames-to-mp4.sh says so\n");
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(said, "ffmpeg is not installed"));
        free(said);
        return;
    }
    if (rc != 0)
        fail_msg("frames-to-mp4.sh: %s", said);
    free(said);
    snprintf(cmd, sizeof cmd, "ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                              "stream=nb_read_frames -of csv=p=0 %s >%s 2>&1", mp4, log);
    assert_int_equal(system(cmd), 0);
    said = read_file(log, NULL);
    assert_int_equal(atoi(said), 2);
    free(said);
    snprintf(cmd, sizeof cmd, "scripts/frames-to-mp4.sh %s %s >/dev/null 2>&1", dir, mp4);
    assert_int_not_equal(system(cmd), 0); /* not replacing the video */
}

static void test_preview(void **state)
{
    (void)state;
    char args[1024], *err = NULL;
    const char *out = test_path("coupled.h5");
    snprintf(args, sizeof args, "check scenes/coupled.json -o %s --preview >/dev/null", out);
    assert_int_equal(run_mizu(args, &err), 0);
    free(err);
    test_png p = {0};
    assert_int_equal(png_load(test_path("coupled.preview.png"), &p), 0);
    assert_int_equal(p.w, 1280);
    /* Coloured by kind: the fluid's blue, the cloth's orange and the rigids' grey-blue are in
     * the legend at the panel's top left. */
    size_t blue = 0, orange = 0;
    for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w - PANEL; x++) {
            const unsigned char *c = png_px(&p, x, y);
            blue += c[2] > c[0] + 60 && c[2] > 120;
            orange += c[0] > c[2] + 80 && c[0] > 120;
        }
    assert_true(blue > 1000 && orange > 1000);
    free(p.rgb);
    /* --preview with --resume is refused: a resumed run has no set-up to show. */
    assert_int_equal(run_mizu("run --resume x.ckpt.h5 --preview", NULL), 2);
}

static void expect_fail(const char *args, int code, const char *words)
{
    char *err = NULL;
    int rc = run_mizu(args, &err);
    if (rc != code || !err || !strstr(err, words))
        fprintf(stderr, "mizu %s: exit %d, %s", args, rc, err ? err : "");
    assert_int_equal(rc, code);
    assert_non_null(strstr(err, words));
    free(err);
}

static void test_errors(void **state)
{
    (void)state;
    char args[1024];
    expect_fail("render /nonexistent/x.h5", 1, "/nonexistent/x.h5");
    snprintf(args, sizeof args, "render %s --frame 99", DAM);
    expect_fail(args, 2, "frames 0 to 3");
    snprintf(args, sizeof args, "render %s --every 2 -o x.png", DAM);
    expect_fail(args, 2, "folder");
    snprintf(args, sizeof args, "render %s --view diagonal", DAM);
    expect_fail(args, 2, "--view");
    snprintf(args, sizeof args, "render %s --size 12", DAM);
    expect_fail(args, 2, "--size");
    snprintf(args, sizeof args, "render %s --size 100x100", DAM);
    expect_fail(args, 2, "pixels wide");
    snprintf(args, sizeof args, "render %s --field temperature", DAM);
    expect_fail(args, 2, "temperature");
    snprintf(args, sizeof args, "render %s --field pressure", CLOTH);
    expect_fail(args, 2, "no pressure");
    snprintf(args, sizeof args, "render %s --range 3:1", DAM);
    expect_fail(args, 2, "--range");
    /* A file that is not mizu's picture is left alone. */
    const char *mine = test_path("mine.png");
    write_text(mine, "keep me");
    snprintf(args, sizeof args, "render %s -o %s", DAM, mine);
    expect_fail(args, 1, "not a picture mizu wrote");
    FILE *f = fopen(mine, "rb");
    char buf[32] = {0};
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "keep me");
    /* A text file given as the output file: not HDF5. */
    snprintf(args, sizeof args, "render %s", mine);
    expect_fail(args, 1, "not an HDF5 file");
}

/* A damaged file: body indices far beyond the particle count (no allocation of their size),
 * NaN and infinite positions, a triangle naming a particle that does not exist. It renders,
 * drawing what it can. */
static void test_damaged_file(void **state)
{
    (void)state;
    char cmd[2048];
    const char *bad = test_path("damaged.h5");
    snprintf(cmd, sizeof cmd, "cp %s %s", CLOTH, bad);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/particles/all/body", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    size_t n = (size_t)H5Sget_simple_extent_npoints(sp);
    uint32_t *body = malloc(n * sizeof *body);
    for (size_t i = 0; i < n; i++)
        body[i] = 0x7fffffffu - (uint32_t)i;
    assert_true(H5Dwrite(d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, body) >= 0);
    free(body);
    H5Sclose(sp);
    H5Dclose(d);
    d = H5Dopen2(f, "/particles/all/position/value", H5P_DEFAULT);
    hsize_t start[3] = {3, 0, 0}, count[3] = {1, 2, 3};
    float junk[6] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, NAN};
    sp = H5Dget_space(d);
    hid_t ms = H5Screate_simple(3, count, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
    assert_true(H5Dwrite(d, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, junk) >= 0);
    H5Sclose(ms);
    H5Sclose(sp);
    H5Dclose(d);
    d = H5Dopen2(f, "/connectivity/triangles", H5P_DEFAULT);
    sp = H5Dget_space(d);
    hsize_t one[2] = {0, 0}, c1[2] = {1, 1};
    uint32_t far = 0xfffffff0u;
    ms = H5Screate_simple(2, c1, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, one, NULL, c1, NULL);
    assert_true(H5Dwrite(d, H5T_NATIVE_UINT32, ms, sp, H5P_DEFAULT, &far) >= 0);
    H5Sclose(ms);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    char args[1024];
    snprintf(args, sizeof args, "render %s -o %s -q", bad, test_path("damaged.png"));
    render_ok(args, NULL);
    test_png p = {0};
    assert_int_equal(png_load(test_path("damaged.png"), &p), 0);
    assert_int_equal(p.w, 1280);
    free(p.rgb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_scenes),
        cmocka_unit_test(test_boundary_particles),
        cmocka_unit_test(test_deterministic_and_default_path),
        cmocka_unit_test(test_every_writes_numbered_frames),
        cmocka_unit_test(test_preview),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_damaged_file),
    };
    return cmocka_run_group_tests_name("render_cli", tests, setup, teardown);
}
