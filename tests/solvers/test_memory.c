/* The fit check's estimate (sim_device_bytes, what `mizu check` prints and a run is refused by)
 * against the device memory a run holds (mz_cl_memory's count of every buffer made): at most
 * 2% apart, over the start and a frame's steps, for every solver's kinds of scene (WCSPH,
 * DFSPH, PBF, cloth, soft and rigid bodies, FLIP with each pressure solver) and what a scene
 * may add (moving colliders, forces on solids, probes and gauges). Not held to it: FLIP scenes
 * under ~1 MB (the estimate takes a GPU's partial sums and listers, 20 KB more than a CPU's). */
#include "test_util.h"
#include "test_world.h"

#include "solvers/sph/neighbour_list.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* OpenCL may destroy released buffers a little later (PoCL calls the destructor callbacks from
 * its own thread): wait, up to 10 s, for the count to come back to `level`. */
static void wait_released(size_t level)
{
    for (int i = 0; i < 1000 && mz_cl_memory().live > level; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    assert_int_equal(mz_cl_memory().live, level);
}

/* The most the run held (the test holds no buffers of its own), and the estimate for it (with what
 * `mizu check` adds for WCSPH's neighbour lists and DFSPH's gradients when the run keeps them:
 * MIZU_SPH_LISTS=1, MIZU_DFSPH_GRADS=1). */
static void held_and_estimate(const char *path, const char *const *sets, size_t n_sets,
                              bool lists, size_t *held, size_t *estimate, size_t *n)
{
    setenv("MIZU_SPH_LISTS", lists ? "1" : "0", 1);
    setenv("MIZU_DFSPH_GRADS", lists ? "1" : "0", 1);
    wait_released(0);
    mz_cl_memory_reset_peak();
    world w;
    world_open_file(&w, path, sets, n_sets);
    assert_int_equal(sim_advance_frame(&w.sim, 1.0 / w.scene.sim.fps), 0);
    clFinish(cl.queue);
    *held = mz_cl_memory().peak;
    *n = w.parts.n;
    *estimate = sim_device_bytes(&w.scene, *n);
    if (lists)
        *estimate += *n * (scene_solver(&w.scene) == MZ_SOLVER_DFSPH
                               ? sph_lists_grad_bytes(&w.scene)
                               : sph_lists_bytes(&w.scene, cl.list_masks));
    world_close(&w);
    wait_released(0);
    unsetenv("MIZU_SPH_LISTS");
    unsetenv("MIZU_DFSPH_GRADS");
}

/* Prints the case; whether the estimate is within 2% of what was held. */
static bool within(const char *what, size_t held, size_t estimate, size_t n)
{
    double off = ((double)estimate - (double)held) / (double)held;
    print_message("%-44s %7zu particles: held %9zu bytes (%.1f a particle), estimate %9zu "
                  "(%+.2f%%)\n", what, n, held, (double)held / (double)n, estimate, 100 * off);
    return fabs(off) <= 0.02;
}

static void check_within(const char *what, size_t held, size_t estimate, size_t n)
{
    if (!within(what, held, estimate, n))
        fail_msg("%s: the estimate %zu bytes is %+.2f%% off the %zu bytes the run held", what,
                 estimate, 100 * (((double)estimate - (double)held) / (double)held), held);
}

/* Short frames (a few steps) keep it quick; the memory does not depend on them. */
static void test_wcsph_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *path, *set; /* set: after the penalty walls' */
        bool penalty;
    } cases[] = {
        /* wall particles: the most is held while the walls are sorted */
        {"scenes/dam_break_3d.json", NULL, false},
        {"scenes/dam_break_2d.json", NULL, false},
        /* penalty walls: the fluid's buffers alone */
        {"scenes/dam_break_3d.json", NULL, true},
        {"scenes/dam_break_3d.json", "fluids[0].density_method=continuity", true},
        {"scenes/dam_break_3d.json", "fluids[0].solver=collapsed_sph", true},
        {"scenes/dam_break_3d.json", "fluids[0].gradient_correction=true", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *sets[] = {"simulation.fps=2000", "domain.boundary.type=penalty",
                              cases[i].set};
        size_t held, estimate, n;
        held_and_estimate(cases[i].path, sets, cases[i].penalty ? (cases[i].set ? 3 : 2) : 1,
                          false, &held, &estimate, &n);
        char what[160];
        snprintf(what, sizeof what, "%s%s%s", cases[i].path + 7,
                 cases[i].penalty ? ", penalty walls " : "", cases[i].set ? cases[i].set : "");
        check_within(what, held, estimate, n);
    }
}

