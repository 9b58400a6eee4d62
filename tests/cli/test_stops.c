/* Runs that are stopped, through the mizu binary (docs/batch.md, "Signals"): SIGTERM in the
 * middle of a long frame is answered within two seconds with a checkpoint of that step, which
 * resumes bit-identically; kill -9 in a loop, many times inside a checkpoint write, never
 * leaves a checkpoint or an output that a resume refuses, and the run resumed after every kill
 * ends with the uninterrupted run's frames. */
#include "test_files.h"
#include "test_util.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCENE "scenes/dam_break_2d.json"

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap(double s)
{
    nanosleep(&(struct timespec){(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}, NULL);
}

static char *slurp_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *t = calloc(1 << 16, 1);
    if (f) {
        if (fread(t, 1, (1 << 16) - 1, f) == 0)
            t[0] = 0;
        fclose(f);
    }
    return t;
}

/* One frame of half a second of dam break takes a few seconds on a laptop core: a SIGTERM half
 * a second after the output appears lands inside it, in the adaptive SPH solver's steps, in
 * fixed substeps (the path every other solver takes) and in DFSPH's steps (a one-second frame
 * at a finer spacing: its pressure field is a mean over the frame's steps, whose sum and time so
 * far the checkpoint carries). */
static void test_sigterm_in_a_long_frame(void **state)
{
    (void)state;
    static const char *const variants[] = {
        "", "--set simulation.adaptive=false --set simulation.substeps=7000",
        "--set fluids[0].solver=dfsph --set fluids[0].spacing=0.0015 --set simulation.fps=1"};
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        const char *ref = test_path("long_ref.h5"), *out = test_path("long.h5");
        const char *ckpt = test_path("long.ckpt.h5"), *errpath = test_path("long.err");
        char base[1024], args[2048];
        snprintf(base, sizeof base, "run %s --set simulation.fps=2 --set fluids[0].spacing=0.004 "
                 "--frames 1 -q %s", SCENE, variants[v]);
        remove(ref), remove(out), remove(ckpt);
        snprintf(args, sizeof args, "%s -o %s", base, ref);
        assert_int_equal(run_mizu(args, NULL), 0);
        snprintf(args, sizeof args, "%s -o %s", base, out);
        pid_t pid = spawn_mizu(args, errpath);
        assert_true(pid > 0);
        struct stat st;
        for (int i = 0; i < 600 && !(stat(out, &st) == 0 && st.st_size > 0); i++)
            nap(0.01);
        nap(0.5);
        double t0 = wall();
        kill(pid, SIGTERM);
        int status = 0;
        waitpid(pid, &status, 0);
        double answered = wall() - t0;
        char *err = slurp_text(errpath);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 143 || !strstr(err, "in frame 1 (step"))
            fail_msg("variant %zu: SIGTERM mid-frame: status %d: %s", v, status, err);
        print_message("variant %zu: SIGTERM answered in %.3f s: %s", v, answered,
                      strstr(err, "mizu: stopped"));
        assert_true(answered < 2.0);
        free(err);
        snprintf(args, sizeof args, "run --resume %s -q", ckpt);
        char *rerr = NULL;
        int rc = run_mizu(args, &rerr);
        if (rc != 0)
            fail_msg("variant %zu: resume: exit %d: %s", v, rc, rerr);
        free(rerr);
        assert_same_frames(ref, out, 2);
    }
}

/* Probes and gauges through stops: a run checkpointed at frame 3 and carried on to frame 6,
 * then resumed again from its frame-3 checkpoint into the same output (whose samples past that
 * step are cut back and taken again), ends with the uninterrupted run's samples byte for
 * byte, every probe field and the gauge. */
