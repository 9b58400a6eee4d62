/* Distributed runs with observables and moving boundaries (docs/distributed.md): probes,
 * gauges and forces on solids under `mpirun -np 2` and `-np 3`, against one process (probes
 * and gauges bit-identical, forces within float rounding), resumed by other rank counts; a
 * moving collider and a moving domain. Skipped in a build without MPI. */
#include "test_util.h"

#include "mpi_run.h"
#include "test_files.h"

#include <hdf5.h>
#include <math.h>

typedef struct obs_sets {
    char name[96][160];
    int n;
} obs_sets;

static herr_t add_set(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    obs_sets *l = data;
    size_t len = strlen(name);
    bool set = len > 5 && (!strcmp(name + len - 5, "/step") || !strcmp(name + len - 5, "/time") ||
                           (len > 6 && !strcmp(name + len - 6, "/value")));
    if (set && l->n < 96)
        snprintf(l->name[l->n++], sizeof l->name[0], "/observables/%s", name);
    return 0;
}

/* A force or torque: summed by the ranks, so not bit-identical to one process. */
static bool summed(const char *set)
{
    return (strstr(set, "/walls/") || strstr(set, "/colliders/")) && strstr(set, "/value");
}

/* The observables of b against one process's a: the probes' and gauges' series and every step
 * and time byte for byte; each force and torque within FORCE_TOL of the largest magnitude in
 * its series. The ranks' pairs are one process's bits, added in another grouping (each rank
 * sums the pairs of the fluid it owns, rank 0 adds the ranks' totals): measured here within
 * 2.3e-7 of the largest value (a few float roundings); the pairs of a rank's halo copies
 * counted too were 8% off (collapsed SPH) or NaN (WCSPH: their state is not the step's). */