/* With neighbour lists, what `mizu check` adds for them (penalty walls: with wall particles a
 * small scene holds most while it sorts them, before the lists are made), the fluid's as entries
 * and masked (a GPU's, MIZU_LIST_FORMAT). */
static void test_wcsph_lists(void **state)
{
    (void)state;
    const char *sets[] = {"simulation.fps=2000", "domain.boundary.type=penalty"};
    size_t held, estimate, n;
    const bool masks = cl.list_masks;
    for (int m = 0; m < 2; m++) {
        cl.list_masks = m;
        held_and_estimate("scenes/dam_break_3d.json", sets, 2, true, &held, &estimate, &n);
        check_within(m ? "dam_break_3d.json penalty walls, masked lists"
                       : "dam_break_3d.json penalty walls, neighbour lists",
                     held, estimate, n);
    }
    cl.list_masks = masks;
    /* DFSPH's lists' gradients */
    const char *dfsph[] = {"simulation.fps=500", "domain.boundary.type=penalty",
                           "fluids[0].solver=dfsph"};
    held_and_estimate("scenes/dam_break_3d.json", dfsph, 3, true, &held, &estimate, &n);
    check_within("dam_break_3d.json penalty walls, DFSPH with gradients", held, estimate, n);
}

/* The other solvers and what any solver's scene may add: each case is measured and printed, and
 * the ones off by more than 2% named at the end. fps: a frame of a few steps (memory does not
 * depend on how many). */
static void test_other_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *path, *sets[4];
        bool loose; /* not held to 2% yet: printed only */
    } cases[] = {
        {"scenes/bench_dfsph_6859.json", {"simulation.fps=500"}, false},
        {"scenes/dam_break_3d.json",
         {"domain.boundary.type=penalty", "simulation.fps=500", "fluids[0].solver=dfsph"},
         false},
        {"scenes/bench_forces.json",
         {"simulation.fps=500", "colliders[0].forces={}", "domain.boundary.forces={}",
          "fluids[0].solver=dfsph"},
         false},
        {"scenes/pbf_dam_break.json", {"simulation.substeps=1"}, false},
        {"scenes/pbf_dam_break.json", {"simulation.substeps=1", "domain.boundary.type=particles"},
         false},
        {"scenes/pbf_box_float.json", {"simulation.substeps=1"}, false},
        {"scenes/coupled.json", {"simulation.substeps=1"}, false},
        {"scenes/cloth_drape.json", {"simulation.substeps=1"}, false},
        {"scenes/cloth_hang.json", {"simulation.substeps=1"}, false},
        {"scenes/softbody_drop.json", {"simulation.substeps=1"}, false},
        {"scenes/falling_block.json", {"simulation.substeps=1"}, false},
        {"scenes/flip_dam_break_3d.json", {"simulation.substeps=1"}, false},
        {"scenes/flip_dam_break_3d.json",
         {"simulation.substeps=1", "simulation.pressure_solver=mgpcg"}, false},
        {"scenes/flip_dam_break_3d.json",
         {"simulation.substeps=1", "simulation.pressure_solver=jacobi"}, false},
        {"scenes/flip_dam_break_2d.json", {"simulation.substeps=1"}, false},
        {"scenes/flip_flume_3d.json", {"simulation.substeps=1"}, false},
        /* FLIP's estimate takes a GPU's partial sums and listers, 20 KB more than a CPU's: more
         * than 2% of this small scene's 0.25 MB (exact less that) */
        {"scenes/flip_hydrostatic.json", {"simulation.substeps=1"}, true},
        /* moving colliders, forces on solids, probes and gauges */
        {"scenes/wave_flume.json", {"simulation.fps=2000"}, false},
        {"scenes/sloshing.json", {"simulation.fps=2000"}, false},
        {"scenes/bench_forces.json",
         {"simulation.fps=2000", "colliders[0].forces={}", "colliders[1].forces={}"}, false},
        {"scenes/bench_probes.json", {"simulation.fps=2000"}, false},
    };
    char failed[1024] = "";
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n_sets = 0, held, estimate, n;
        while (n_sets < 4 && cases[i].sets[n_sets])
            n_sets++;
        held_and_estimate(cases[i].path, cases[i].sets, n_sets, false, &held, &estimate, &n);
        char what[160];
        snprintf(what, sizeof what, "%s %s%s", cases[i].path + 7,
                 n_sets > 1 ? cases[i].sets[n_sets - 1] : "", n_sets > 2 ? " ..." : "");
        if (!within(what, held, estimate, n) && !cases[i].loose)
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "\n  %s", what);
    }
    if (failed[0])
        fail_msg("the estimate is more than 2%% off for:%s", failed);
}

