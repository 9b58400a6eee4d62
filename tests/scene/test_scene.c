/* Scene parsing: valid scenes, --set overrides, and a table of bad inputs with exact messages. */
#include "test_util.h"

#include "build/build.h"
#include "scene/scene.h"

#include "fuzz/scene_input.h"

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <time.h>

#define DATA "tests/data/"

/* Load, expecting failure; the messages joined by '\n'. */
static char *load_errors(const char *path, const char *const *sets, size_t n_sets)
{
    mz_scene s;
    mz_diag d = {0};
    int rc = scene_load(path, sets, n_sets, &s, &d);
    assert_int_equal(rc, -1);
    mz_str all = {0};
    for (size_t i = 0; i < d.count; i++)
        str_addf(&all, "%s%s", i ? "\n" : "", d.msgs[i]);
    diag_free(&d);
    scene_free(&s);
    return all.s;
}

static const struct bad_case {
    const char *file;
    const char *expected;
} bad_cases[] = {
    {"bad_negative_spacing.json", "fluids[0].spacing must be > 0 (got -0.01)"},
    {"bad_types.json", "simulation.fps must be a number (got \"60\")\n"
                       "simulation.frames must be an integer (got 1.5)\n"
                       "simulation.gravity must be an array of 3 numbers (got an array of 2)\n"
                       "output.fields must be an array of names (got \"position\")"},
    {"bad_nan_strings.json", "simulation.fps must be a number (got \"NaN\")\n"
                             "simulation.gravity[1] must be a number (got \"-Infinity\")"},
    {"bad_huge_number.json", "simulation.fps must be a finite number (got inf)"},
    {"bad_unknown_key.json", "simulation.fpz: unknown key (expected one of: fps, frames, "
                             "duration, substeps, iterations, gravity, dimensions, adaptive, cfl, damping, relaxation, "
                             "max_speed, pressure_solver, pressure_iterations, "
                             "pressure_tolerance, seed)"},
    {"bad_duplicate_key.json", "simulation.fps: duplicate key (given 2 times)"},
    {"bad_truncated.json", "2:14: invalid JSON: unexpected end of file"},
    {"bad_syntax.json", "2:29: invalid JSON near ' \"frames\": 10},'"},
    {"bad_empty.json", "empty file (expected a JSON object)"},
    {"bad_not_object.json", "the scene must be an object (got an array of 3)"},
    {"bad_enum.json", "domain.boundary.type must be one of \"penalty\", \"clamp\", "
                      "\"particles\" (got \"bouncy\")"},
    {"bad_box_inverted.json",
     "fluids[0].box: max must exceed min on every axis (y: min 0.5, max 0.3)"},
    {"bad_outside_domain.json",
     "fluids[0].box must lie inside the domain (x: box 0.1..1.3, domain 0..1)"},
    {"bad_version.json", "mizu_scene must be 1 (this mizu reads scene format 1; got 2)"},
    {"bad_no_particles.json", "the scene makes no particles (add a fluid with a box or positions, a cloth or a mesh)"},
    {"bad_missing_required.json",
     "domain is required (the simulation box and its walls)\n"
     "fluids[0].spacing is required (particle spacing; a particle's contact radius is half of it)"},
    {"no_such_file.json", "cannot read the scene: No such file or directory"},
};

static void test_bad_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        char path[256];
        snprintf(path, sizeof path, DATA "%s", bad_cases[i].file);
        char *got = load_errors(path, NULL, 0);
        if (strcmp(got, bad_cases[i].expected))
            fail_msg("%s:\n  expected: %s\n  got:      %s", bad_cases[i].file,
                     bad_cases[i].expected, got);
        free(got);
    }
}

