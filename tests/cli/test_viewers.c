/* Every shipped scene's output (two frames each; a scene of more than 200,000 particles, made
 * for a GPU, at a coarser spacing that keeps its content) as the field's readers see it (issue
 * 20, items 3 and 4): pyh5md through scripts/check-h5md.py (strings, units, boxes, series, views);
 * h5repack, whose copy must hold the same frames (mizu compare); ParaView's three XDMF readers
 * through scripts/check-xdmf.py under pvbatch (points, arrays, time steps). Each part is skipped
 * with a message where its tool is missing; scripts/install-viewers.sh installs them all. */
#include "scene/scene.h"
#include "scene/sizes.h"
#include "test_util.h"
#include "util/err.h"

#include <dirent.h>
#include <math.h>
#include <hdf5.h>

#define PY "/usr/bin/python3"
#define MAX_SCENES 64

static char *outputs[MAX_SCENES];
static size_t n_outputs;

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* For a scene of more than 200,000 particles (the GPU-sized ones, such as SPHERIC Test 2 at
 * 10^6), a --set of fluids[0].spacing that brings it down to about 30,000: two frames of it
 * on two cores would take most of an hour and show a reader nothing more. "" otherwise. */
static const char *coarse_set(const char *name)
{
    static char set[96];
    char path[600];
    snprintf(path, sizeof path, "scenes/%s", name);
    mz_scene s;
    mz_diag d = {0};
    set[0] = 0;
    if (scene_load(path, NULL, 0, &s, &d) != 0) {
        diag_free(&d);
        return set;
    }
    size_t n = scene_particle_count(&s);
    if (n > 200000 && s.n_fluids > 0)
        snprintf(set, sizeof set, " --set fluids[0].spacing=%g",
                 s.fluids[0].spacing * pow((double)n / 30000.0, 1.0 / s.sim.dimensions));
    scene_free(&s);
    return set;
}

static int setup(void **state)
{
    (void)state;
    DIR *d = opendir("scenes");
    struct dirent *e;
    while (d && (e = readdir(d)) && n_outputs < MAX_SCENES) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char args[1024], out[600], *err = NULL;
        snprintf(out, sizeof out, "%s/%.*s.h5", test_dir(), (int)(len - 5), e->d_name);
        snprintf(args, sizeof args, "run scenes/%s -o %s --frames 2 -q%s", e->d_name, out,
                 coarse_set(e->d_name));
        if (run_mizu(args, &err) != 0) {
            fprintf(stderr, "mizu %s: %s", args, err ? err : "");
            free(err);
            closedir(d);
            return -1;
        }
        free(err);
        outputs[n_outputs++] = strdup(out);
    }
    if (d)
        closedir(d);
    qsort(outputs, n_outputs, sizeof *outputs, by_name);
    return n_outputs >= 15 ? 0 : -1; /* every shipped scene */
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_outputs; i++)
        free(outputs[i]);
    return 0;
}

static bool have(const char *check)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s >/dev/null 2>&1", check);
    return system(cmd) == 0;
}

static void test_pyh5md(void **state)
{
    (void)state;
    if (!have(PY " -c 'import pyh5md, h5py'")) {
        print_message("skipped: no pyh5md for " PY " (scripts/install-viewers.sh installs it)\n");
        skip();
    }
    mz_str cmd = {0};
    str_addf(&cmd, PY " scripts/check-h5md.py");
    for (size_t i = 0; i < n_outputs; i++)
        str_addf(&cmd, " %s", outputs[i]);
    str_addf(&cmd, " >%s 2>&1", test_path("h5md.txt"));
    int rc = system(cmd.s);
    char *said = read_file(test_path("h5md.txt"), NULL);
    if (rc != 0)
        fail_msg("check-h5md.py:\n%s", said);
    free(said);
    str_free(&cmd);
}

