/* Batch data integrity, through the mizu binary (docs/batch.md, "What a run guarantees"):
 * damaged checkpoints (random bit flips and targeted edits) are refused or resume
 * bit-identically, never crash; a checkpoint resumes only into its own run's output; a mesh
 * edited since the checkpoint is refused; --frames that would drop frames is refused; inputs
 * that never end are refused.
 *
 * MIZU_FLIPS sets the number of random flips (default 100; docs/testing.md has longer runs). */
#include "test_files.h"
#include "test_util.h"
#include "util/err.h"

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCENE "scenes/dam_break_2d.json"
#define FRAMES 4 /* the reference run's */
#define CKPT_AT 2

/* The reference (FRAMES frames straight) and a run stopped at its checkpoint at CKPT_AT, both
 * made once per test. */
typedef struct fixture {
    char ref[512], part[512], ckpt[512];
} fixture;

static void make_fixture(fixture *fx)
{
    snprintf(fx->ref, sizeof fx->ref, "%s", test_path("ref.h5"));
    snprintf(fx->part, sizeof fx->part, "%s", test_path("part.h5"));
    snprintf(fx->ckpt, sizeof fx->ckpt, "%s", test_path("part.ckpt.h5"));
    char args[2048];
    snprintf(args, sizeof args, "run %s --frames %d -q -o %s", SCENE, FRAMES, fx->ref);
    assert_int_equal(run_mizu(args, NULL), 0);
    snprintf(args, sizeof args, "run %s --frames %d -q -o %s --checkpoint-every %d", SCENE,
             CKPT_AT, fx->part, CKPT_AT);
    assert_int_equal(run_mizu(args, NULL), 0);
    assert_true(exists(fx->ckpt));
}