#define FORCE_TOL 1e-5
static void assert_same_observables(const char *a_path, const char *b_path, const char *what,
                                    int min_series)
{
    hid_t a = H5Fopen(a_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t b = H5Fopen(b_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(a >= 0 && b >= 0);
    obs_sets *la = calloc(1, sizeof *la), *lb = calloc(1, sizeof *lb);
    hid_t ga = H5Gopen2(a, "/observables", H5P_DEFAULT);
    hid_t gb = H5Gopen2(b, "/observables", H5P_DEFAULT);
    assert_true(ga >= 0 && gb >= 0);
    H5Lvisit(ga, H5_INDEX_NAME, H5_ITER_INC, add_set, la);
    H5Lvisit(gb, H5_INDEX_NAME, H5_ITER_INC, add_set, lb);
    H5Gclose(ga);
    H5Gclose(gb);
    if (la->n != lb->n || la->n < min_series)
        fail_msg("%s: %d series under /observables, one process %d", what, lb->n, la->n);
    double worst = 0;
    for (int i = 0; i < la->n; i++) {
        size_t na = 0, nb = 0;
        unsigned char *x = read_all(a, la->name[i], &na), *y = read_all(b, la->name[i], &nb);
        if (!x || !y || na != nb || na == 0)
            fail_msg("%s: %s has %zu bytes, one process's %zu", what, la->name[i], nb, na);
        if (!summed(la->name[i])) {
            if (memcmp(x, y, na) != 0)
                fail_msg("%s: %s differs from one process's", what, la->name[i]);
        } else {
            const float *fx = (const float *)x, *fy = (const float *)y;
            size_t n = na / sizeof *fx;
            double big = 0;
            for (size_t k = 0; k < n; k++)
                big = fmax(big, fabs(fx[k]));
            for (size_t k = 0; k < n; k++) {
                double diff = fabs((double)fx[k] - fy[k]); /* NaN fails too */
                if (!(diff <= FORCE_TOL * big))
                    fail_msg("%s: %s[%zu] is %g, one process's %g (its largest value %g)",
                             what, la->name[i], k, fy[k], fx[k], big);
                worst = big > 0 ? fmax(worst, diff / big) : worst;
            }
        }
        free(x);
        free(y);
    }
    print_message("%s: %d series, probes and gauges bit-identical; forces within %.2g of their "
                  "largest value\n", what, la->n, worst);
    free(la);
    free(lb);
    H5Fclose(a);
    H5Fclose(b);
}

/* The 2D dam break with probes (one sampled at 500 Hz), gauges (one at 300 Hz, one crossing
 * every slab) and the forces on the tank's walls and on a post in the surge's path. */
static const char *observed_scene(void)
{
    const char *scene = test_path("observed.json");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 4, "
               "\"dimensions\": 2, \"adaptive\": true},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [0.6, 0.3, 0], "
               "\"boundary\": {\"type\": \"particles\", \"forces\": {}}},"
               "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0, 0, 0], "
               "\"max\": [0.1, 0.1, 0]}, \"spacing\": 0.002, \"artificial_viscosity\": 0.05}],"
               "\"colliders\": [{\"name\": \"post\", \"box\": {\"min\": [0.13, 0, 0], "
               "\"max\": [0.15, 0.04, 0]}, \"forces\": {\"about\": [0.14, 0, 0]}}],"
               "\"probes\": [{\"name\": \"low\", \"position\": [0.05, 0.01, 0]},"
               "{\"name\": \"mid\", \"position\": [0.05, 0.05, 0]},"
               "{\"name\": \"high\", \"position\": [0.03, 0.08, 0], "
               "\"fields\": [\"pressure\", \"velocity\"]},"
               "{\"name\": \"far\", \"position\": [0.3, 0.005, 0], \"rate\": 500}],"
               "\"gauges\": [{\"name\": \"g1\", \"start\": [0.02, 0, 0], \"end\": [0.02, 0.25, 0]},"
               "{\"name\": \"g2\", \"start\": [0.12, 0, 0], \"end\": [0.12, 0.2, 0], "
               "\"rate\": 300}]}");
    return scene;
}

/* One process, then 2 and 3 ranks: the same frames, the same probes and gauges bit for bit,
 * the forces within FORCE_TOL (assert_same_observables: at least min_series series). */
static void assert_series_match(const char *name, const char *scene_args, int min_series)
{
    char args[2048], *err = NULL;
    const char *one = test_path("obs1.h5");
    snprintf(args, sizeof args, "run %s -q -o %s", scene_args, one);
    int rc = run_mizu(args, &err);
    if (rc != 0)
        fail_msg("%s, one process: exit %d: %s", name, rc, err ? err : "");
    free(err);
    hid_t f = H5Fopen(one, H5F_ACC_RDONLY, H5P_DEFAULT);
    long frames = f >= 0 ? run_attr(f, "frames_written") : -1;
    H5Fclose(f);
    for (int np = 2; np <= 3; np++) {
        char out[64], what[128];
        snprintf(out, sizeof out, "obs%d.h5", np);
        const char *path = test_path(out);
        snprintf(args, sizeof args, "run %s -q -o %s", scene_args, path);
        rc = run_mpi(np, args, &err);
        if (rc != 0)
            fail_msg("%s, %d ranks: exit %d: %s", name, np, rc, err ? err : "");
        free(err);
        assert_same_frames(one, path, frames);
        snprintf(what, sizeof what, "%s, %d ranks", name, np);
        assert_same_observables(one, path, what, min_series);
    }
}

/* A scene with probes, gauges and forces: 20 series at least. */
static void assert_observed_match(const char *name, const char *scene_args)
{
    assert_series_match(name, scene_args, 20);
}

/* Probes, gauges and forces on solids under mpirun: a point is summed by the ranks owning its
 * cells' layers (a point across a slab boundary by two, assembled on rank 0), the forces by
 * the owners of the fluid; WCSPH in 2D (a gauge across every slab) and in 3D (slabs across the
 * tank, a slanted gauge crossing them), collapsed SPH. */
static void test_observables(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    assert_observed_match("observables, 2D", observed_scene());
    /* rank 0 writing everything (the file not collective): the same samples */
    char args[1024], *err = NULL;
    const char *zero = test_path("obszero.h5");
    setenv("MIZU_COLLECTIVE_OUTPUT", "0", 1);
    snprintf(args, sizeof args, "run %s -o %s", observed_scene(), zero);
    int rc = run_mpi(2, args, &err);
    unsetenv("MIZU_COLLECTIVE_OUTPUT");
    if (rc != 0 || !err || !strstr(err, "rank 0 writing every id block"))
        fail_msg("2 ranks, rank 0 writing: exit %d: %s", rc, err ? err : "");
    free(err);
    assert_same_observables(test_path("obs2.h5"), zero, "rank 0 writing, 2 ranks", 20);
    snprintf(args, sizeof args,
             "%s --frames 2 --set fluids[0].solver=collapsed_sph --set simulation.adaptive=false "
             "--set simulation.substeps=200",
             observed_scene());
    assert_observed_match("observables, collapsed SPH", args);
    snprintf(args, sizeof args,
             "scenes/dam_break_3d.json --frames 1 --set domain.boundary.forces={} "
             "--set 'probes=[{\"name\": \"a\", \"position\": [0.05, 0.02, 0.05]}, "
             "{\"name\": \"b\", \"position\": [0.08, 0.03, 0.09]}]' "
             "--set 'gauges=[{\"name\": \"up\", \"start\": [0.05, 0, 0.05], "
             "\"end\": [0.05, 0.25, 0.05]}, {\"name\": \"slanted\", \"start\": [0.02, 0, 0.01], "
             "\"end\": [0.09, 0.2, 0.095]}]'");
    assert_observed_match("observables, 3D", args);
}

/* A run with observables checkpointed by 2 ranks, resumed by 3 (the series continued), then
 * the same checkpoint resumed again by 2 (the series cut back to the checkpoint's step and
 * written again) and by one process: each time the observables of one uninterrupted process. */
static void test_observables_resume(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    char args[2048], *err = NULL;
    const char *scene = observed_scene(), *ref = test_path("obsref.h5");
    const char *out = test_path("obsck.h5");
    snprintf(args, sizeof args, "run %s -q -o %s", scene, ref);
    int rc = run_mizu(args, &err);
    if (rc != 0)
        fail_msg("reference: exit %d: %s", rc, err ? err : "");
    free(err);
    snprintf(args, sizeof args, "run %s --frames 2 --checkpoint-every 2 -q -o %s", scene, out);
    if ((rc = run_mpi(2, args, &err)) != 0)
        fail_msg("2 ranks, checkpointed: exit %d: %s", rc, err ? err : "");
    free(err);
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s", test_path("obsck.ckpt.h5"));
    for (int k = 0; k < 3; k++) {
        int np = k == 0 ? 3 : k == 1 ? 2 : 1;
        snprintf(args, sizeof args, "run --resume %s --frames 4 -q", ckpt);
        rc = np > 1 ? run_mpi(np, args, &err) : run_mizu(args, &err);
        if (rc != 0)
            fail_msg("resumed by %d: exit %d: %s", np, rc, err ? err : "");
        free(err);
        char what[64];
        snprintf(what, sizeof what, "resumed by %d rank%s", np, np > 1 ? "s" : "");
        assert_same_frames(ref, out, 5);
        assert_same_observables(ref, out, what, 20);
    }
}

/* Moving boundaries under mpirun: their particles are built whole on every rank and placed by
 * the law at each step alike, so the fluid's neighbours and the walls' sums are one process's.
 * A piston wave maker (a moving collider: the boundary series written per frame, its pose and
 * forces), and the rolling tank (the domain's motion: the run in the tank's frame). Ramps cut
 * to 0.1 s so that the boundaries move at full amplitude within the few frames run. */
static void test_moving_boundaries(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    assert_observed_match("wave maker",
                          "scenes/wave_flume.json --frames 8 --set colliders[0].motion.ramp=0.1");
    assert_observed_match("rolling tank",
                          "scenes/rolling_tank.json --frames 6 --set domain.motion.ramp=0.1");
}

/* The position-based solver with moving boundaries: the poses are functions of time, the same
 * on every rank, and every rank places the colliders (and PBF's wall particles of a moving
 * collider) as one process does. A paddle pushed into a PBF dam break, the walls and the paddle
 * as boundary particles; the cloth drape's ball rocking under the sheet; PBF in the rolling tank
 * (the domain's motion). Frames and poses bit-identical. */
static void test_moving_position_based(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    assert_series_match("PBF, a moving paddle",
                        "scenes/pbf_dam_break.json --set fluids[0].spacing=0.004 --frames 6 "
                        "--set domain.boundary.type=particles --set 'colliders=[{\"name\": "
                        "\"paddle\", \"box\": {\"min\": [0.102, 0, 0], \"max\": [0.122, "
                        "0.06, 0]}, \"motion\": {\"type\": \"translation\", \"direction\": "
                        "[-1, 0, 0], \"amplitude\": 0.03, \"period\": 0.1}}]'",
                        3);
    assert_series_match("cloth on a rocking ball",
                        "scenes/cloth_drape.json --frames 12 --set 'colliders[0].motion="
                        "{\"type\": \"rotation\", \"center\": [0.5, 0.25, 0.5], "
                        "\"amplitude\": 4, \"period\": 1.5}'",
                        3);
    assert_series_match("PBF in the rolling tank",
                        "scenes/rolling_tank.json --frames 4 --set domain.motion.ramp=0.1 "
                        "--set fluids[0].solver=pbf --set simulation.adaptive=false "
                        "--set simulation.substeps=8 --set fluids[0].spacing=0.02 "
                        "--set fluids[0].support_radius=0 "
                        "--set 'domain.boundary={\"type\": \"clamp\"}' --set probes=[] "
                        "--set gauges=[]",
                        3);
}

/* PBF's probes and gauges sum a 5 × 5 neighbourhood on the step's grid (two layers either side
 * of a point's, probe_sums), the forces on solids are the corrections the walls and colliders
 * made to each rank's owned particles (predict's penalty push travelling with a particle that
 * changes owner), added by rank 0 in rank order. The dam break with probes (one at 500 Hz),
 * gauges (one crossing the slabs), the walls' and a post's forces; with penalty walls; with
 * wall particles and a moving paddle measured; a 3D tank with a post. */
static void test_observables_pbf(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    const char *pbf = "scenes/pbf_dam_break.json --set fluids[0].spacing=0.004 --frames 4 "
                      "--set domain.boundary.forces={} "
                      "--set 'probes=[{\"name\": \"low\", \"position\": [0.05, 0.01, 0]}, "
                      "{\"name\": \"mid\", \"position\": [0.05, 0.05, 0]}, "
                      "{\"name\": \"far\", \"position\": [0.3, 0.005, 0], \"rate\": 500}]' "
                      "--set 'gauges=[{\"name\": \"g1\", \"start\": [0.02, 0, 0], "
                      "\"end\": [0.02, 0.25, 0]}, {\"name\": \"g2\", \"start\": [0.12, 0, 0], "
                      "\"end\": [0.12, 0.2, 0], \"rate\": 300}]'";
    char args[2048];
    snprintf(args, sizeof args,
             "%s --set 'colliders=[{\"name\": \"post\", \"box\": {\"min\": [0.13, 0, 0], "
             "\"max\": [0.15, 0.04, 0]}, \"forces\": {\"about\": [0.14, 0, 0]}}]'",
             pbf);
    assert_observed_match("observables, PBF", args);
    snprintf(args, sizeof args, "%s --frames 3 --set domain.boundary.type=penalty", pbf);
    assert_observed_match("observables, PBF, penalty walls", args);
    snprintf(args, sizeof args,
             "%s --set domain.boundary.type=particles --set 'colliders=[{\"name\": "
             "\"paddle\", \"box\": {\"min\": [0.102, 0, 0], \"max\": [0.122, 0.06, 0]}, "
             "\"motion\": {\"type\": \"translation\", \"direction\": [-1, 0, 0], "
             "\"amplitude\": 0.03, \"period\": 0.1}, \"forces\": {}}]'",
             pbf);
    assert_observed_match("observables, PBF, wall particles and a moving paddle", args);
    /* 3D: a point's 5 × 5 × 5 cells, slabs across the tank, a slanted gauge crossing them */
    const char *tank = test_path("pbfobs3d.json");
    write_text(tank,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 3, "
               "\"substeps\": 8, \"iterations\": 3, \"dimensions\": 3},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.06, 0.15], "
               "\"boundary\": {\"type\": \"penalty\", \"forces\": {}}},"
               "\"fluids\": [{\"solver\": \"pbf\", \"box\": {\"min\": [0, 0, 0], "
               "\"max\": [0.05, 0.05, 0.1]}, \"spacing\": 0.005, \"xsph_viscosity\": 0.01}],"
               "\"colliders\": [{\"name\": \"post\", \"box\": {\"min\": [0.06, 0, 0.04], "
               "\"max\": [0.075, 0.03, 0.06]}, \"forces\": {}}],"
               "\"probes\": [{\"name\": \"a\", \"position\": [0.02, 0.01, 0.05]}, "
               "{\"name\": \"b\", \"position\": [0.04, 0.02, 0.09]}],"
               "\"gauges\": [{\"name\": \"up\", \"start\": [0.02, 0, 0.05], "
               "\"end\": [0.02, 0.06, 0.05]}, {\"name\": \"slanted\", "
               "\"start\": [0.01, 0, 0.01], \"end\": [0.05, 0.05, 0.12]}]}");
    assert_observed_match("observables, PBF 3D", tank);
}

/* Ballistic fluid in the position-based solver: particles that meet only the walls and the
 * colliders; one process makes no grid for them, a rank one of 1.5 spacings (its slabs are
 * layers of it). A 2D block thrown across the slabs onto a ball and a moving paddle, penalty
 * walls, the walls', the ball's and the paddle's forces. */
static void test_ballistic(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    const char *scene = test_path("ballistic.json");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 12, "
               "\"substeps\": 8, \"dimensions\": 2},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [1, 1, 0], "
               "\"boundary\": {\"type\": \"penalty\", \"forces\": {}}},"
               "\"fluids\": [{\"solver\": \"ballistic\", \"box\": {\"min\": [0.2, 0.5, 0], "
               "\"max\": [0.6, 0.9, 0]}, \"spacing\": 0.01, \"velocity\": [0.5, 0, 0]}],"
               "\"colliders\": [{\"name\": \"ball\", \"sphere\": {\"center\": [0.5, 0.25, 0], "
               "\"radius\": 0.12}, \"friction\": 0.3, \"forces\": {}},"
               "{\"name\": \"paddle\", \"box\": {\"min\": [0.8, 0, 0], "
               "\"max\": [0.85, 0.3, 0]}, \"motion\": {\"type\": \"translation\", "
               "\"direction\": [-1, 0, 0], \"amplitude\": 0.1, \"period\": 0.5}, "
               "\"forces\": {}}]}");
    assert_series_match("ballistic fluid", scene, 20);
}