static void test_valid_defaults(void **state)
{
    (void)state;
    mz_scene s;
    mz_diag d = {0};
    assert_int_equal(scene_load(DATA "good_minimal.json", NULL, 0, &s, &d), 0);
    assert_int_equal(d.count, 0);
    assert_int_equal(s.version, 1);
    assert_true(s.sim.fps == 60.0);
    assert_int_equal(s.sim.frames, 240);
    assert_int_equal(s.sim.substeps, 4);
    assert_int_equal(s.sim.dimensions, 3);
    assert_true(s.sim.gravity[1] == -9.81);
    assert_int_equal(s.domain.boundary.type, MZ_BOUNDARY_PENALTY);
    assert_true(s.domain.boundary.stiffness == 10000.0);
    assert_int_equal(s.n_fluids, 1);
    assert_true(s.fluids[0].has_box);
    /* 0.2 / 0.05 = 4 cells per axis despite round-off. */
    assert_int_equal(scene_particle_count(&s), 64);
    assert_true(fabs(build_particle_mass(&s, &s.fluids[0]) - 0.125) < 1e-15);
    assert_string_equal(s.dir, "tests/data");
    /* The effective scene is complete JSON that loads again to the same values. */
    cJSON *eff = cJSON_Parse(s.effective_json);
    assert_non_null(eff);
    cJSON *fps = cJSON_GetObjectItem(cJSON_GetObjectItem(eff, "simulation"), "fps");
    assert_true(cJSON_IsNumber(fps) && fps->valuedouble == 60.0);
    cJSON_Delete(eff);
    mz_scene again;
    assert_int_equal(scene_load_text(s.effective_json, strlen(s.effective_json), "x.json", NULL,
                                     0, &again, &d),
                     0);
    assert_string_equal(again.effective_json, s.effective_json);
    scene_free(&again);
    scene_free(&s);
}

static void test_overrides(void **state)
{
    (void)state;
    const char *sets[] = {"fluids[0].spacing=0.1", "simulation.gravity=[0,-1,0]",
                          "output.compression=gzip", "domain.boundary.type=\"clamp\""};
    mz_scene s;
    mz_diag d = {0};
    assert_int_equal(scene_load(DATA "good_minimal.json", sets, 4, &s, &d), 0);
    assert_true(s.fluids[0].spacing == 0.1);
    assert_true(s.sim.gravity[1] == -1.0);
    assert_int_equal(s.output.compression, MZ_COMPRESSION_GZIP);
    assert_int_equal(s.domain.boundary.type, MZ_BOUNDARY_CLAMP);
    assert_int_equal(scene_particle_count(&s), 8);
    assert_int_equal(s.n_overrides, 4);
    assert_string_equal(s.overrides[0], "fluids[0].spacing=0.1");
    assert_non_null(strstr(s.effective_json, "\"clamp\""));
    assert_non_null(strstr(s.given_json, "\"spacing\": 0.05"));
    scene_free(&s);
}

