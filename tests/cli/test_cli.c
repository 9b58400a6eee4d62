/* The mizu binary end to end: exit codes, messages, output files, determinism, failures. */
#include "test_files.h"
#include "test_util.h"

#include <hdf5.h>
#include <math.h>
#include <sys/stat.h>

static const char *fall_scene =
    "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 30, \"frames\": 10, \"substeps\": 4},"
    " \"domain\": {\"min\": [-20,-20,-20], \"max\": [20,20,20]},"
    " \"fluids\": [{\"positions\": [[0,10,0], [1,5,0]], \"velocities\": [[0,2,0], [1,0,0]],"
    "   \"spacing\": 0.1}],"
    " \"output\": {\"every\": 3}}";

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    b[*len] = '\0'; /* callers strstr the text */
    fclose(f);
    return b;
}

/* Files a and b hold the same bytes, more than min_len of them. */
static void assert_same_bytes(const char *a, const char *b, size_t min_len)
{
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    assert_non_null(x);
    assert_non_null(y);
    assert_true(la == lb && la > min_len);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
}

static void test_run_writes_decimated_frames(void **state)
{
    (void)state;
    const char *scene = test_path("fall.json"), *out = test_path("fall.h5");
    write_text(scene, fall_scene);
    char args[1024], *err;
    snprintf(args, sizeof args, "run %s -o %s --set simulation.gravity=[0,-9.81,0]", scene, out);
    int rc = run_mizu(args, &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_non_null(strstr(err, "mizu: done: 2 particles"));
    free(err);
    assert_true(exists(test_path("fall.xdmf")));

    /* frames 0, 3, 6, 9: four records; steps count substeps; rows are particle ids. */
    hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/particles/all/position/value", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[3];
    assert_int_equal(H5Sget_simple_extent_dims(sp, dims, NULL), 3);
    assert_true(dims[0] == 4 && dims[1] == 2 && dims[2] == 3);
    float pos[4][2][3];
    assert_true(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, pos) >= 0);
    long long steps[4];
    double times[4];
    hid_t ds = H5Dopen2(f, "/particles/all/position/step", H5P_DEFAULT);
    hid_t dt = H5Dopen2(f, "/particles/all/position/time", H5P_DEFAULT);
    assert_true(H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps) >= 0);
    assert_true(H5Dread(dt, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, times) >= 0);
    double h = 1.0 / 120.0, g = 9.81;
    for (int k = 0; k < 4; k++) {
        int n = 12 * k; /* substeps so far */
        assert_int_equal(steps[k], n);
        assert_true(fabs(times[k] - n * h) < 1e-12);
        double y0 = 10 + 2 * n * h - g * h * h * n * (n + 1) / 2;
        double y1 = 5 - g * h * h * n * (n + 1) / 2;
        assert_true(fabs(pos[k][0][1] - y0) < 1e-5 * fabs(y0));
        assert_true(fabs(pos[k][1][1] - y1) < 1e-5 * fabs(y1));
        assert_true(fabs(pos[k][1][0] - (1 + n * h)) < 1e-5);
    }
    H5Dclose(ds);
    H5Dclose(dt);
    H5Sclose(sp);
    H5Dclose(d);
    /* The override is on record. */
    assert_true(H5Lexists(f, "/parameters/scene", H5P_DEFAULT) > 0);
    H5Fclose(f);
    size_t len;
    char *bytes = slurp(out, &len);
    assert_non_null(bytes);
    bool found = false;
    for (size_t i = 0; i + 30 < len && !found; i++)
        found = !memcmp(bytes + i, "simulation.gravity=[0,-9.81,0]", 30);
    assert_true(found);
    free(bytes);
}

static void test_identical_runs_identical_files(void **state)
{
    (void)state;
    char args[1024];
    const char *a = test_path("det_a.h5"), *b = test_path("det_b.h5");
    snprintf(args, sizeof args, "run scenes/falling_block.json --frames 20 --quiet -o %s", a);
    assert_int_equal(run_mizu(args, NULL), 0);
    snprintf(args, sizeof args, "run scenes/falling_block.json --frames 20 --quiet -o %s", b);
    assert_int_equal(run_mizu(args, NULL), 0);
    assert_same_bytes(a, b, 100000);
}

/* Kernels read from the source tree (--kernel-dir, nested folders and their #include lines)
 * give the same bytes as the copies built into the binary; a missing one is named. */
