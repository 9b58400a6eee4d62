/* The Python the README and scripts/ show run as documented (issue 20, item 7): the README's
 * h5py snippet on a fresh output, scripts/dam_break_plot.py on a dam break (a PNG) and its clear
 * refusal of a cloth file; scripts/plot_observables.py on probes and a gauge. Needs Debian's python3 with h5py, numpy and matplotlib, which
 * scripts/install-deps.sh installs; skipped with a message where they are missing. */
#include "test_util.h"

#include <sys/stat.h>

#define PY "/usr/bin/python3"

static bool python_ready(void)
{
    return system(PY " -c 'import h5py, numpy, matplotlib' >/dev/null 2>&1") == 0;
}

/* The README's ```python block after "Reading the output with h5py:", as a file. */
static void readme_snippet(const char *to)
{
    char *readme = read_file_text("README.md");
    const char *at = strstr(readme, "Reading the output with h5py:");
    const char *code = at ? strstr(at, "```python\n") : NULL;
    const char *end = code ? strstr(code + 10, "```") : NULL;
    if (!end)
        fail_msg("README.md has no python block after \"Reading the output with h5py:\"");
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    fwrite(code + 10, 1, (size_t)(end - code - 10), f);
    /* what the snippet read must be there */
    fputs("assert x.shape[0] == len(t) == 4 and x.shape[2] == 3, (x.shape, t)\nprint('ok')\n", f);
    fclose(f);
    free(readme);
}

static void test_readme_and_plot(void **state)
{
    (void)state;
    if (!python_ready()) {
        print_message("skipped: %s lacks h5py, numpy or matplotlib (scripts/install-deps.sh "
                      "installs them)\n", PY);
        skip();
    }
    char args[1200], cmd[2400], *err = NULL;
    const char *dir = test_dir();
    snprintf(args, sizeof args, "run scenes/dam_break_2d.json --frames 3 -q -o %s/out.h5", dir);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    const char *snippet = test_path("readme.py");
    readme_snippet(snippet);
    snprintf(cmd, sizeof cmd, "cd %s && " PY " %s > snippet.txt 2>&1", dir, snippet);
    if (system(cmd) != 0) {
        char *t = read_file_text(test_path("snippet.txt"));
        fail_msg("README's h5py snippet failed: %s", t);
    }
    /* the plot of a dam break: a PNG */
    const char *png = test_path("front.png");
    snprintf(cmd, sizeof cmd, PY " scripts/dam_break_plot.py %s/out.h5 -o %s > %s 2>&1", dir, png,
             test_path("plot.txt"));
    if (system(cmd) != 0) {
        char *t = read_file_text(test_path("plot.txt"));
        fail_msg("dam_break_plot.py failed: %s", t);
    }
    FILE *f = fopen(png, "rb");
    unsigned char sig[8] = {0};
    assert_non_null(f);
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    /* a cloth file: a clear refusal, not a traceback */
    snprintf(args, sizeof args, "run scenes/cloth_hang.json --frames 1 -q -o %s/cloth.h5", dir);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    snprintf(cmd, sizeof cmd, PY " scripts/dam_break_plot.py %s/cloth.h5 -o %s/c.png > %s 2>&1",
             dir, dir, test_path("cloth.txt"));
    int rc = system(cmd);
    char *t = read_file_text(test_path("cloth.txt"));
    if (rc == 0 || !strstr(t, "no fluid column to follow") || strstr(t, "Traceback"))
        fail_msg("dam_break_plot.py on a cloth file: %s", t);
    free(t);
}

static void assert_png(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char sig[8] = {0};
    if (!f)
        fail_msg("%s was not written", path);
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
}

/* scripts/plot_observables.py on a run with probes, a gauge and forces on the walls: a PNG per
 * probe field, one of the gauges, one of the forces; on a file without any, a clear refusal. */
static void test_plot_observables(void **state)
{
    (void)state;
    if (!python_ready()) {
        print_message("skipped: %s lacks h5py, numpy or matplotlib\n", PY);
        skip();
    }
    const char *dir = test_dir(), *scene = test_path("probed.json");
    write_text(scene, "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 3, "
                      "\"dimensions\": 2, \"adaptive\": true}, \"domain\": {\"min\": [0, 0, "
                      "0], \"max\": [0.2, 0.3, 0], \"boundary\": {\"type\": \"particles\", "
                      "\"forces\": {\"rate\": 500}}}, \"fluids\": [{\"solver\": \"wcsph\", "
                      "\"box\": {\"min\": [0, 0, 0], \"max\": [0.1, 0.2, 0]}, \"spacing\": "
                      "0.01}], \"probes\": [{\"name\": \"low\", \"position\": [0.05, 0.02, 0]}],"
                      "\"gauges\": [{\"name\": \"g\", \"start\": [0.05, 0, 0], \"end\": [0.05, "
                      "0.3, 0]}]}");
    char args[1200], cmd[2400], *err = NULL;
    snprintf(args, sizeof args, "run %s -q -o %s/probed.h5", scene, dir);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    snprintf(cmd, sizeof cmd, PY " scripts/plot_observables.py %s/probed.h5 -o %s > %s 2>&1", dir,
             dir, test_path("obs.txt"));
    if (system(cmd) != 0) {
        char *t = read_file_text(test_path("obs.txt"));
        fail_msg("plot_observables.py failed: %s", t);
    }
    static const char *const pngs[] = {"probed_probes_pressure.png", "probed_probes_velocity.png",
                                       "probed_probes_density.png", "probed_probes_fraction.png",
                                       "probed_gauges.png", "probed_forces.png"};
    for (size_t i = 0; i < sizeof pngs / sizeof *pngs; i++)
        assert_png(test_path(pngs[i]));
    snprintf(args, sizeof args, "run scenes/cloth_hang.json --frames 1 -q -o %s/cl.h5", dir);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    snprintf(cmd, sizeof cmd, PY " scripts/plot_observables.py %s/cl.h5 > %s 2>&1", dir,
             test_path("cl.txt"));
    int rc = system(cmd);
    char *t = read_file_text(test_path("cl.txt"));
    if (rc == 0 || !strstr(t, "no probes, gauges or forces to plot") || strstr(t, "Traceback"))
        fail_msg("plot_observables.py on a file without probes: %s", t);
    free(t);
}

/* scripts/wave_flume.py on scenes/wave_flume.json run for 3 s: the theory's line (kh, Biesel's
 * height) from the scene the file keeps, and a line per gauge. */
static void test_wave_flume_script(void **state)
{
    (void)state;
    if (!python_ready()) {
        print_message("skipped: %s lacks h5py, numpy or matplotlib\n", PY);
        skip();
    }
    const char *dir = test_dir();
    char args[1200], cmd[2400], *err = NULL;
    snprintf(args, sizeof args, "run scenes/wave_flume.json --frames 60 -q -o %s/flume.h5", dir);
    if (run_mizu(args, &err) != 0)
        fail_msg("%s: %s", args, err);
    free(err);
    snprintf(cmd, sizeof cmd, PY " scripts/wave_flume.py %s/flume.h5 > %s 2>&1", dir,
             test_path("flume.txt"));
    int rc = system(cmd);
    char *t = read_file_text(test_path("flume.txt"));
    print_message("%s", t);
    if (rc != 0 || !strstr(t, "kh = 1.373") || !strstr(t, "Biesel H = 0.0779 m") ||
        !strstr(t, "gauge x2.0 at x = 2 m"))
        fail_msg("wave_flume.py: %s", t);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_and_plot),
        cmocka_unit_test(test_plot_observables),
        cmocka_unit_test(test_wave_flume_script),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