static void test_bad_overrides(void **state)
{
    (void)state;
    static const struct {
        const char *set, *expected;
    } cases[] = {
        {"fluids[3].spacing=1", "--set fluids[3].spacing: fluids has 1 element"},
        {"fluids[0].spacing=-1", "fluids[0].spacing must be > 0 (got -1)"},
        {"simulation.fpz=1", "simulation.fpz: unknown key (expected one of: fps, frames, "
                             "duration, substeps, iterations, gravity, dimensions, adaptive, cfl, damping, relaxation, "
                             "max_speed, pressure_solver, pressure_iterations, "
                             "pressure_tolerance, seed)"},
        {"nothing", "--set nothing: expected PATH=VALUE, e.g. fluids[0].spacing=0.02"},
        {"colliders[0].radius=1", "--set colliders[0].radius: colliders is not in the scene"},
        {"simulation.fps=fast", "simulation.fps must be a number (got \"fast\")"},
        {"simulation.fps=60fps", "simulation.fps must be a number (got \"60fps\")"},
        {"simulation.fps.=5", "--set simulation.fps.: bad path (ends with '.')"},
        {"fluids[0].=5", "--set fluids[0].: bad path (ends with '.')"},
        {"simulation.frames=2000000000", "simulation.frames must be >= 1 and <= 1e+09 (got 2e+09)"},
        {"domain.boundary.friction=free_slip", "domain.boundary.friction \"free_slip\" applies "
                                               "to domain.boundary.type \"particles\" (SPH "
                                               "boundary particles)"},
        /* the fuzz harness's check that a loaded scene has a finite step; every number must
         * be one single precision holds */
        {"simulation.fps=1e-320", "simulation.fps must be 0 or of magnitude between 1.17549e-38 "
                                  "and 3.40282e+38, which the device's single precision holds "
                                  "(got 9.99989e-321)"},
        {"simulation.gravity=[0,-1e308,0]", "simulation.gravity[1] must be 0 or of magnitude "
                                            "between 1.17549e-38 and 3.40282e+38, which the "
                                            "device's single precision holds (got -1e+308)"},
        {"simulation.frames=1000000001", "simulation.frames must be >= 1 and <= 1e+09 (got "
                                         "1000000001)"},
        /* cJSON would cut the string there: the stored scene would not be the one that ran */
        {"fluids[0].name=\"a\\u0000b\"", "--set fluids[0].name=\"a\\u0000b\": a NUL character "
                                         "(\\u0000): a scene's strings cannot hold one"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *set = cases[i].set;
        char *got = load_errors(DATA "good_minimal.json", &set, 1);
        if (strcmp(got, cases[i].expected))
            fail_msg("--set %s:\n  expected: %s\n  got:      %s", set, cases[i].expected, got);
        free(got);
    }
}

/* The wall function takes its stress from the fluid's viscosity: none is an error. */
static void test_wall_function_needs_viscosity(void **state)
{
    (void)state;
    const char *sets[] = {"domain.boundary.friction=wall_function"};
    char *got = load_errors("scenes/dam_break_2d.json", sets, 1);
    assert_string_equal(got, "fluids[0].viscosity must be > 0 with domain.boundary.friction "
                             "\"wall_function\" (the wall's shear stress follows from it: "
                             "water at 20 C is 0.001 Pa s)");
    free(got);
}

static void test_bad_colliders(void **state)
{
    (void)state;
    const char *base = "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1],"
                       " \"boundary\": {\"type\": \"particles\"}}, \"fluids\": [{\"solver\":"
                       " \"wcsph\", \"box\": {\"min\": [0,0,0], \"max\": [0.2,0.2,0.2]},"
                       " \"spacing\": 0.05}, {\"solver\": \"wcsph\", \"positions\": [[0.3,0.3,0.3],"
                       " [0.6,0.6,0.6]], \"spacing\": 0.05}], \"colliders\": [%s]}";
    static const struct {
        const char *collider, *expected;
    } cases[] = {
        {"{\"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, \"box\": {\"min\": [0,0,0],"
         " \"max\": [1,1,1]}}", "colliders[0]: give exactly one of sphere, box, plane or capsule"},
        {"{\"sphere\": {\"center\": [0.1,0.1,0.1], \"radius\": 0.05}}",
         "fluids[0].box reaches within half a spacing of colliders[0] (its particles would "
         "start on the solid's own)"},
        {"{\"plane\": {\"point\": [0,0.5,0], \"normal\": [0,0,0]}}",
         "colliders[0].plane.normal must not be zero in the simulated axes"},
        {"{\"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": -1}}",
         "colliders[0].sphere.radius must be > 0 (got -1)"},
        {"{\"box\": {\"min\": [0.5,0.5,0.5], \"max\": [0.9,0.9,0.9]}}",
         "fluids[1].positions[1] lies within half a spacing of colliders[0]"},
        {"{\"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, \"forces\": {}}",
         "colliders[0].forces: give the collider a name (it names the output group "
         "/observables/colliders/<name>)"},
        {"{\"name\": \"a/b\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"forces\": {\"rate\": 100}}",
         "colliders[0].name \"a/b\": use letters, digits, '_', '-' and '.' (it names an HDF5 "
         "group)"},
        {"{\"name\": \"s\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"forces\": {\"rate\": -1}}",
         "colliders[0].forces.rate must be >= 0 (got -1)"},
        {"{\"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, \"motion\": "
         "{\"type\": \"translation\", \"amplitude\": 0.1}}",
         "colliders[0].motion: give the collider a name (it names the output group "
         "/observables/colliders/<name>)"},
        {"{\"name\": \"s\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"motion\": {\"type\": \"translation\", \"amplitude\": 0.1, \"phase\": 90}}",
         "colliders[0].motion: the law is 0.1 m at t = 0, not 0 (the scene's geometry is where "
         "the collider starts: a phase of 0 or 180 degrees, or a ramp)"},
        {"{\"name\": \"s\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"motion\": {\"type\": \"translation\", \"direction\": [0, 0, 0]}}",
         "colliders[0].motion.direction must not be zero in the simulated axes"},
        {"{\"name\": \"s\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"motion\": {\"type\": \"rotation\", \"table\": \"no-such-table.csv\"}}",
         "colliders[0].motion.table: cannot read ./no-such-table.csv: No such file or directory"},
        {"{\"name\": \"s\", \"sphere\": {\"center\": [0.5,0.5,0.5], \"radius\": 0.1}, "
         "\"motion\": {\"type\": \"spin\"}}",
         "colliders[0].motion.type must be one of \"translation\", \"rotation\" (got \"spin\")"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text, base, cases[i].collider);
        mz_scene s;
        mz_diag d = {0};
        assert_int_equal(scene_load_text(text, strlen(text), "c.json", NULL, 0, &s, &d), -1);
        if (d.count != 1 || strcmp(d.msgs[0], cases[i].expected))
            fail_msg("case %zu: expected %s, got %s", i, cases[i].expected,
                     d.count ? d.msgs[0] : "(nothing)");
        diag_free(&d);
        scene_free(&s);
    }
    /* Two SPH fluids in one place would double the density there. */
    const char *overlap = "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                          " \"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0,0,0],"
                          " \"max\": [0.5,0.5,0.5]}, \"spacing\": 0.05}, {\"solver\": \"wcsph\","
                          " \"box\": {\"min\": [0.4,0,0], \"max\": [0.9,0.5,0.5]}, \"spacing\": 0.05}]}";
    mz_scene so;
    mz_diag dd = {0};
    assert_int_equal(scene_load_text(overlap, strlen(overlap), "o.json", NULL, 0, &so, &dd), -1);
    assert_string_equal(dd.msgs[0], "fluids[1].box overlaps fluids[0].box");
    diag_free(&dd);
    scene_free(&so);
    /* Forces on solids: SPH measures them on boundary particles. */
    static const struct {
        const char *scene, *set, *expected;
    } loads[] = {
        {"scenes/dam_break_2d.json", "domain.boundary.type=\"penalty\"",
         "domain.boundary.forces: SPH measures the forces on its boundary particles: set "
         "domain.boundary.type to \"particles\""},
    };
    for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
        const char *sets[] = {"domain.boundary.forces={\"rate\": 10}", loads[i].set};
        char *got = load_errors(loads[i].scene, sets, 2);
        assert_string_equal(got, loads[i].expected);
        free(got);
    }
    /* Position-based solvers feel colliders by signed distance; SPH with penalty walls cannot
     * feel them at all: refused, not ignored. */
    const char *ballistic = "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                            " \"fluids\": [{\"positions\": [[0.5,0.9,0.5]], \"spacing\": 0.1}],"
                            " \"colliders\": [{\"capsule\": {\"a\": [0.2,0.5,0.5], \"b\": [0.8,0.5,0.5],"
                            " \"radius\": 0.1}}]}";
    mz_scene s;
    mz_diag d = {0};
    assert_int_equal(scene_load_text(ballistic, strlen(ballistic), "b.json", NULL, 0, &s, &d), 0);
    scene_free(&s);
    const char *sph = "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                      " \"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0,0,0],"
                      " \"max\": [0.3,0.3,0.3]}, \"spacing\": 0.05}],"
                      " \"colliders\": [{\"sphere\": {\"center\": [0.7,0.5,0.5], \"radius\": 0.1}}]}";
    assert_int_equal(scene_load_text(sph, strlen(sph), "s.json", NULL, 0, &s, &d), -1);
    assert_string_equal(d.msgs[0], "colliders[0]: the SPH solvers feel colliders only with "
                                   "domain.boundary.type \"particles\"");
    diag_free(&d);
    scene_free(&s);
    /* PBF takes particle walls (with colliders), but not SPH's wall friction; the ballistic
     * solver takes none. */
    const char *pbf_walls[] = {"domain.boundary.type=particles",
                               "colliders=[{\"sphere\": {\"center\": [0.3,0,0.025], "
                               "\"radius\": 0.03}}]"};
    assert_int_equal(scene_load("scenes/pbf_flume_3d.json", pbf_walls, 2, &s, &d), 0);
    scene_free(&s);
    char *got;
    const char *pbf_friction[] = {"domain.boundary.type=particles",
                                  "domain.boundary.friction=free_slip"};
    got = load_errors("scenes/pbf_flume_3d.json", pbf_friction, 2);
    assert_string_equal(got, "domain.boundary.friction \"free_slip\" is SPH's: PBF's particle "
                             "walls count in its density only (free slip); for a wall's shear "
                             "stress set fluids[0].walls to \"wall_function\"");
    free(got);
    const char *ballistic_walls[] = {"domain.boundary.type=particles"};
    got = load_errors("scenes/falling_block.json", ballistic_walls, 1);
    assert_string_equal(got, "domain.boundary.type \"particles\" needs an SPH solver (wcsph, "
                             "collapsed_sph or dfsph) or pbf");
    free(got);
}