static void test_probe_samples_resume(void **state)
{
    (void)state;
    const char *scene = test_path("probes.json"), *ref = test_path("probes_ref.h5");
    const char *out = test_path("probes.h5"), *ckpt = test_path("probes.ckpt.h5");
    const char *ck3 = test_path("probes_ck3.h5");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 6, "
               "\"dimensions\": 2, \"adaptive\": true},"
               "\"domain\": {\"min\": [0, 0, 0], \"max\": [0.2, 0.3, 0], \"boundary\": "
               "{\"type\": \"particles\", \"forces\": {\"rate\": 400}}},"
               "\"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0, 0, 0], "
               "\"max\": [0.1, 0.2, 0]}, \"spacing\": 0.01}],"
               "\"colliders\": [{\"name\": \"post\", \"box\": {\"min\": [0.15, 0, 0], "
               "\"max\": [0.17, 0.05, 0]}, \"forces\": {}, \"motion\": {\"type\": "
               "\"translation\", \"direction\": [0, 1, 0], \"amplitude\": 0.01, \"period\": "
               "0.1, \"ramp\": 0.05}}],"
               "\"probes\": [{\"name\": \"low\", \"position\": [0.05, 0.02, 0]}, "
               "{\"name\": \"wall\", \"position\": [0.19, 0.02, 0], \"rate\": 300, "
               "\"fields\": [\"pressure\"]}],"
               "\"gauges\": [{\"name\": \"g\", \"start\": [0.15, 0, 0], \"end\": "
               "[0.15, 0.3, 0], \"rate\": 250}]}");
    /* Every frame written (the samples go with them), and every fourth (they wait). */
    static const char *const variants[] = {"", "--set output.every=4"};
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        remove(ref), remove(out), remove(ckpt), remove(ck3);
        char args[2048];
        snprintf(args, sizeof args, "run %s -o %s -q %s", scene, ref, variants[v]);
        assert_int_equal(run_mizu(args, NULL), 0);
        snprintf(args, sizeof args, "run %s -o %s --frames 3 --checkpoint-every 3 -q %s", scene,
                 out, variants[v]);
        assert_int_equal(run_mizu(args, NULL), 0);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cp %s %s", ckpt, ck3);
        assert_int_equal(system(cmd), 0);
        snprintf(args, sizeof args, "run --resume %s --frames 6 -q", ckpt);
        assert_int_equal(run_mizu(args, NULL), 0);
        snprintf(args, sizeof args, "run --resume %s --frames 6 -q", ck3);
        assert_int_equal(run_mizu(args, NULL), 0);
        static const char *const series[] = {
            "/observables/probes/low/pressure/value", "/observables/probes/low/velocity/value",
            "/observables/probes/low/density/value",  "/observables/probes/low/fraction/value",
            "/observables/probes/low/pressure/step",  "/observables/probes/low/velocity/time",
            "/observables/probes/wall/pressure/value", "/observables/probes/wall/pressure/time",
            "/observables/gauges/g/value",             "/observables/gauges/g/step",
            "/observables/colliders/post/force/value", "/observables/colliders/post/torque/value",
            "/observables/colliders/post/torque/step", "/observables/walls/x_max/force/value",
            "/observables/walls/y_min/torque/time",
            "/observables/colliders/post/displacement/value",
            "/particles/moving_boundary/position/value"};
        hid_t a = H5Fopen(ref, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t b = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(a >= 0 && b >= 0);
        long frames = run_attr(a, "frames_written");
        size_t rows_low = 0, boundary_bytes = 0;
        for (size_t i = 0; i < sizeof series / sizeof *series; i++) {
            size_t na = 0, nb = 0;
            unsigned char *x = read_all(a, series[i], &na), *y = read_all(b, series[i], &nb);
            if (!x || !y || na != nb || memcmp(x, y, na) != 0)
                fail_msg("variant %zu: %s differs from the uninterrupted run's (%zu and %zu "
                         "bytes)", v, series[i], na, nb);
            if (i == 0)
                rows_low = na / 4;
            if (strstr(series[i], "boundary"))
                boundary_bytes = nb;
            free(x);
            free(y);
        }
        H5Fclose(a);
        H5Fclose(b);
        /* The moving post's boundary particles alone (the walls' are written once): a row of
         * 3 floats each per written frame. */
        snprintf(args, sizeof args, "check %s --frames 6 %s >%s", scene, variants[v],
                 test_path("probes_check.txt"));
        assert_int_equal(run_mizu(args, NULL), 0);
        char *check = slurp_text(test_path("probes_check.txt"));
        const char *counted = strstr(check, " moving)");
        while (counted && counted > check && counted[-1] != '(')
            counted--;
        size_t n_boundary = counted ? strtoul(counted, NULL, 10) : 0;
        free(check);
        assert_true(n_boundary > 0);
        assert_int_equal(boundary_bytes, (size_t)frames * n_boundary * 12);
        assert_same_frames(ref, out, frames);
        print_message("variant %zu: %ld frames; probes, gauge, forces and a moving post (its %zu "
                      "boundary particles a row each frame) after two resumes identical to "
                      "the uninterrupted run (%zu samples of the every-step probe)\n", v,
                      frames, n_boundary, rows_low);
        assert_true(rows_low > 20);
    }
}