/* The fit check refuses a DFSPH scene whose neighbour lists (one buffer each, always made) are
 * larger than the device's largest buffer, before any is made: 10^7 particles' were 2.23 GB
 * against PoCL's 2.15 GB and the run failed at its start with CL_INVALID_BUFFER_SIZE. Here a
 * device whose largest buffer is just short of the lists; WCSPH (lists only where they fit)
 * passes on it. */
static void test_dfsph_lists_fit_check(void **state)
{
    (void)state;
    mz_scene s;
    mz_diag diag = {0};
    const char *sets[] = {"fluids[0].solver=dfsph"};
    assert_int_equal(scene_load("scenes/dam_break_3d.json", sets, 1, &s, &diag), 0);
    size_t n = 1000000, lists = 4 * n * (size_t)sph_lists_cap_first(&s);
    mz_cl small = cl;
    small.global_mem = (cl_ulong)1 << 50;
    small.max_alloc = lists - 1;
    assert_int_equal(sim_check_fits(&small, &s, n), -1);
    small.max_alloc = lists;
    assert_int_equal(sim_check_fits(&small, &s, n), 0);
    s.fluids[0].solver = MZ_SOLVER_WCSPH;
    small.max_alloc = lists - 1;
    assert_int_equal(sim_check_fits(&small, &s, n), 0);
    scene_free(&s);
}

/* The lists' kernels count a list's entries in 32 bits (MZ_LIST_AT_): however large the
 * device's largest buffer, a list past 2^32 entries is refused (DFSPH: by the fit check) or
 * not kept (WCSPH), never made to wrap. dam_break_3d's first lists: 56 entries a particle, so
 * 7.6 × 10^7 particles pass and 7.7 × 10^7 (4.31 × 10^9 entries) do not; masked (45 entries:
 * a fluid list of 27, the walls' of 56) the same, the wall list deciding. */
static void test_lists_index_limit(void **state)
{
    (void)state;
    mz_scene s;
    mz_diag diag = {0};
    assert_int_equal(scene_load("scenes/dam_break_3d.json", NULL, 0, &s, &diag), 0);
    assert_int_equal(sph_lists_cap_first(&s), 56);
    mz_cl huge = cl;
    huge.global_mem = huge.max_alloc = (cl_ulong)1 << 50;
    mz_sim sim = {.cl = &huge, .scene = &s};
    for (int masked = 0; masked < 2; masked++) {
        sim.cap = 76000000;
        assert_true(sph_lists_buffers_fit(&sim, masked, 1.0));
        sim.cap = 77000000;
        assert_false(sph_lists_buffers_fit(&sim, masked, 1.0));
    }
    s.fluids[0].solver = MZ_SOLVER_DFSPH;
    assert_int_equal(sim_check_fits(&huge, &s, 76000000), 0);
    assert_int_equal(sim_check_fits(&huge, &s, 77000000), -1);
    scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wcsph_kinds),
        cmocka_unit_test(test_wcsph_lists),
        cmocka_unit_test(test_other_kinds),
        cmocka_unit_test(test_dfsph_lists_fit_check),
        cmocka_unit_test(test_lists_index_limit),
    };
    return cmocka_run_group_tests_name("memory", tests, open_device, close_device);
}