/* Errors of different kinds come together, not one per run. */
static void test_errors_reported_together(void **state)
{
    (void)state;
    const char *sets[] = {"output.fields=[\"position\",\"density\"]",
                          "fluids[0].box.max=[0.3,0.05,0.3]"};
    char *got = load_errors(DATA "good_minimal.json", sets, 2);
    assert_string_equal(got, "fluids[0].box: max must exceed min on every axis (y: min 0.1, "
                             "max 0.05)\n"
                             "output.fields: density is not produced by the ballistic solver");
    free(got);
}

/* Random bytes must fail fast with a position, never crash. */
static void test_garbage(void **state)
{
    (void)state;
    size_t n = 10u << 20;
    char *junk = malloc(n);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        junk[i] = (char)(x >> 56);
    }
    mz_scene s;
    mz_diag d = {0};
    /* The limits are for native code; valgrind (tests/sanitize/valgrind-tests.sh sets
     * MIZU_TEST_SLOW) runs it some 50 times slower. */
    double slow = getenv("MIZU_TEST_SLOW") ? 50 : 1;
    clock_t t0 = clock();
    assert_int_equal(scene_load_text(junk, n, "junk.json", NULL, 0, &s, &d), -1);
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0 * slow);
    assert_int_equal(d.count, 1);
    assert_non_null(strstr(d.msgs[0], "invalid JSON"));
    diag_free(&d);
    scene_free(&s);
    /* A valid but huge object of unknown keys: linear time, capped messages. */
    mz_str big = {0};
    str_addf(&big, "{\"mizu_scene\": 1");
    for (int i = 0; i < 200000; i++)
        str_addf(&big, ", \"k%d\": %d", i, i);
    str_addf(&big, "}");
    t0 = clock();
    assert_int_equal(scene_load_text(big.s, big.len, "big.json", NULL, 0, &s, &d), -1);
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0 * slow);
    assert_int_equal(d.count, MZ_DIAG_MAX);
    assert_true(d.dropped > 0);
    diag_free(&d);
    scene_free(&s);
    str_free(&big);
    free(junk);
}