static void test_kernel_dir_matches_embedded(void **state)
{
    (void)state;
    char args[1024], *err;
    const char *a = test_path("kern_embedded.h5"), *b = test_path("kern_dir.h5");
    const char *scene = "scenes/dam_break_2d.json --frames 3 --quiet";
    snprintf(args, sizeof args, "run %s -o %s", scene, a);
    assert_int_equal(run_mizu(args, NULL), 0);
    snprintf(args, sizeof args, "run %s --kernel-dir kernels -o %s", scene, b);
    assert_int_equal(run_mizu(args, NULL), 0);
    assert_same_bytes(a, b, 10000);
    snprintf(args, sizeof args, "run %s --kernel-dir /nonexistent-kernels -o %s", scene, b);
    assert_int_equal(run_mizu(args, &err), 1);
    assert_non_null(strstr(err, "/nonexistent-kernels/"));
    assert_non_null(strstr(err, "No such file or directory"));
    free(err);
}

static void test_unwritable_output(void **state)
{
    (void)state;
    char *err;
    int rc = run_mizu("run scenes/falling_block.json --frames 2 -o /nonexistent-dir/out.h5",
                      &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "/nonexistent-dir/out.h5"));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_false(exists("/nonexistent-dir/out.h5"));
    free(err);
    /* A directory given as the output: a clear message, the directory untouched. */
    char args[512];
    snprintf(args, sizeof args, "run scenes/falling_block.json --frames 2 -o %s", test_dir());
    assert_int_equal(run_mizu(args, &err), 1);
    assert_non_null(strstr(err, test_dir()));
    free(err);
}

static void test_bad_scene_keeps_old_output(void **state)
{
    (void)state;
    const char *out = test_path("keep.h5");
    write_text(out, "an earlier result");
    char args[512], *err;
    snprintf(args, sizeof args, "run tests/data/bad_negative_spacing.json -o %s", out);
    assert_int_equal(run_mizu(args, &err), 2);
    assert_string_equal(err, "tests/data/bad_negative_spacing.json: fluids[0].spacing must be > 0 "
                             "(got -0.01)\n");
    free(err);
    size_t len;
    char *kept = slurp(out, &len);
    assert_true(len == 17 && !memcmp(kept, "an earlier result", 17));
    free(kept);
}

/* An adaptive SPH frame whose step collapses (a speed of sound of 1 mm/s: the flow is 1000
 * times faster, walls push hard) warns once it takes a thousand steps, naming the criterion and
 * its value; the run itself goes on and finishes. */
static void test_collapsed_step_warns(void **state)
{
    (void)state;
    char args[512], *err;
    snprintf(args, sizeof args,
             "run scenes/dam_break_2d.json --set fluids[0].spacing=0.004 "
             "--set fluids[0].speed_of_sound=0.001 --set simulation.fps=0.25 --frames 1 -q -o %s",
             test_path("collapse.h5"));
    assert_int_equal(run_mizu(args, &err), 0);
    if (!strstr(err, "mizu: warning: the time step collapsed: 1000 steps so far in the frame "
                     "that ends at t = 4 s") ||
        !strstr(err, "limited by the ") || !strstr(err, "criterion dt = cfl"))
        fail_msg("no collapse warning: %s", err);
    free(err);
}

/* --profile: the stages, and under a stage of several kernels each kernel (DFSPH's divergence
 * solve: its error and apply passes), whose times add up to no more than the stage's. */
static void test_profile_by_kernel(void **state)
{
    (void)state;
    char args[512], *err;
    snprintf(args, sizeof args,
             "run scenes/dam_break_2d.json --set fluids[0].solver=dfsph --frames 2 --profile -o %s",
             test_path("profile.h5"));
    assert_int_equal(run_mizu(args, &err), 0);
    const char *stage = strstr(err, "    divergence solve ");
    const char *error = stage ? strstr(stage, "\n      dfsph_error ") : NULL;
    const char *apply = stage ? strstr(stage, "\n      dfsph_apply ") : NULL;
    if (!strstr(err, "device time per stage") || !stage || !error || !apply)
        fail_msg("no stage or kernel lines: %s", err);
    double t_stage = atof(stage + strlen("    divergence solve ")),
           t_error = atof(error + strlen("\n      dfsph_error ")),
           t_apply = atof(apply + strlen("\n      dfsph_apply "));
    assert_true(t_error > 0 && t_apply > 0 && t_error + t_apply <= t_stage * 1.0001);
    free(err);
}

/* A motion table that ends while the run goes on: held at its last value after, a stop no solver
 * feels. Ending moving, `mizu check` (and run) warn, naming the law and the speed; a table
 * whose last rows repeat its value ends at rest and says nothing. */