/* A motion table changed between a checkpoint and its resume: refused, naming it. */
static void test_changed_motion_table(void **state)
{
    (void)state;
    const char *scene = test_path("paddle.json"), *table = test_path("paddle.csv");
    write_text(table, "0 0\n0.05 0.005\n0.1 0\n");
    write_text(scene,
               "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 4, "
               "\"dimensions\": 2, \"adaptive\": true}, \"domain\": {\"min\": [0, 0, 0], "
               "\"max\": [0.2, 0.3, 0], \"boundary\": {\"type\": \"particles\"}}, \"fluids\": "
               "[{\"solver\": \"wcsph\", \"box\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.2, 0]}, "
               "\"spacing\": 0.01}], \"colliders\": [{\"name\": \"post\", \"box\": {\"min\": "
               "[0.15, 0, 0], \"max\": [0.17, 0.05, 0]}, \"motion\": {\"type\": \"translation\", "
               "\"table\": \"paddle.csv\"}}]}");
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "run %s -o %s --frames 2 --checkpoint-every 2 -q", scene,
             test_path("paddle.h5"));
    assert_int_equal(run_mizu(args, NULL), 0);
    write_text(table, "0 0\n0.05 0.006\n0.1 0\n");
    snprintf(args, sizeof args, "run --resume %s -q", test_path("paddle.ckpt.h5"));
    int rc = run_mizu(args, &err);
    print_message("resume after the table changed: exit %d: %s", rc, err);
    assert_true(rc != 0);
    assert_non_null(strstr(err, "colliders[0].motion.table (paddle.csv) changed since checkpoint"));
    free(err);
}

/* Whether the file at path is no longer the one `before` describes (renamed over since). */
static bool replaced(const char *path, const struct stat *before)
{
    struct stat now;
    return stat(path, &now) == 0 &&
           (now.st_ino != before->st_ino || now.st_mtim.tv_sec != before->st_mtim.tv_sec ||
            now.st_mtim.tv_nsec != before->st_mtim.tv_nsec);
}

/* kill -9 at random moments and, two times in three, the moment a checkpoint write begins
 * (CKPT.tmp appears once the run has put a checkpoint in place); after each, resume (or start again when no checkpoint was written yet).
 * No resume may be refused, and the last one must finish with the uninterrupted run's frames. */
static void test_kill9_in_checkpoint_writes(void **state)
{
    (void)state;
    const char *ref = test_path("k_ref.h5"), *out = test_path("k.h5");
    const char *ckpt = test_path("k.ckpt.h5"), *errpath = test_path("k.err");
    char tmp[600], args[2048];
    snprintf(tmp, sizeof tmp, "%s.tmp", ckpt);
    snprintf(args, sizeof args, "run %s --frames 12 -q -o %s", SCENE, ref);
    assert_int_equal(run_mizu(args, NULL), 0);
    int kills = 0, in_write = 0, resumes = 0, finished = 0;
    uint64_t seed = 0x2545f4914f6cdd1du;
    for (int round = 0; round < 60 && !finished; round++) {
        if (exists(ckpt)) {
            snprintf(args, sizeof args, "run --resume %s --checkpoint-every 1 -q", ckpt);
            resumes++;
        } else {
            remove(out);
            snprintf(args, sizeof args, "run %s --frames 12 --checkpoint-every 1 -q -o %s",
                     SCENE, out);
        }
        struct stat before = {0};
        stat(ckpt, &before);
        pid_t pid = spawn_mizu(args, errpath);
        assert_true(pid > 0);
        int status = 0;
        bool exited = false;
        if (round % 3 != 2) {
            /* the moment the next checkpoint write begins after this run has put one in place
             * (so that every round gets at least a frame further) */
            for (int phase = 0; phase < 2 && !exited; phase++)
                for (int i = 0; i < 40000 && !(phase ? exists(tmp) : replaced(ckpt, &before));
                     i++)
                    if (waitpid(pid, &status, WNOHANG) == pid) {
                        exited = true;
                        break;
                    } else {
                        nap(0.0005);
                    }
        } else {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            double t = 0.1 + 0.6 * (double)(seed >> 11) / 9007199254740992.0;
            for (double waited = 0; waited < t && !exited; waited += 0.01) {
                exited = waitpid(pid, &status, WNOHANG) == pid;
                nap(0.01);
            }
        }
        if (!exited) {
            in_write += exists(tmp);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            kills++;
            if (WIFEXITED(status))
                exited = true; /* it ended on its own just before */
        }
        if (exited) {
            char *err = slurp_text(errpath);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("round %d: mizu %s: status %d: %s", round, args, status, err);
            free(err);
            finished = 1;
        }
    }
    assert_true(finished);
    print_message("%d kills -9 (%d inside a checkpoint write), %d resumes, none refused; the "
                  "output matches the uninterrupted run\n", kills, in_write, resumes);
    assert_true(in_write >= 4);
    assert_same_frames(ref, out, 13);
    assert_false(exists(tmp));
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* missing datasets are expected */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_samples_resume),
        cmocka_unit_test(test_changed_motion_table),
        cmocka_unit_test(test_sigterm_in_a_long_frame),
        cmocka_unit_test(test_kill9_in_checkpoint_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
