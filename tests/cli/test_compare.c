/* `mizu compare`: outputs of real runs, and copies of them with one value changed through the
 * HDF5 C API; exit codes, the messages, --json, --frames, --fields, tolerances. */
#include "test_files.h"
#include "test_util.h"

#include <cJSON.h>
#include <hdf5.h>
#include <math.h>

#define VEL "/particles/all/velocity/value"

static const char *A, *B, *SHORT, *FEWER, *RIGID, *CHANGED;
static float changed_from, changed_to; /* velocity frame 2 particle 100 x in A and in CHANGED */

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* Element (i, j, k) of a rank-1, -2 or -3 dataset of path, as type (a native type of size bytes):
 * its old value into *old (may be NULL), then v written in its place (v NULL: read only). */
static void poke(const char *path, const char *dataset, const hsize_t *at, hid_t type,
                 void *old, const void *v)
{
    hid_t f = H5Fopen(path, v ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t fs = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(fs);
    hsize_t one[3] = {1, 1, 1};
    hid_t ms = H5Screate_simple(1, one, NULL);
    assert_true(H5Sselect_hyperslab(fs, H5S_SELECT_SET, at, NULL, one, NULL) >= 0);
    assert_true(rank >= 1);
    if (old)
        assert_true(H5Dread(d, type, ms, fs, H5P_DEFAULT, old) >= 0);
    if (v)
        assert_true(H5Dwrite(d, type, ms, fs, H5P_DEFAULT, v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    assert_true(H5Fclose(f) >= 0);
}

/* A copy of src named name with one float of dataset changed to v; the old value. */
static float copy_with_float(const char *src, const char *name, const char *dataset,
                             hsize_t frame, hsize_t row, hsize_t comp, float v)
{
    float old;
    hsize_t at[3] = {frame, row, comp};
    copy_file(src, test_path(name));
    poke(test_path(name), dataset, at, H5T_NATIVE_FLOAT, &old, &v);
    return old;
}

/* `mizu compare ARGS`: its exit status; stdout and stderr into *out and *err (freed by the
 * caller; either may be NULL). */
static int compare(const char *args, char **out, char **err)
{
    char cmd[2048];
    const char *out_path = test_path("compare-stdout.txt");
    snprintf(cmd, sizeof cmd, "compare %s >%s", args, out_path);
    char *e = NULL;
    int rc = run_mizu(cmd, &e);
    char *o = read_file_text(out_path);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

/* compare ARGS must exit rc with needle in stdout (in_out) or stderr. */
static void expect(const char *args, int rc, bool in_out, const char *needle)
{
    char *out, *err;
    int got = compare(args, &out, &err);
    const char *text = in_out ? out : err;
    if (got != rc || (needle && !strstr(text, needle)))
        fail_msg("mizu compare %s: exit %d (wanted %d), %s lacks '%s'\nstdout:\n%s\nstderr:\n%s",
                 args, got, rc, in_out ? "stdout" : "stderr", needle ? needle : "", out, err);
    free(out);
    free(err);
}

static void run_scene(const char *args, const char *out)
{
    char cmd[1024], *err;
    snprintf(cmd, sizeof cmd, "run %s -q -o %s", args, out);
    int rc = run_mizu(cmd, &err);
    if (rc != 0)
        fail_msg("mizu %s: exit %d: %s", cmd, rc, err);
    free(err);
}

/* The outputs every test reads: two identical runs, a shorter one, one with fewer fields, one
 * with a rigid body (736 particles), and A with one velocity value changed. */
static int setup(void **state)
{
    (void)state;
    A = strdup(test_path("a.h5"));
    B = strdup(test_path("b.h5"));
    SHORT = strdup(test_path("short.h5"));
    FEWER = strdup(test_path("fewer.h5"));
    RIGID = strdup(test_path("rigid.h5"));
    CHANGED = strdup(test_path("changed.h5"));
    run_scene("scenes/dam_break_2d.json --frames 3", A);
    run_scene("scenes/dam_break_2d.json --frames 3", B);
    run_scene("scenes/dam_break_2d.json --frames 2", SHORT);
    run_scene("scenes/dam_break_2d.json --frames 3 --set 'output.fields=[\"position\","
              "\"velocity\"]'", FEWER);
    run_scene("scenes/pbf_box_float.json --frames 2", RIGID);
    float v;
    hsize_t at[3] = {2, 100, 0};
    poke(A, VEL, at, H5T_NATIVE_FLOAT, &v, NULL);
    changed_from = v;
    changed_to = v + 1e-4f;
    assert_true(changed_to != changed_from);
    copy_with_float(A, "changed.h5", VEL, 2, 100, 0, changed_to);
    return 0;
}

static void test_identical_outputs_match(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "%s %s", A, A);
    expect(args, 0, true, "mizu compare: match (4 fields, 4 frames, 2500 particles, identical "
                          "bits)");
    snprintf(args, sizeof args, "%s %s", A, B);
    expect(args, 0, true, "mizu compare: match (4 fields, 4 frames, 2500 particles, identical "
                          "bits)");
    expect(args, 0, true, "  velocity              4  0           0           0           "
                          "match");
    snprintf(args, sizeof args, "%s %s", RIGID, RIGID);
    expect(args, 0, true, "match (3 fields, 2 rigid-body series, 3 frames, 736 particles");
}

static void test_one_value_changed(void **state)
{
    (void)state;
    char args[1024], want[256];
    snprintf(args, sizeof args, "%s %s", A, CHANGED);
    snprintf(want, sizeof want, "mizu compare: differs: velocity frame 2 particle 100 x: %.9g vs "
             "%.9g (|diff| ", changed_from, changed_to);
    expect(args, 1, true, want);
    expect(args, 1, true, "differs (1 value)");
    expect(args, 1, true, "  position              4  0           0           0           "
                          "match");
    /* The change is about 1e-4: a tolerance above it matches, one below does not. */
    snprintf(args, sizeof args, "%s %s --atol 1e-3", A, CHANGED);
    expect(args, 0, true, "mizu compare: match (4 fields, 4 frames, 2500 particles, within "
                          "atol 0.001, rtol 0)");
    snprintf(args, sizeof args, "%s %s --atol 1e-6", A, CHANGED);
    expect(args, 1, true, "velocity frame 2 particle 100 x:");
    expect(args, 1, true, "> tolerance 1e-06)");
    /* rtol scales |b|, the second file's value. */
    double rel = fabs((double)changed_to - changed_from) / fabs((double)changed_to);
    snprintf(args, sizeof args, "%s %s --rtol %.9g", A, CHANGED, rel * 1.01);
    expect(args, 0, true, "mizu compare: match");
    snprintf(args, sizeof args, "%s %s --rtol %.9g", A, CHANGED, rel * 0.99);
    expect(args, 1, true, "velocity frame 2 particle 100 x:");
}

/* Bits, not numbers: -0 differs from 0 unless a tolerance is given; NaN matches the same NaN. */
static void test_signed_zero_and_nan(void **state)
{
    (void)state;
    char args[1024];
    float old = copy_with_float(A, "negzero.h5", VEL, 1, 7, 2, -0.0f);
    assert_true(old == 0 && !signbit(old)); /* z of a 2D run */
    snprintf(args, sizeof args, "%s %s", A, test_path("negzero.h5"));
    expect(args, 1, true, "differs: velocity frame 1 particle 7 z: 0 vs -0 (|diff| 0; bits "
                          "0x00000000 vs 0x80000000)");
    snprintf(args, sizeof args, "%s %s --atol 0", A, test_path("negzero.h5"));
    expect(args, 0, true, "mizu compare: match");

    copy_with_float(A, "nan1.h5", "/particles/all/position/value", 3, 5, 1, NAN);
    copy_with_float(A, "nan2.h5", "/particles/all/position/value", 3, 5, 1, NAN);
    snprintf(args, sizeof args, "%s %s", test_path("nan1.h5"), test_path("nan2.h5"));
    expect(args, 0, true, "mizu compare: match");
    snprintf(args, sizeof args, "%s %s --atol 1", A, test_path("nan1.h5"));
    expect(args, 1, true, "differs: position frame 3 particle 5 y:");
    expect(args, 1, true, "vs nan (|diff| nan > tolerance 1)");
}

/* The frames' steps and times are compared too (every series shares them). */
static void test_time_changed(void **state)
{
    (void)state;
    char args[1024];
    copy_file(A, test_path("time.h5"));
    double t, t2;
    hsize_t at[1] = {1};
    poke(test_path("time.h5"), "/particles/all/position/time", at, H5T_NATIVE_DOUBLE, &t, NULL);
    t2 = nextafter(t, 1);
    poke(test_path("time.h5"), "/particles/all/position/time", at, H5T_NATIVE_DOUBLE, NULL, &t2);
    snprintf(args, sizeof args, "%s %s --fields density", A, test_path("time.h5"));
    expect(args, 1, true, "differs: time frame 1: ");
    expect(args, 1, true, "  density               4  0           0           0           "
                          "match");
}

static void test_rigid_observables(void **state)
{
    (void)state;
    char args[1024], want[256];
    float old = copy_with_float(RIGID, "rigid2.h5", "/observables/rigid/orientation/value", 1,
                                0, 3, 0.5f);
    assert_true(old != 0.5f);
    int32_t body;
    hsize_t at[1] = {0};
    poke(RIGID, "/observables/rigid/body", at, H5T_NATIVE_INT32, &body, NULL);
    snprintf(args, sizeof args, "%s %s", RIGID, test_path("rigid2.h5"));
    snprintf(want, sizeof want, "differs: orientation frame 1 rigid body %d w: ", (int)body);
    expect(args, 1, true, want);
    snprintf(args, sizeof args, "%s %s --fields position,velocity", RIGID,
             test_path("rigid2.h5"));
    expect(args, 0, true, "match (2 fields, 3 frames, 736 particles");
}

static void test_not_comparable(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "%s %s", A, RIGID);
    expect(args, 2, false, "has 2500 particles");
    snprintf(args, sizeof args, "%s %s", A, SHORT);
    expect(args, 2, false, "has 4 frames");
    snprintf(args, sizeof args, "%s %s --frames 0:2", A, SHORT);
    expect(args, 0, true, "mizu compare: match (4 fields, 3 frames");
    /* Fields only one file holds: not compared unless named. */
    snprintf(args, sizeof args, "%s %s", A, FEWER);
    expect(args, 0, true, "not compared: density, pressure (only in");
    snprintf(args, sizeof args, "%s %s --fields velocity,density", A, FEWER);
    expect(args, 2, false, "field density is in");
    snprintf(args, sizeof args, "%s %s --fields vel", A, B);
    expect(args, 2, false, "unknown field 'vel' (both files hold position, velocity, density, "
                           "pressure)");
    snprintf(args, sizeof args, "%s %s --frames 4", A, B);
    expect(args, 2, false, "--frames 4 is out of range: both files hold frames 0..3");
    snprintf(args, sizeof args, "%s %s --frames 1:3", A, SHORT);
    expect(args, 2, false, "holds frames 0..2 only");
    /* Not outputs. */
    write_text(test_path("notes.txt"), "not HDF5\n");
    snprintf(args, sizeof args, "%s %s", A, test_path("notes.txt"));
    expect(args, 2, false, "notes.txt: not a mizu output file: not an HDF5 file");
    snprintf(args, sizeof args, "%s %s", test_path("missing.h5"), A);
    expect(args, 2, false, "cannot open");
    hid_t f = H5Fcreate(test_path("plain.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    H5Fclose(f);
    snprintf(args, sizeof args, "%s %s", A, test_path("plain.h5"));
    expect(args, 2, false, "plain.h5: not a mizu output file: /h5md missing");
    /* Rows are matched by id: different ids are not the same particles. */
    copy_file(A, test_path("ids.h5"));
    int32_t id = 99999;
    hsize_t at[1] = {3};
    poke(test_path("ids.h5"), "/particles/all/id", at, H5T_NATIVE_INT32, NULL, &id);
    snprintf(args, sizeof args, "%s %s", A, test_path("ids.h5"));
    expect(args, 2, false, "particle ids differ: row 3 is 3 in");
}

static void test_usage_errors(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "%s %s --frames 3:1", A, B);
    expect(args, 2, false, "usage:");
    snprintf(args, sizeof args, "%s %s --atol -1", A, B);
    expect(args, 2, false, "--atol wants a number >= 0");
    snprintf(args, sizeof args, "%s", A);
    expect(args, 2, false, "compare takes two output files");
}

/* --frames: a difference outside the range is not seen. */
static void test_frames_restrict(void **state)
{
    (void)state;
    static const struct {
        const char *range;
        int rc;
    } cases[] = {{"0:1", 0}, {"3", 0}, {"3:", 0}, {"2", 1}, {"1:3", 1}, {"0:", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[1024];
        snprintf(args, sizeof args, "%s %s --frames %s", A, CHANGED, cases[i].range);
        expect(args, cases[i].rc, true, cases[i].rc ? "velocity frame 2 particle 100"
                                                    : "mizu compare: match");
    }
}

static cJSON *json_of(const char *args, int rc)
{
    char *out;
    int got = compare(args, &out, NULL);
    cJSON *j = cJSON_Parse(out);
    if (got != rc || !j)
        fail_msg("mizu compare %s: exit %d (wanted %d); stdout:\n%s", args, got, rc, out);
    free(out);
    return j;
}

static const cJSON *at_path(const cJSON *j, const char *a, const char *b, const char *c)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (x && b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (x && c)
        x = cJSON_GetObjectItemCaseSensitive(x, c);
    assert_non_null(x);
    return x;
}

static void test_json(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "%s %s --json", A, CHANGED);
    cJSON *j = json_of(args, 1);
    assert_string_equal(at_path(j, "verdict", NULL, NULL)->valuestring, "differs");
    assert_int_equal(at_path(j, "exit_code", NULL, NULL)->valueint, 1);
    assert_string_equal(at_path(j, "mode", NULL, NULL)->valuestring, "identical bits");
    assert_int_equal(at_path(j, "particles", NULL, NULL)->valueint, 2500);
    const cJSON *ff = at_path(j, "fields", "velocity", "first_failure");
    assert_int_equal(at_path(ff, "frame", NULL, NULL)->valueint, 2);
    assert_int_equal(at_path(ff, "id", NULL, NULL)->valueint, 100);
    assert_string_equal(at_path(ff, "component", NULL, NULL)->valuestring, "x");
    assert_true((float)at_path(ff, "a", NULL, NULL)->valuedouble == changed_from);
    assert_true((float)at_path(ff, "b", NULL, NULL)->valuedouble == changed_to);
    assert_int_equal(at_path(j, "fields", "velocity", "mismatches")->valueint, 1);
    assert_true(fabs(at_path(j, "fields", "velocity", "max_abs")->valuedouble -
                     fabs((double)changed_to - changed_from)) < 1e-12);
    assert_true(cJSON_IsNull(at_path(j, "fields", "position", "first_failure")));
    assert_true(cJSON_IsNull(at_path(j, "time", "first_failure", NULL)));
    assert_non_null(strstr(at_path(j, "message", NULL, NULL)->valuestring,
                           "velocity frame 2 particle 100 x"));
    cJSON_Delete(j);

    snprintf(args, sizeof args, "%s %s --json --atol 0.01 --fields velocity", A, CHANGED);
    j = json_of(args, 0);
    assert_string_equal(at_path(j, "verdict", NULL, NULL)->valuestring, "match");
    assert_true(at_path(j, "atol", NULL, NULL)->valuedouble == 0.01);
    assert_true(cJSON_IsNull(at_path(j, "fields", "velocity", "first_failure")));
    assert_null(cJSON_GetObjectItemCaseSensitive(at_path(j, "fields", NULL, NULL), "position"));
    cJSON_Delete(j);

    snprintf(args, sizeof args, "%s %s --json", A, RIGID);
    j = json_of(args, 2);
    assert_string_equal(at_path(j, "verdict", NULL, NULL)->valuestring, "not comparable");
    assert_int_equal(at_path(j, "exit_code", NULL, NULL)->valueint, 2);
    assert_non_null(strstr(at_path(j, "message", NULL, NULL)->valuestring, "736"));
    cJSON_Delete(j);
}

static int teardown(void **state)
{
    (void)state;
    free((void *)A);
    free((void *)B);
    free((void *)SHORT);
    free((void *)FEWER);
    free((void *)RIGID);
    free((void *)CHANGED);
    return 0;
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_outputs_match),
        cmocka_unit_test(test_one_value_changed),
        cmocka_unit_test(test_signed_zero_and_nan),
        cmocka_unit_test(test_time_changed),
        cmocka_unit_test(test_rigid_observables),
        cmocka_unit_test(test_not_comparable),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_frames_restrict),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests_name("compare", tests, setup, teardown);
}