static void test_table_ending_while_moving_warns(void **state)
{
    (void)state;
    for (int at_rest = 0; at_rest < 2; at_rest++) {
        char table[256], scene[256], args[600], *err;
        snprintf(table, sizeof table, "%s", test_path("moving.csv"));
        snprintf(scene, sizeof scene, "%s", test_path("moving.json"));
        FILE *f = fopen(table, "w");
        assert_non_null(f);
        fputs(at_rest ? "0, 0\n0.05, 0.01\n0.1, 0.01\n" : "0, 0\n0.05, 0.01\n", f);
        fclose(f);
        f = fopen(scene, "w");
        assert_non_null(f);
        fprintf(f, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 10, \"frames\": 2},"
                   " \"domain\": {\"min\": [0, 0, 0], \"max\": [1, 1, 1], \"motion\":"
                   " {\"type\": \"translation\", \"direction\": [1, 0, 0], \"table\":"
                   " \"moving.csv\"}}, \"fluids\": [{\"box\": {\"min\": [0.4, 0.4, 0.4],"
                   " \"max\": [0.6, 0.6, 0.6]}, \"spacing\": 0.05}]}");
        fclose(f);
        snprintf(args, sizeof args, "check %s", scene);
        assert_int_equal(run_mizu(args, &err), 0);
        bool warned = strstr(err, "mizu: warning: domain.motion.table ends at 0.05 s while still "
                                  "moving (") != NULL;
        if (warned == (bool)at_rest)
            fail_msg("table %s: %s", at_rest ? "ending at rest" : "ending moving", err);
        free(err);
    }
}

/* A run that blows up stops with exit 1 and says so, keeps the frames before it, and marks the
 * file incomplete; it never hangs or reports success. (Found by review: NaNs used to be
 * clamped into a corner and a zero step hung the adaptive loop.) */
static void test_blow_up_is_reported(void **state)
{
    (void)state;
    const char *out = test_path("blown.h5");
    char args[512], *err;
    snprintf(args, sizeof args,
             "run scenes/dam_break_2d.json --frames 10 --set simulation.adaptive=false"
             " --set simulation.substeps=2 -q -o %s", out);
    assert_int_equal(run_mizu(args, &err), 1);
    assert_non_null(strstr(err, "the simulation blew up at t = "));
    assert_non_null(strstr(err, "marked incomplete"));
    free(err);
    hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/particles/all/position/value", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[3];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_true(dims[0] >= 1 && dims[0] < 11);
    int complete = 1;
    hid_t a = H5Aopen_by_name(f, "/parameters/run", "complete", H5P_DEFAULT, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT, &complete);
    assert_int_equal(complete, 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
}

static void test_usage_errors(void **state)
{
    (void)state;
    static const struct {
        const char *args, *message;
        int rc;
    } cases[] = {
        {"", "no command given", 2},
        {"fly scene.json", "unknown command 'fly'", 2},
        {"run", "run needs a scene file", 2},
        {"run a.json b.json", "run takes one scene file", 2},
        {"run scenes/falling_block.json --frobnicate", "unknown option --frobnicate", 2},
        {"run scenes/falling_block.json --frames x", "--frames wants a whole number >= 1", 2},
        {"run scenes/falling_block.json --device tpu", "expected cpu, gpu or P:D", 2},
        {"run scenes/falling_block.json --device 7:0", "no device 0 on platform 7", 1},
        {"run scenes/falling_block.json --set nokey", "expected PATH=VALUE", 2},
        {"info /nonexistent.h5", "/nonexistent.h5", 1},
        {"check scenes/dam_break_2d.json --set fluids[0].support_radius=0.002",
         "fluids[0].support_radius must be between 1.5 and 10 times the spacing", 2},
        {"check scenes/dam_break_2d.json --set fluids[0].speed_of_sound=1e39",
         "fluids[0].speed_of_sound must be >= 0 and <= 100000 (got 1e+39)", 2},
        {"check scenes/obstacles_2d.json --set colliders[0].sphere.radius=0.0005",
         "colliders[0] gets no boundary particle at spacing 0.004", 2},
        {"run scenes/falling_block.json --frames 3 --until 1", "--frames and --until both", 2},
        {"run scenes/falling_block.json --until -1", "--until wants a time in seconds > 0", 2},
        {"run scenes/falling_block.json --every 0", "--every wants a whole number", 2},
        {"run --resume x.ckpt.h5 --every 2", "--every and --fields would change", 2},
        {"check scenes/dam_break_2d.json --fields position,speed",
         "output.fields[1] must be one of", 2},
        {"check scenes/dam_break_2d.json --set simulation.duration=2e9",
         "is 2e+11 frames (at most 10^9)", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *err;
        int rc = run_mizu(cases[i].args, &err);
        if (rc != cases[i].rc || !strstr(err, cases[i].message))
            fail_msg("mizu %s: exit %d (want %d), stderr: %s", cases[i].args, rc, cases[i].rc,
                     err);
        free(err);
    }
}

/* --until, --every and --fields: what check says they resolve to, and what run writes. */
static void test_until_every_fields(void **state)
{
    (void)state;
    static const struct {
        const char *args, *says;
    } cases[] = {
        /* 1.5 x 100 is a hair above 150 in floating point: still 150 frames */
        {"--until 1.5 --every 5 --fields position,velocity",
         "150 frames at 100 fps (until 1.5 s)"},
        {"--until 1.5 --every 5 --fields position,velocity",
         "output: 31 frames (one frame in 5), fields position, velocity,"},
        {"--until 0.123", "13 frames at 100 fps (until 0.123 s)"},
        {"--set simulation.duration=0.05", "5 frames at 100 fps (until 0.05 s)"},
        {"--set simulation.duration=0.05 --frames 7", "7 frames at 100 fps,"},
    };
    char cmd[1024];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "%s check scenes/dam_break_2d.json %s > %s", mizu_bin(),
                 cases[i].args, test_path("check.txt"));
        assert_int_equal(system(cmd), 0);
        size_t len;
        char *text = slurp(test_path("check.txt"), &len);
        if (!strstr(text, cases[i].says))
            fail_msg("mizu check %s: no \"%s\" in:\n%s", cases[i].args, cases[i].says, text);
        free(text);
    }
    const char *out = test_path("until.h5");
    char args[700], *err = NULL;
    snprintf(args, sizeof args,
             "run scenes/dam_break_2d.json --until 0.05 --every 2 --fields position -q -o %s", out);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    size_t bytes = 0;
    unsigned char *steps = read_all(f, "/particles/all/position/step", &bytes);
    assert_int_equal(bytes / 8, 3); /* frames 0, 2, 4 of 5 */
    free(steps);
    assert_int_equal(H5Lexists(f, "/particles/all/velocity", H5P_DEFAULT), 0);
    H5Fclose(f);
}