/* DFSPH under mpirun (src/solvers/sph/dfsph_dist.c) with what WCSPH has there: probes, gauges
 * and forces on the walls and a post (its solves' pressure impulses gathered by the owners of
 * the fluid), the piston wave maker (a moving collider) and the rolling tank (the domain's
 * motion). */
static void test_dfsph_observed(void **state)
{
    (void)state;
    SKIP_WITHOUT_MPI();
    char args[1024];
    snprintf(args, sizeof args, "%s --frames 2 --set fluids[0].solver=dfsph", observed_scene());
    assert_observed_match("observables, DFSPH", args);
    assert_observed_match("wave maker, DFSPH",
                          "scenes/wave_flume.json --frames 4 --set colliders[0].motion.ramp=0.1 "
                          "--set fluids[0].solver=dfsph --set fluids[0].density_method=summation");
    assert_observed_match("rolling tank, DFSPH",
                          "scenes/rolling_tank.json --frames 3 --set domain.motion.ramp=0.1 "
                          "--set fluids[0].solver=dfsph --set fluids[0].density_method=summation");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observables),
        cmocka_unit_test(test_observables_resume),
        cmocka_unit_test(test_moving_boundaries),
        cmocka_unit_test(test_moving_position_based),
        cmocka_unit_test(test_observables_pbf),
        cmocka_unit_test(test_ballistic),
        cmocka_unit_test(test_dfsph_observed),
    };
    test_filter_from_env("MPI_TEST"); /* e.g. MPI_TEST='*dfsph*' */
    return cmocka_run_group_tests(tests, setup, NULL);
}
