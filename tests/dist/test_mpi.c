/* Distributed runs (src/dist/, docs/distributed.md): `mpirun -np N mizu run` on PoCL, against
 * the same scene run by one process. SPH output must be bit-identical for any rank count
 * (which also proves every particle kept, none duplicated: rows are particle ids); what is not
 * distributed yet, and bad decompositions, must stop every rank with a clear message. Skipped
 * in a build without MPI. */
#include "test_util.h"

#include "test_files.h"

#include <hdf5.h>

/* `mpirun -np N mizu ARGS` (oversubscribed: this machine may have fewer cores than ranks), with
 * stderr into *err as run_mizu does. */
static int run_mpi(int np, const char *args, char **err)
{
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "--oversubscribe %s-np %d %.512s %.2048s",
             getuid() == 0 ? "--allow-run-as-root " : "", np, mizu_bin(), args);
    /* run_mizu runs mizu_bin(): point it at mpirun for this call. */
    const char *saved = getenv("MIZU_BIN");
    char *keep = saved ? strdup(saved) : NULL;
    /* Under `make sanitize`: Open MPI leaves its own allocations at exit, through frames LSan
     * cannot unwind (no frame pointers), so the ranks run with ASan and UBSan but without the
     * leak check; the one-process runs here keep it. */
    const char *asan = getenv("ASAN_OPTIONS");
    char launcher[1024];
    if (asan)
        snprintf(launcher, sizeof launcher, "ASAN_OPTIONS='%.900s:detect_leaks=0' mpirun", asan);
    else
        snprintf(launcher, sizeof launcher, "mpirun");
    setenv("MIZU_BIN", launcher, 1);
    int rc = run_mizu(cmd, err);
    if (keep) {
        setenv("MIZU_BIN", keep, 1);
        free(keep);
    } else {
        unsetenv("MIZU_BIN");
    }
    return rc;
}

static int setup(void **state)
{
    (void)state;
#ifndef MZ_MPI
    return 0;
#else
    /* mpirun's own test: a machine without a working launcher fails here, clearly. */
    return system("mpirun --version >/dev/null 2>&1") == 0 ? 0 : -1;
#endif
}

#define SKIP_WITHOUT_MPI()                                                                     \
    do {                                                                                       \
        if (!mpi_built())                                                                      \
            skip();                                                                            \
    } while (0)

static bool mpi_built(void)
{
#ifdef MZ_MPI
    return true;
#else
    return false;
#endif
}

/* One process, then 2 and 3 ranks: the same frames, byte for byte. */
static void assert_ranks_match(const char *name, const char *scene_args, long frames)
{
    char args[2048], *err = NULL;
    const char *one = test_path("one.h5");
    snprintf(args, sizeof args, "run %s --frames %ld -q -o %s", scene_args, frames, one);
    int rc = run_mizu(args, &err);
    if (rc != 0)
        fail_msg("%s, one process: exit %d: %s", name, rc, err ? err : "");
    free(err);
    for (int np = 2; np <= 3; np++) {
        char out[64];
        snprintf(out, sizeof out, "ranks%d.h5", np);
        const char *path = test_path(out);
        snprintf(args, sizeof args, "run %s --frames %ld -q -o %s", scene_args, frames, path);
        rc = run_mpi(np, args, &err);
        if (rc != 0)
            fail_msg("%s, %d ranks: exit %d: %s", name, np, rc, err ? err : "");
        free(err);
        assert_same_frames(one, path, frames + 1);
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f >= 0);
        hid_t a = H5Aopen_by_name(f, "/parameters/build", "ranks", H5P_DEFAULT, H5P_DEFAULT);
        long long ranks = 0;
        assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, &ranks) >= 0);
        assert_int_equal(ranks, np);
        H5Aclose(a);
        H5Fclose(f);
    }
}

static void test_dam_break_2d(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    /* adaptive WCSPH with boundary particles; the surge crosses slab boundaries from frame 2 */
    assert_ranks_match("2D dam break", "scenes/dam_break_2d.json", 8);
}

static void test_dam_break_3d(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    assert_ranks_match("3D dam break", "scenes/dam_break_3d.json", 3);
}

static void test_collapsed_penalty_fixed(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    /* one pass, one halo layer; penalty walls; fixed steps */
    assert_ranks_match("collapsed SPH",
                       "scenes/dam_break_2d.json --set fluids[0].solver=collapsed_sph "
                       "--set domain.boundary.type=penalty --set simulation.adaptive=false "
                       "--set simulation.substeps=200",
                       4);
}

static void test_continuity_density(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    /* densities carried from step to step travel with the particles */
    assert_ranks_match("continuity density",
                       "scenes/dam_break_2d.json --set fluids[0].density_method=continuity", 4);
}

static void test_ranks_without_particles(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    /* a film one cell layer thick: rank 0 holds every particle, the others none */
    const char *scene = test_path("film.json");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 2, "
               "\"dimensions\": 2, \"adaptive\": true},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.1, 0]},"
               "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0, 0, 0], "
               "\"max\": [0.1, 0.004, 0]}, \"spacing\": 0.002}]}");
    char args[600];
    snprintf(args, sizeof args, "%s", scene);
    assert_ranks_match("empty ranks", args, 2);
}

static void test_refusals(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    char *err = NULL, args[1024];
    const char *out = test_path("refused.h5");
    struct {
        const char *args, *says;
    } cases[] = {
        {"scenes/flip_dam_break_2d.json", "FLIP is not distributed yet"},
        {"scenes/pbf_dam_break.json", "position-based solvers"},
        {"scenes/dam_break_2d.json --checkpoint-every 1", "--checkpoint-every is not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(args, sizeof args, "run %s --frames 1 -q -o %s", cases[i].args, out);
        int rc = run_mpi(2, args, &err);
        if (rc != 2 || !err || !strstr(err, cases[i].says))
            fail_msg("%s: exit %d, stderr: %s", cases[i].args, rc, err ? err : "");
        assert_false(exists(out));
        free(err);
    }
    /* more ranks than layers of cells: 2 layers of 4 mm cells, 3 ranks */
    const char *scene = test_path("thin.json");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 1, "
               "\"dimensions\": 2},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.008, 0]},"
               "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0, 0, 0], "
               "\"max\": [0.02, 0.008, 0]}, \"spacing\": 0.002}]}");
    snprintf(args, sizeof args, "run %s -q -o %s", scene, out);
    int rc = run_mpi(3, args, &err);
    if (rc == 0 || !err || !strstr(err, "3 ranks but the domain has only 2 layers"))
        fail_msg("thin domain: exit %d, stderr: %s", rc, err ? err : "");
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dam_break_2d),
        cmocka_unit_test(test_dam_break_3d),
        cmocka_unit_test(test_collapsed_penalty_fixed),
        cmocka_unit_test(test_continuity_density),
        cmocka_unit_test(test_ranks_without_particles),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