/* A frame's time is frame / fps, not the steps' sum (which is 2.99999999999999 s after 1200
 * steps of 2.5 ms); the box edges carry their unit. */
static void test_frame_times_exact(void **state)
{
    (void)state;
    const char *out = test_path("times.h5");
    char args[700], *err = NULL;
    snprintf(args, sizeof args,
             "run scenes/falling_block.json --set simulation.fps=100 --frames 300 --every 300 "
             "-q -o %s", out);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    size_t bytes = 0;
    double *t = (double *)read_all(f, "/particles/all/position/time", &bytes);
    assert_int_equal(bytes, 2 * sizeof *t);
    if (t[0] != 0.0 || t[1] != 3.0)
        fail_msg("frame times %.17g, %.17g (want 0 and 3 exactly)", t[0], t[1]);
    free(t);
    hid_t a = H5Aopen_by_name(f, "/particles/all/box/edges", "unit", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    char *unit = NULL;
    hid_t mt = H5Aget_type(a);
    assert_int_equal(H5Tis_variable_str(mt), 1); /* variable-length UTF-8, as every string */
    assert_true(H5Aread(a, mt, &unit) >= 0);
    assert_string_equal(unit, "m");
    H5free_memory(unit);
    H5Tclose(mt);
    H5Aclose(a);
    H5Fclose(f);
}

static void test_check_info_keys_devices(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s check scenes/falling_block.json > %s", mizu_bin(),
             test_path("check.txt"));
    assert_int_equal(system(cmd), 0);
    size_t len;
    char *text = slurp(test_path("check.txt"), &len);
    assert_non_null(strstr(text, "8000 particles"));
    assert_non_null(strstr(text, "device memory about"));
    assert_non_null(strstr(text, "  fits "));
    free(text);
    const char *out = test_path("info.h5");
    snprintf(cmd, sizeof cmd, "%s run scenes/falling_block.json --frames 3 -q -o %s && %s info %s > %s",
             mizu_bin(), out, mizu_bin(), out, test_path("info.txt"));
    assert_int_equal(system(cmd), 0);
    text = slurp(test_path("info.txt"), &len);
    assert_non_null(strstr(text, "8000"));
    free(text);
    snprintf(cmd, sizeof cmd, "%s keys | grep -q '^fluids\\[\\].spacing$'", mizu_bin());
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s devices | grep -q '0:0'", mizu_bin());
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s --version | grep -q '^mizu '", mizu_bin());
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_writes_decimated_frames),
        cmocka_unit_test(test_identical_runs_identical_files),
        cmocka_unit_test(test_kernel_dir_matches_embedded),
        cmocka_unit_test(test_unwritable_output),
        cmocka_unit_test(test_bad_scene_keeps_old_output),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_blow_up_is_reported),
        cmocka_unit_test(test_collapsed_step_warns),
        cmocka_unit_test(test_table_ending_while_moving_warns),
        cmocka_unit_test(test_check_info_keys_devices),
        cmocka_unit_test(test_until_every_fields),
        cmocka_unit_test(test_frame_times_exact),
        cmocka_unit_test(test_profile_by_kernel),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