/* A NUL character in a scene string, raw or escaped, is refused with its place; an escaped
 * backslash followed by "u0000" is text like any other. */
static void test_nul_in_strings(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;
        const char *expected;
    } cases[] = {
        {"{\"mizu_scene\": 1,\n \"description\": \"a\\u0000b\"}", 0,
         "2:19: a NUL character (\\u0000): a scene's strings cannot hold one"},
        {"{\"mizu_scene\": 1, \"description\": \"a\0b\"}", 39,
         "1:36: a NUL character (\\u0000): a scene's strings cannot hold one"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mz_scene s;
        mz_diag d = {0};
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
        assert_int_equal(scene_load_text(cases[i].text, len, "n.json", NULL, 0, &s, &d), -1);
        assert_true(d.count >= 1);
        if (strcmp(d.msgs[0], cases[i].expected))
            fail_msg("case %zu:\n  expected: %s\n  got:      %s", i, cases[i].expected,
                     d.msgs[0]);
        diag_free(&d);
    }
    const char *fine = "{\"mizu_scene\": 1, \"description\": \"a\\\\u0000b\"}";
    mz_scene s;
    mz_diag d = {0};
    scene_load_text(fine, strlen(fine), "f.json", NULL, 0, &s, &d);
    for (size_t i = 0; i < d.count; i++)
        assert_null(strstr(d.msgs[i], "NUL"));
    diag_free(&d);
    if (d.count == 0)
        scene_free(&s);
}