static unsigned char *slurp_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_bytes(const char *path, const unsigned char *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

/* Whether two outputs hold the same frames, byte for byte, and the second is complete. */
static bool same_frames(const char *a_path, const char *b_path)
{
    hid_t a = H5Fopen(a_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t b = H5Fopen(b_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int compared = 0;
    bool same = a >= 0 && b >= 0 && run_attr(b, "complete") == 1 &&
                frames_differ(a, b, &compared) == NULL && compared >= 4;
    if (a >= 0)
        H5Fclose(a);
    if (b >= 0)
        H5Fclose(b);
    return same;
}

typedef struct tally {
    int tried, refused, identical;
} tally;

/* Resume a copy of the stopped run from checkpoint bytes ck (len): a refusal (exit 1, "mizu:
 * error") or the reference's frames, nothing else. */
static void resume_damaged(const fixture *fx, const unsigned char *ck, size_t len,
                           const char *what, tally *t)
{
    const char *out = test_path("try.h5"), *path = test_path("try.ckpt.h5");
    size_t n;
    unsigned char *part = slurp_bytes(fx->part, &n);
    write_bytes(out, part, n);
    free(part);
    write_bytes(path, ck, len);
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run --resume %s --frames %d -q -o %s", path, FRAMES, out);
    int rc = run_mizu(args, &err);
    t->tried++;
    if (rc == 1 && err && strstr(err, "mizu: error"))
        t->refused++;
    else if (rc == 0 && same_frames(fx->ref, out))
        t->identical++;
    else
        fail_msg("%s: exit %d (-1: killed by a signal) and %s: %s", what, rc,
                 rc == 0 ? "frames that differ from the uninterrupted run's" : "no refusal",
                 err ? err : "");
    free(err);
}

static void test_random_bit_flips(void **state)
{
    (void)state;
    fixture fx;
    make_fixture(&fx);
    size_t len;
    unsigned char *ck = slurp_bytes(fx.ckpt, &len);
    tally t = {0};
    resume_damaged(&fx, ck, len, "the undamaged checkpoint", &t);
    assert_int_equal(t.identical, 1);
    const char *env = getenv("MIZU_FLIPS");
    int flips = env ? atoi(env) : 100;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < flips; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t at = (size_t)(seed >> 17) % len;
        int bit = (int)(seed >> 3) & 7;
        ck[at] ^= (unsigned char)(1u << bit);
        char what[96];
        snprintf(what, sizeof what, "bit %d of byte %zu flipped", bit, at);
        resume_damaged(&fx, ck, len, what, &t);
        ck[at] ^= (unsigned char)(1u << bit);
    }
    free(ck);
    print_message("checkpoint of %zu bytes, %d random bit flips: %d refused, %d resumed "
                  "bit-identically, 0 crashes, 0 silent differences\n",
                  len, flips, t.refused, t.identical - 1);
    assert_int_equal(t.refused + t.identical, t.tried);
}

/* Rewrite one value of a copy of the checkpoint through HDF5, as a hostile edit would. */
static void edit_attr(const char *path, const char *obj, const char *name, hid_t type,
                      const void *v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t g = H5Oopen(f, obj, H5P_DEFAULT), sp = H5Screate(H5S_SCALAR);
    assert_true(g >= 0 && H5Adelete(g, name) >= 0);
    hid_t a = H5Acreate2(g, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, type, v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(g);
    H5Fclose(f);
}

static void edit_u32(const char *path, const char *dataset, size_t index, uint32_t v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    assert_true(d >= 0);
    hsize_t start = 4 * index, count = 4;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    assert_true(H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, &v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

/* Each targeted edit the issue found harmful is refused with "damaged". */
static void test_targeted_edits(void **state)
{
    (void)state;
    fixture fx;
    make_fixture(&fx);
    const char *copy = test_path("edit.ckpt.h5");
    int64_t huge = INT64_MAX, zero = 0;
    double nan_v = NAN;
    for (int k = 0; k < 5; k++) {
        size_t len;
        unsigned char *b = slurp_bytes(fx.ckpt, &len);
        write_bytes(copy, b, len);
        free(b);
        const char *what = "";
        switch (k) {
        case 0: what = "frame = INT64_MAX";
            edit_attr(copy, "/run", "frame", H5T_NATIVE_INT64, &huge); break;
        case 1: what = "frames_written = 0";
            edit_attr(copy, "/run", "frames_written", H5T_NATIVE_INT64, &zero); break;
        case 2: what = "time = NaN";
            edit_attr(copy, "/run", "time", H5T_NATIVE_DOUBLE, &nan_v); break;
        case 3: what = "an id beyond N"; edit_u32(copy, "/state/id", 7, 1u << 30); break;
        case 4: what = "body 0xffffffff"; edit_u32(copy, "/state/body", 3, 0xffffffffu); break;
        }
        char args[2048], *err = NULL;
        snprintf(args, sizeof args, "run --resume %s --frames %d -q -o %s", copy, FRAMES,
                 test_path("edit.h5"));
        int rc = run_mizu(args, &err);
        if (rc != 1 || !strstr(err, "damaged"))
            fail_msg("%s: exit %d: %s", what, rc, err);
        free(err);
    }
}

/* --resume A's checkpoint -o B, B another run's output: refused, B untouched. */
static void test_foreign_output(void **state)
{
    (void)state;
    fixture fx;
    make_fixture(&fx);
    const char *other = test_path("other.h5");
    char args[2048], *err = NULL;
    snprintf(args, sizeof args,
             "run %s --frames %d -q -o %s --set fluids[0].artificial_viscosity=0.06", SCENE,
             CKPT_AT, other);
    assert_int_equal(run_mizu(args, NULL), 0);
    size_t n0, n1;
    unsigned char *before = slurp_bytes(other, &n0);
    snprintf(args, sizeof args, "run --resume %s --frames %d -q -o %s", fx.ckpt, FRAMES, other);
    int rc = run_mizu(args, &err);
    if (rc != 1 || !strstr(err, "another run"))
        fail_msg("foreign output: exit %d: %s", rc, err);
    free(err);
    unsigned char *after = slurp_bytes(other, &n1);
    assert_true(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
}

/* A resume that would end before the checkpoint (exit 2) or with fewer frames than the output
 * holds (exit 1) is refused and the output keeps every frame. */
static void test_frames_never_dropped(void **state)
{
    (void)state;
    fixture fx;
    make_fixture(&fx);
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run --resume %s --frames 1 -q", fx.ckpt);
    int rc = run_mizu(args, &err);
    if (rc != 2 || !strstr(err, "before the checkpoint"))
        fail_msg("--frames before the checkpoint: exit %d: %s", rc, err);
    free(err);
    /* the stopped run's output extended to FRAMES, then a checkpoint at CKPT_AT resumed into
     * it with --frames CKPT_AT would drop the frames after */
    const char *again = test_path("again.ckpt.h5");
    size_t len;
    unsigned char *b = slurp_bytes(fx.ckpt, &len);
    write_bytes(again, b, len);
    free(b);
    snprintf(args, sizeof args, "run --resume %s --frames %d -q", fx.ckpt, FRAMES);
    assert_int_equal(run_mizu(args, NULL), 0);
    assert_true(same_frames(fx.ref, fx.part));
    snprintf(args, sizeof args, "run --resume %s --frames %d -q -o %s", again, CKPT_AT + 1,
             fx.part);
    rc = run_mizu(args, &err);
    if (rc != 1 || !strstr(err, "dropping the rest"))
        fail_msg("a resume that would drop frames: exit %d: %s", rc, err);
    free(err);
    assert_true(same_frames(fx.ref, fx.part));
}

/* A mesh edited between the run and its resume: refused, naming the body. */
static void test_mesh_changed(void **state)
{
    (void)state;
    const char *obj = test_path("cube.obj"), *scene = test_path("soft.json");
    size_t len;
    unsigned char *b = slurp_bytes("scenes/meshes/cube.obj", &len);
    write_bytes(obj, b, len);
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 60, \"frames\": 4, \"substeps\": 4},"
               " \"domain\": {\"min\": [-1,0,-1], \"max\": [1,2,1]},"
               " \"meshes\": [{\"obj\": \"cube.obj\", \"kind\": \"softbody\", \"spacing\": 0.1,"
               "   \"scale\": 0.3, \"translate\": [0, 1, 0]}]}");
    char args[2048], *err = NULL;
    const char *out = test_path("soft.h5"), *ck = test_path("soft.ckpt.h5");
    snprintf(args, sizeof args, "run %s --frames 2 --checkpoint-every 2 -q -o %s", scene, out);
    if (run_mizu(args, &err) != 0)
        fail_msg("soft body run: %s", err);
    free(err);
    /* the same geometry, another file: a comment line added */
    unsigned char *edited = malloc(len + 16);
    memcpy(edited, "# edited\n", 9);
    memcpy(edited + 9, b, len);
    write_bytes(obj, edited, len + 9);
    free(edited);
    snprintf(args, sizeof args, "run --resume %s --frames 4 -q", ck);
    int rc = run_mizu(args, &err);
    if (rc != 1 || !strstr(err, "meshes[0].obj") || !strstr(err, "changed"))
        fail_msg("edited mesh: exit %d: %s", rc, err);
    free(err);
    write_bytes(obj, b, len); /* restored: the resume goes on */
    free(b);
    rc = run_mizu(args, &err);
    if (rc != 0)
        fail_msg("restored mesh: exit %d: %s", rc, err);
    free(err);
}

/* A second run on an output another run is writing refuses at once, naming the process; the
 * first run's file is untouched by it. */
static void test_one_writer_per_output(void **state)
{
    (void)state;
    const char *out = test_path("busy.h5");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "run %s --frames 400 -q -o %s", SCENE, out);
    pid_t pid = spawn_mizu(cmd, test_path("busy.err"));
    assert_true(pid >= 0);
    struct stat st;
    for (int i = 0; i < 600 && !(stat(out, &st) == 0 && st.st_size > 0); i++)
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    assert_true(stat(out, &st) == 0 && st.st_size > 0);
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run %s --frames 2 -q -o %s", SCENE, out);
    int rc = run_mizu(args, &err);
    if (rc != 1 || !strstr(err, "being written by another mizu run (process"))
        fail_msg("second writer: exit %d: %s", rc, err);
    free(err);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Two roles on one file, an empty path, a file that is not a mizu output, another output's
 * checkpoint: refused before any compute, and the file in the way is untouched. */
static void test_path_collisions(void **state)
{
    (void)state;
    const char *scene = test_path("scene.json"), *notes = test_path("notes.h5");
    size_t len;
    unsigned char *text = slurp_bytes(SCENE, &len);
    write_bytes(scene, text, len);
    write_text(notes, "not a result\n");
    const char *other_out = test_path("first.h5"), *shared = test_path("shared.ckpt.h5");
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run %s --frames 2 -q -o %s --checkpoint %s --checkpoint-every 2",
             scene, other_out, shared);
    assert_int_equal(run_mizu(args, NULL), 0);
    static const struct {
        const char *fmt;
        int rc;
        const char *says;
    } cases[] = {
        {"run %1$s -q -o %1$s", 2, "are the same file"},
        {"run %1$s -q -o %2$s.x.h5 --checkpoint %2$s.x.h5", 2, "are the same file"},
        {"run %1$s -q -o %2$s.y.h5 --checkpoint %2$s.y.xdmf", 2, "are the same file"},
        {"run %1$s -q -o ''", 2, "the path is empty"},
        {"run %1$s -q -o %3$s", 1, "is not a mizu output"},
        {"run %1$s -q -o %2$s.z.h5 --checkpoint %4$s", 1, "checkpoint of another output"},
        {"run %1$s -q -o /nonexistent-dir/o.h5", 1, "No such file or directory"},
    };
    const char *stem = test_path("t");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, cases[i].fmt, scene, stem, notes, shared);
        int rc = run_mizu(cmd, &err);
        if (rc != cases[i].rc || !strstr(err, cases[i].says))
            fail_msg("mizu %s: exit %d (expected %d, \"%s\"): %s", cmd, rc, cases[i].rc,
                     cases[i].says, err);
        free(err);
    }
    size_t len2;
    unsigned char *after = slurp_bytes(scene, &len2);
    assert_true(len2 == len && memcmp(after, text, len) == 0);
    free(after);
    free(text);
    char *kept = (char *)slurp_bytes(notes, &len2);
    assert_true(len2 == 13 && !memcmp(kept, "not a result\n", 13));
    free(kept);
}

/* A CKPT.tmp left by a killed checkpoint write is removed with a note; a checkpoint that cannot
 * be written warns and the run finishes. */
static void test_checkpoint_trouble(void **state)
{
    (void)state;
    const char *out = test_path("tmp.h5"), *ck = test_path("tmp.ckpt.h5");
    mz_str stale = {0};
    str_addf(&stale, "%s.tmp", ck);
    write_text(stale.s, "half a checkpoint");
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run %s --frames 2 --checkpoint-every 1 -q -o %s", SCENE, out);
    int rc = run_mizu(args, &err);
    if (rc != 0 || !strstr(err, "removed") || exists(stale.s) || !exists(ck))
        fail_msg("stale temporary file: exit %d: %s", rc, err);
    free(err);
    /* another file where the checkpoint goes: every checkpoint is refused, the run finishes */
    write_text(ck, "in the way");
    snprintf(args, sizeof args, "run %s --frames 2 --checkpoint-every 1 -q -o %s --checkpoint %s",
             SCENE, test_path("tmp2.h5"), ck);
    rc = run_mizu(args, &err);
    if (rc != 1 || !strstr(err, "not a mizu checkpoint"))
        fail_msg("a file in the checkpoint's way: exit %d: %s", rc, err);
    free(err);
    str_free(&stale);
}

/* Inputs that never end, or are not files, are refused with exit 2 before anything is read. */
static void test_unbounded_inputs(void **state)
{
    (void)state;
    char *err = NULL;
    int rc = run_mizu("check /dev/zero", &err);
    if (rc != 2 || !strstr(err, "not a regular file"))
        fail_msg("mizu check /dev/zero: exit %d: %s", rc, err);
    free(err);
    const char *scene = test_path("zero.json");
    write_text(scene, "{\"mizu_scene\": 1, \"domain\": {\"min\": [-1,-1,-1], \"max\": [1,1,1]},"
                      " \"meshes\": [{\"obj\": \"/dev/zero\", \"kind\": \"cloth\"}]}");
    char args[1024];
    snprintf(args, sizeof args, "check %s", scene);
    rc = run_mizu(args, &err);
    if (rc != 2 || !strstr(err, "meshes[0].obj") || !strstr(err, "not a regular file"))
        fail_msg("obj /dev/zero: exit %d: %s", rc, err);
    free(err);
}

static char *read_text(const char *path)
{
    size_t len;
    char *t = (char *)slurp_bytes(path, &len);
    t = realloc(t, len + 1);
    t[len] = 0;
    return t;
}

/* A scene too big for the memory left is refused before its arrays are built. A soft body at a
 * fine spacing (13.7 million particles, 176 million constraints, 6.7 GB to build) is refused,
 * for the device's memory or (on a machine with less than that free) the host's, with a peak
 * of a few tens of MB instead of the gigabytes its geometry would take. Under an address-space
 * limit the scene is refused at load, and a smaller one that fits the scene check but not the
 * run's arrays and buffers is refused before they are built. ASan reserves terabytes of
 * address space, so the ulimit cases run only in the plain build. Runs first: it reads the
 * largest child's peak memory. */
static void test_memory_refused_before_building(void **state)
{
    (void)state;
    const char *out = test_path("big.h5"), *errpath = test_path("big.err");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s run scenes/softbody_drop.json --set meshes[0].spacing=0.001 "
             "--frames 1 -q -o %s 2>%s", mizu_bin(), out, errpath);
    int st = system(cmd);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    char *err = read_text(errpath);
    bool device = WIFEXITED(st) && WEXITSTATUS(st) == 1 &&
                  strstr(err, "of device memory for its 13658216 particles");
    bool host = WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
                strstr(err, "its 13658216 particles and 176280280 constraints need about 6.73 "
                            "GB of host memory");
    if (!device && !host)
        fail_msg("soft body at spacing 0.001: status %d: %s", st, err);
    print_message("soft body of 13658216 particles refused (%s memory) at a peak of %.0f MB\n",
                  device ? "device" : "host", ru.ru_maxrss / 1024.0);
    assert_true(ru.ru_maxrss < 300 * 1024);
    assert_false(exists(out));
    free(err);
    if (getenv("ASAN_OPTIONS")) {
        print_message("ulimit -v cases skipped under ASan\n");
        return;
    }
    static const struct {
        const char *spacing;
        int rc;
        const char *says;
    } cases[] = {
        {"0.001", 2, "its 13658216 particles and 176280280 constraints need about 6.73 GB of "
                     "host memory; the address-space limit (ulimit -v) leaves"},
        {"0.003", 1, "need about 0.695 GB of host memory; the address-space limit (ulimit -v) "
                     "leaves"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "ulimit -v 900000; exec %s run scenes/softbody_drop.json "
                 "--set meshes[0].spacing=%s --frames 1 -q -o %s 2>%s", mizu_bin(),
                 cases[i].spacing, out, errpath);
        st = system(cmd);
        err = read_text(errpath);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != cases[i].rc || !strstr(err, cases[i].says))
            fail_msg("spacing %s under ulimit -v 900000: status %d: %s", cases[i].spacing, st,
                     err);
        assert_false(exists(out));
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_refused_before_building),
        cmocka_unit_test(test_targeted_edits),
        cmocka_unit_test(test_foreign_output),
        cmocka_unit_test(test_frames_never_dropped),
        cmocka_unit_test(test_mesh_changed),
        cmocka_unit_test(test_unbounded_inputs),
        cmocka_unit_test(test_one_writer_per_output),
        cmocka_unit_test(test_path_collisions),
        cmocka_unit_test(test_checkpoint_trouble),
        cmocka_unit_test(test_random_bit_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