static void test_h5repack(void **state)
{
    (void)state;
    if (!have("h5repack --version")) {
        print_message("skipped: no h5repack (Debian: hdf5-tools)\n");
        skip();
    }
    for (size_t i = 0; i < n_outputs; i++) {
        char cmd[2048], copy[700], *err = NULL;
        snprintf(copy, sizeof copy, "%s.repacked.h5", outputs[i]);
        snprintf(cmd, sizeof cmd, "h5repack %s %s >%s 2>&1", outputs[i], copy,
                 test_path("repack.txt"));
        if (system(cmd) != 0) {
            char *said = read_file(test_path("repack.txt"), NULL);
            fail_msg("h5repack %s: %s", outputs[i], said);
        }
        snprintf(cmd, sizeof cmd, "compare %s %s >/dev/null", outputs[i], copy);
        int rc = run_mizu(cmd, &err);
        if (rc != 0)
            fail_msg("mizu %s: exit %d: %s", cmd, rc, err ? err : "");
        free(err);
    }
}

/* What a reader must show of an output: the points of a frame in all, the frames, the arrays. */
static void expected(const char *path, size_t *points, size_t *frames, char *arrays, size_t len)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hsize_t dims[3] = {0, 0, 0};
    hid_t t = H5Dopen2(f, "/particles/all/position/time", H5P_DEFAULT);
    hid_t ts = H5Dget_space(t);
    H5Sget_simple_extent_dims(ts, dims, NULL);
    *frames = (size_t)dims[0];
    H5Sclose(ts);
    H5Dclose(t);
    hid_t d = H5Dopen2(f, "/particles/all/id", H5P_DEFAULT);
    hid_t s = H5Dget_space(d);
    H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    H5Dclose(d);
    size_t n = (size_t)dims[0];
    *points = n;
    if (H5Lexists(f, "/connectivity", H5P_DEFAULT) > 0)
        *points += n; /* the surfaces grid repeats the particles' geometry */
    /* The walls that stay put, [B, 3]; with moving colliders theirs, a series [frames, M, 3]
     * whose frame is shown */
    static const char *const walls[] = {"/particles/boundary",
                                        "/particles/moving_boundary"};
    for (int moves = 0; moves < 2; moves++) {
        if (H5Lexists(f, walls[moves], H5P_DEFAULT) <= 0)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s/position%s", walls[moves], moves ? "/value" : "");
        d = H5Dopen2(f, name, H5P_DEFAULT);
        s = H5Dget_space(d);
        int rank = H5Sget_simple_extent_dims(s, dims, NULL);
        H5Sclose(s);
        H5Dclose(d);
        assert_int_equal(rank, moves ? 3 : 2);
        *points += (size_t)dims[moves ? 1 : 0];
    }
    snprintf(arrays, len, "body,phase");
    static const char *const fields[] = {"velocity", "density", "pressure"};
    for (size_t k = 0; k < 3; k++) {
        char name[64];
        snprintf(name, sizeof name, "/particles/all/%s", fields[k]);
        if (H5Lexists(f, name, H5P_DEFAULT) > 0)
            snprintf(arrays + strlen(arrays), len - strlen(arrays), ",%s", fields[k]);
    }
    H5Fclose(f);
}

static void test_paraview_readers(void **state)
{
    (void)state;
    if (!have("echo 'from paraview import simple' > /tmp/mizu-pv-probe.py && "
              "pvbatch /tmp/mizu-pv-probe.py")) {
        print_message("skipped: no ParaView with Python (Debian: paraview python3-paraview; "
                      "scripts/install-viewers.sh)\n");
        skip();
    }
    for (size_t i = 0; i < n_outputs; i++) {
        char xdmf[700], arrays[128], cmd[2048];
        size_t points, frames;
        snprintf(xdmf, sizeof xdmf, "%.*s.xdmf", (int)(strlen(outputs[i]) - 3), outputs[i]);
        expected(outputs[i], &points, &frames, arrays, sizeof arrays);
        assert_true(frames >= 1);
        snprintf(cmd, sizeof cmd, "pvbatch scripts/check-xdmf.py %s %zu %zu %s >%s 2>&1", xdmf,
                 points, frames, arrays, test_path("pv.txt"));
        if (system(cmd) != 0) {
            char *said = read_file(test_path("pv.txt"), NULL);
            fail_msg("ParaView on %s:\n%s", xdmf, said);
        }
    }
    print_message("ParaView's XDMFReader, Xdmf3ReaderS, Xdmf3ReaderT and OpenDataFile loaded "
                  "all %zu outputs\n", n_outputs);
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyh5md),
        cmocka_unit_test(test_h5repack),
        cmocka_unit_test(test_paraview_readers),
    };
    return cmocka_run_group_tests_name("viewers", tests, setup, teardown);
}