static void test_explicit_particles(void **state)
{
    (void)state;
    const char *text = "{\"mizu_scene\": 1, \"simulation\": {\"dimensions\": 2},"
                       "\"domain\": {\"min\": [0,0,0], \"max\": [1,1,0]},"
                       "\"fluids\": [{\"positions\": [[0.5,0.5,0.3],[0.2,0.2,0]],"
                       " \"velocities\": [[1,0,5],[0,1,0]], \"spacing\": 0.1, \"mass\": 2}]}";
    mz_scene s;
    mz_diag d = {0};
    assert_int_equal(scene_load_text(text, strlen(text), "p.json", NULL, 0, &s, &d), 0);
    mz_particles p;
    build_particles(&s, &p);
    assert_int_equal(p.n, 2);
    assert_true(p.pos[2] == 0.0f && p.vel[2] == 0.0f); /* 2D: z held at 0 */
    assert_true(p.pos[3] == 0.05f);                   /* contact radius */
    assert_true(p.vel[0] == 1.0f && p.inv_mass[0] == 0.5f);
    assert_int_equal(p.id[1], 1);
    particles_free(&p);
    scene_free(&s);
    const char *mismatch = "{\"mizu_scene\": 1, \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                           "\"fluids\": [{\"positions\": [[0.5,0.5,0.5]], \"velocities\": [],"
                           " \"spacing\": 0.1}, {\"positions\": [[2,0,0]], \"spacing\": 0.1}]}";
    assert_int_equal(scene_load_text(mismatch, strlen(mismatch), "m.json", NULL, 0, &s, &d), -1);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0], "fluids[1].positions[0] lies outside the domain");
    diag_free(&d);
    scene_free(&s);
}

/* Inputs the fuzzer found (tests/fuzz/, docs/testing.md), replayed through the harness's own code
 * (fuzz/scene_input.h: the scene, then NUL-separated --set overrides; "obj" paths resolve in
 * scenes/): each loads or is refused with messages, and breaks none of the harness's checks.
 * Those that are plain scenes also give the message they were fixed to give. */
