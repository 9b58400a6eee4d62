/* Shared by the tests: cmocka, a scratch directory, and running the mizu binary. */
#ifndef MZ_TEST_UTIL_H
#define MZ_TEST_UTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Run only the tests whose names match the environment variable `var` (a cmocka pattern, e.g.
 * SPH_TEST='*dfsph*'), when it is set. */
static inline void test_filter_from_env(const char *var)
{
    const char *f = getenv(var);
    if (f && *f)
        cmocka_set_test_filter(f);
}

/* A physics validation that runs for tens of seconds (a wave flume, a sloshing tank, a dam
 * break to its front) skips itself when MIZU_TEST_QUICK is set, as `make sanitize` does: what
 * it adds to the short tests is its numbers, which `make test` checks, not host code that a
 * sanitizer would see run differently (docs/testing.md, "What the suite costs"). */
static inline void skip_if_quick(void)
{
    const char *q = getenv("MIZU_TEST_QUICK");
    if (q && *q && strcmp(q, "0") != 0)
        skip();
}

/* A fresh directory under $TMPDIR for this test program; removed by the OS's tmp cleaning. */
static inline const char *test_dir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mizu-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    return dir;
}

/* Path of a file in the test directory (static buffer rotation of 8). */
static inline const char *test_path(const char *name)
{
    static char bufs[8][512];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 512, "%s/%s", test_dir(), name);
    return b;
}

static inline void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The mizu binary under test: $MIZU_BIN (set by scripts/run-tests.sh) or build/mizu. */
static inline const char *mizu_bin(void)
{
    const char *b = getenv("MIZU_BIN");
    return b && *b ? b : "build/mizu";
}

/* Run `mizu ARGS` through the shell with stderr captured into *err (malloc'd, may be NULL).
 * Returns the exit status (or -1). */
static inline int run_mizu(const char *args, char **err)
{
    char cmd[4096], errpath[512];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", test_dir());
    snprintf(cmd, sizeof cmd, "%s %s 2>%s", mizu_bin(), args, errpath);
    int st = system(cmd);
    if (err) {
        FILE *f = fopen(errpath, "rb");
        *err = NULL;
        if (f) {
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            *err = calloc((size_t)n + 1, 1);
            if (fread(*err, 1, (size_t)n, f) != (size_t)n)
                (*err)[0] = '\0';
            fclose(f);
        }
    }
    return (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

/* Start `mizu ARGS` in the background, stderr into errpath: its process id (the shell execs
 * mizu, so signals sent to it reach mizu). */
static inline pid_t spawn_mizu(const char *args, const char *errpath)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s %s 2>%s", mizu_bin(), args, errpath);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* A text file's contents (malloc'd, NUL-terminated; "" when it cannot be read). */
static inline char *read_file_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *t = calloc(1, 1);
    if (!f)
        return t;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n > 0) {
        free(t);
        t = calloc((size_t)n + 1, 1);
        if (fread(t, 1, (size_t)n, f) != (size_t)n)
            t[0] = '\0';
    }
    fclose(f);
    return t;
}

/* Wait until the file at path contains text (the progress lines), at most 120 s. */
static inline bool wait_for_text(const char *path, const char *text, pid_t pid)
{
    for (int i = 0; i < 2400; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            char buf[8192] = {0};
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            if (strstr(buf, text))
                return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static inline int exit_status(pid_t pid)
{
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* qsort's comparison of two doubles, ascending. */
static inline int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