static void test_fuzz_regressions(void **state)
{
    (void)state;
    static const struct bad_case expected[] = {
        /* collider index ranges were converted to long before clipping to the domain */
        {"collider_sphere_huge_radius.json", "colliders[0] gets no boundary particle at spacing "
                                             "0.4 (it is thinner than the spacing, outside the "
                                             "domain, or inside an earlier collider)"},
        {"collider_box_huge_max.json", "colliders[0] gets no boundary particle at spacing 0.004 "
                                       "(it is thinner than the spacing, outside the domain, or "
                                       "inside an earlier collider)"},
        /* found reviewing that fix: the wall count came out 0 for 1e22 cells a side (the shell
         * vanished in rounding), and the same conversion followed */
        {"walls_huge_domain.json", "the domain's walls at spacing 0.01 make more than 2147483647 "
                                   "boundary particles, the most supported"},
    };
    DIR *dir = opendir(DATA "fuzz");
    assert_non_null(dir);
    size_t replayed = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, DATA "fuzz/%s", e->d_name);
        size_t len;
        char *input = read_file(path, &len);
        assert_non_null(input);
        if (fuzz_scene_input((const uint8_t *)input, len, "scenes") < 0)
            fail_msg("%s: a fuzz_scene check failed (message above)", path);
        free(input);
        replayed++;
    }
    closedir(dir);
    assert_true(replayed >= sizeof expected / sizeof *expected);
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++) {
        char path[256];
        snprintf(path, sizeof path, DATA "fuzz/%s", expected[i].file);
        char *got = load_errors(path, NULL, 0);
        if (strcmp(got, expected[i].expected))
            fail_msg("%s:\n  expected: %s\n  got:      %s", expected[i].file,
                     expected[i].expected, got);
        free(got);
    }
}

typedef struct motion_case {
    const char *motion, *expected; /* expected NULL: the scene loads */
} motion_case;

/* Each case's law put into the scene `fmt` (its one %s), written to `file` and loaded: refused
 * with exactly the expected message (its %s: the test directory), or loaded and handed to
 * `ok`. */
static void motion_cases(const char *fmt, const char *file, const motion_case *cases, size_t n,
                         void (*ok)(const mz_scene *))
{
    for (size_t i = 0; i < n; i++) {
        char text[1024], path[600], want[1024];
        snprintf(text, sizeof text, fmt, cases[i].motion);
        snprintf(path, sizeof path, "%s", test_path(file));
        write_text(path, text);
        mz_scene sc;
        mz_diag d = {0};
        int rc = scene_load(path, NULL, 0, &sc, &d);
        if (!cases[i].expected) {
            if (rc != 0)
                fail_msg("%s case %zu: %s", file, i, d.count ? d.msgs[0] : "?");
            ok(&sc);
        } else {
            snprintf(want, sizeof want, cases[i].expected, test_dir());
            assert_int_equal(rc, -1);
            if (d.count != 1 || strcmp(d.msgs[0], want))
                fail_msg("%s case %zu: expected %s, got %s", file, i, want,
                         d.count ? d.msgs[0] : "-");
        }
        diag_free(&d);
        scene_free(&sc);
    }
}

/* good.csv on a collider: a row gives its value, a maximum is at rest there; the collider's
 * centre is the default axis point. */
static void collider_law_ok(const mz_scene *sc)
{
    const mz_motion *m = &sc->colliders[0].motion;
    assert_int_equal(m->table_n, 3);
    double x[3];
    motion_eval(m, 0.5, x);
    assert_true(fabs(x[0] - 10 * acos(-1.0) / 180) < 1e-12 && x[1] == 0);
    assert_true(m->center[0] == 0.55 && m->center[1] == 0.25);
}

/* good.csv on the domain: it turns about the domain's centre unless told. */
static void domain_law_ok(const mz_scene *sc)
{
    const mz_motion *m = &sc->domain.motion;
    assert_true(sc->domain.has_motion && m->table_n == 3);
    assert_true(m->center[0] == 0.5 && m->center[1] == 0.3 && m->unit[2] == 1);
    assert_int_equal(scene_pose_count(sc), 1);
}

/* colliders[].motion.table: read relative to the scene, a header line and comments allowed;
 * bad rows, times that do not increase, a table that does not start at 0 and a 2D rotation
 * about another axis refused with the file and line. domain.motion likewise, named by its own
 * path. */
static void test_motion_tables(void **state)
{
    (void)state;
    write_text(test_path("good.csv"), "# paddle angle\ntime,angle\n0,0\n0.5,10\n1.0;-10\n");
    write_text(test_path("bad_row.csv"), "0 0\n0.5 x\n");
    write_text(test_path("back.csv"), "0 0\n0.5 1\n0.4 2\n");
    write_text(test_path("start.csv"), "0 2\n1 3\n");
    write_text(test_path("one.csv"), "0 0\n");
    write_text(test_path("none.csv"), "time,angle\nfoo bar baz\n"); /* no row: once a crash */
    static const motion_case cases[] = {
        {"{\"type\": \"rotation\", \"table\": \"good.csv\"}", NULL},
        {"{\"type\": \"rotation\", \"table\": \"bad_row.csv\"}",
         "colliders[0].motion.table: %s/bad_row.csv line 2: expected two numbers, time (s) and "
         "value"},
        {"{\"type\": \"rotation\", \"table\": \"back.csv\"}",
         "colliders[0].motion.table: %s/back.csv line 3: time 0.4 does not increase (the row "
         "before is at 0.5 s)"},
        {"{\"type\": \"translation\", \"table\": \"start.csv\"}",
         "colliders[0].motion: the law is 2 m at t = 0, not 0 (the scene's geometry is where the "
         "collider starts: make the table's value at t = 0 zero)"},
        {"{\"type\": \"translation\", \"table\": \"one.csv\"}",
         "colliders[0].motion.table: %s/one.csv has 1 rows; a motion needs at least 2"},
        {"{\"type\": \"rotation\", \"axis\": [1, 0, 0], \"amplitude\": 5}",
         "colliders[0].motion.axis must be [0, 0, 1] or [0, 0, -1] in 2D (got [1, 0, 0])"},
    };
    motion_cases("{\"mizu_scene\": 1, \"simulation\": {\"dimensions\": 2}, \"domain\": {\"min\": "
                 "[0,0,0], \"max\": [1,1,0], \"boundary\": {\"type\": \"particles\"}}, "
                 "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0,0,0], \"max\": "
                 "[0.2,0.2,0]}, \"spacing\": 0.02}], \"colliders\": [{\"name\": \"p\", \"box\": "
                 "{\"min\": [0.5,0,0], \"max\": [0.6,0.5,0]}, \"motion\": %s}]}",
                 "moving.json", cases, sizeof cases / sizeof *cases, collider_law_ok);
    static const motion_case domain[] = {
        {"{\"type\": \"rotation\", \"table\": \"good.csv\"}", NULL},
        {"{\"type\": \"translation\", \"table\": \"start.csv\"}",
         "domain.motion: the law is 2 m at t = 0, not 0 (the scene's geometry is where the "
         "domain starts: make the table's value at t = 0 zero)"},
        {"{\"type\": \"rotation\", \"axis\": [0, 1, 0], \"amplitude\": 5}",
         "domain.motion.axis must be [0, 0, 1] or [0, 0, -1] in 2D (got [0, 1, 0])"},
        {"{\"type\": \"rotation\", \"table\": \"back.csv\"}",
         "domain.motion.table: %s/back.csv line 3: time 0.4 does not increase (the row before "
         "is at 0.5 s)"},
        {"{\"type\": \"translation\", \"table\": \"none.csv\"}",
         "domain.motion.table: %s/none.csv line 2: expected two numbers, time (s) and value"},
    };
    motion_cases("{\"mizu_scene\": 1, \"simulation\": {\"dimensions\": 2}, \"domain\": {\"min\": "
                 "[0,0,0], \"max\": [1,0.6,0], \"boundary\": {\"type\": \"particles\"}, "
                 "\"motion\": %s}, \"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": "
                 "[0,0,0], \"max\": [0.2,0.2,0]}, \"spacing\": 0.02}]}",
                 "rolling.json", domain, sizeof domain / sizeof *domain, domain_law_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_table),      cmocka_unit_test(test_valid_defaults),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_wall_function_needs_viscosity),
        cmocka_unit_test(test_bad_overrides),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_nul_in_strings),
        cmocka_unit_test(test_explicit_particles),
        cmocka_unit_test(test_bad_colliders),
        cmocka_unit_test(test_motion_tables),
        cmocka_unit_test(test_errors_reported_together),
        cmocka_unit_test(test_fuzz_regressions),
    };
    return cmocka_run_group_tests_name("scene", tests, NULL, NULL);
}
