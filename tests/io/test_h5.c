/* HDF5 output (src/io/h5_*.c) and `mizu info` (info.c), read back through the HDF5 C API. */
#include "test_util.h"

#include "cli/info.h"
#include "io/h5_out.h"
#include "scene/fields.h"
#include "util/err.h"

#include <hdf5.h>

#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define N 5
#define POS MZ_FIELD_BIT(MZ_FIELD_POSITION)
#define VEL MZ_FIELD_BIT(MZ_FIELD_VELOCITY)
#define DEN MZ_FIELD_BIT(MZ_FIELD_DENSITY)

static const char scene_text[] = "{\"version\": 1, \"fluids\": [{\"name\": \"water\"}]}\n";
static const uint32_t body[N] = {0, 0, 1, 1, 2};
static const uint32_t phase[N] = {0, 0, 1, 1, 2};
#define NTRI 3 /* triangles */
static const uint32_t triangles[3 * NTRI] = {0, 1, 2, 1, 3, 2, 2, 3, 4};
static const mz_h5_static body_only = {.body = body};
static const mz_h5_static with_surfaces = {
    .body = body, .phase = phase, .triangles = triangles, .n_triangles = NTRI};
#define NRIGID 2 /* rigid bodies */
static const uint32_t rigid_body[NRIGID] = {1, 2};
static const mz_h5_static with_rigids = {
    .body = body, .n_rigids = NRIGID, .rigid_body = rigid_body};

/* Known poses: frame t, rigid b, element k of its 8 (centre x, y, z, unused, quaternion x, y,
 * z, w). The unused element holds a marker that must not reach the file. */
static float pose_value(long t, size_t b, int k)
{
    return k == 3 ? -777.0f : (float)(100 * t + 10 * (long)b + k) + 0.5f;
}

static const float *poses(long t)
{
    static float buf[8 * NRIGID];
    for (size_t b = 0; b < NRIGID; b++)
        for (int k = 0; k < 8; k++)
            buf[8 * b + (size_t)k] = pose_value(t, b, k);
    return buf;
}

/* Known values: field f, frame t, particle i, component k. */
static float expected(int f, long t, size_t i, int k)
{
    return (float)(1000 * f + 100 * t + 10 * (long)i + k) + 0.25f;
}

static mz_h5_out *create_st(const char *path, unsigned fields, int gzip, const mz_h5_static *st)
{
    static const char *const overrides[] = {"simulation.frames=3", "output.every=1"};
    mz_h5_meta meta = {.scene_path = "scenes/test.json", .scene_given = scene_text,
                       .scene_effective = "{\"effective\": true}", .overrides = overrides,
                       .n_overrides = 2, .device = "test device", .platform = "test platform",
                       .driver = "1.0", .kernel_build_options = "-cl-fast-relaxed-math",
                       .domain_min = {-1, 0, -1}, .domain_max = {1, 2, 1}};
    return h5_out_create(path, N, fields, gzip, &meta, st);
}

static mz_h5_out *create(const char *path, unsigned fields, int gzip)
{
    return create_st(path, fields, gzip, &body_only);
}

static int write_frame_pose(mz_h5_out *o, unsigned fields, long t, const float *pose)
{
    static float buf[MZ_FIELD_COUNT][3 * N];
    const float *data[MZ_FIELD_COUNT] = {0};
    for (int f = 0; f < MZ_FIELD_COUNT; f++) {
        if (!(fields & MZ_FIELD_BIT(f)))
            continue;
        int c = mz_field_infos[f].components;
        for (size_t i = 0; i < N; i++)
            for (int k = 0; k < c; k++)
                buf[f][i * (size_t)c + (size_t)k] = expected(f, t, i, k);
        data[f] = buf[f];
    }
    return h5_out_write_frame(o, 10 * t, 0.5 * (double)t, data, pose);
}

static int write_frame(mz_h5_out *o, unsigned fields, long t)
{
    return write_frame_pose(o, fields, t, NULL);
}

static void write_run_st(const char *path, unsigned fields, int gzip, long frames,
                         const mz_h5_static *st)
{
    mz_h5_out *o = create_st(path, fields, gzip, st);
    assert_non_null(o);
    for (long t = 0; t < frames; t++)
        assert_int_equal(write_frame_pose(o, fields, t, st->n_rigids ? poses(t) : NULL), 0);
    assert_int_equal(h5_out_frames(o), frames);
    assert_int_equal(h5_out_close(o, true, "finished"), 0);
    /* Nothing left open: no HDF5 file, dataset, group, type, space or attribute id. */
    assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

static void write_run(const char *path, unsigned fields, int gzip, long frames)
{
    write_run_st(path, fields, gzip, frames, &body_only);
}

/* ---- reading back ---- */

static hid_t open_ro(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

static int rank_of(hid_t file, const char *name, hsize_t dims[3], hsize_t maxd[3])
{
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t s = H5Dget_space(d);
    int rank = H5Sget_simple_extent_dims(s, dims, maxd);
    H5Sclose(s);
    H5Dclose(d);
    return rank;
}

static void read_all(hid_t file, const char *name, hid_t mtype, void *buf)
{
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Dclose(d);
}

static long long int_attr(hid_t file, const char *obj, const char *name)
{
    long long v = -1;
    hid_t a = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* A string attribute or scalar dataset (attr NULL), malloc'd; it must be variable-length UTF-8
 * (issue 20: fixed-length strings come back from h5py as bytes). */
static char *read_str(hid_t file, const char *obj, const char *attr)
{
    hid_t id = attr ? H5Aopen_by_name(file, obj, attr, H5P_DEFAULT, H5P_DEFAULT)
                    : H5Dopen2(file, obj, H5P_DEFAULT);
    assert_true(id >= 0);
    hid_t t = attr ? H5Aget_type(id) : H5Dget_type(id);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_int_equal(H5Tis_variable_str(t), 1);
    assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
    char *v = NULL;
    assert_true((attr ? H5Aread(id, t, &v) : H5Dread(id, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v)) >=
                0);
    char *s = strdup(v ? v : "");
    H5free_memory(v);
    H5Tclose(t);
    if (attr)
        H5Aclose(id);
    else
        H5Dclose(id);
    return s;
}

static void check_str(hid_t file, const char *obj, const char *attr, const char *want)
{
    char *s = read_str(file, obj, attr);
    assert_string_equal(s, want);
    free(s);
}

static void check_field(hid_t file, int f, long frames)
{
    char name[96];
    int c = mz_field_infos[f].components;
    snprintf(name, sizeof name, "/particles/all/%s/value", mz_field_infos[f].name);
    hsize_t dims[3], maxd[3];
    int rank = rank_of(file, name, dims, maxd);
    assert_int_equal(rank, c == 3 ? 3 : 2);
    assert_int_equal(dims[0], frames);
    assert_int_equal(dims[1], N);
    assert_true(maxd[0] == H5S_UNLIMITED);
    assert_int_equal(maxd[1], N);
    if (c == 3)
        assert_int_equal(dims[2], 3);

    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t dcpl = H5Dget_create_plist(d);
    hsize_t chunk[3] = {0};
    assert_int_equal(H5Pget_chunk(dcpl, 3, chunk), rank);
    assert_int_equal(chunk[0], 1);
    assert_int_equal(chunk[1], N);
    if (c == 3)
        assert_int_equal(chunk[2], 3);
    H5Pclose(dcpl);
    hid_t t = H5Dget_type(d);
    assert_true(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    H5Tclose(t);
    H5Dclose(d);

    float *v = calloc((size_t)frames * N * 3 + 1, sizeof *v);
    read_all(file, name, H5T_NATIVE_FLOAT, v);
    for (long tt = 0; tt < frames; tt++)
        for (size_t i = 0; i < N; i++)
            for (int k = 0; k < c; k++)
                assert_true(v[((size_t)tt * N + i) * (size_t)c + (size_t)k] ==
                            expected(f, tt, i, k));
    free(v);
    check_str(file, name, "unit", mz_field_infos[f].unit);
}

static void check_series(hid_t file, const char *field, long frames)
{
    char name[96];
    long long step[8];
    double time[8];
    hsize_t dims[3], maxd[3];
    snprintf(name, sizeof name, "/particles/all/%s/step", field);
    assert_int_equal(rank_of(file, name, dims, maxd), 1);
    assert_int_equal(dims[0], frames);
    assert_true(maxd[0] == H5S_UNLIMITED);
    read_all(file, name, H5T_NATIVE_LLONG, step);
    snprintf(name, sizeof name, "/particles/all/%s/time", field);
    read_all(file, name, H5T_NATIVE_DOUBLE, time);
    for (long t = 0; t < frames; t++) {
        assert_int_equal(step[t], 10 * t);
        assert_true(time[t] == 0.5 * (double)t);
    }
}

/* ---- tests ---- */

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = test_path("round.h5");
    write_run(path, POS | VEL | DEN, 0, 3);

    hid_t file = open_ro(path);
    int32_t version[2] = {0};
    hid_t a = H5Aopen_by_name(file, "/h5md", "version", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_INT32, version) >= 0);
    H5Aclose(a);
    assert_int_equal(version[0], 1);
    assert_int_equal(version[1], 1);
    check_str(file, "/h5md/creator", "name", "mizu");
    assert_true(H5Lexists(file, "/h5md/author", H5P_DEFAULT) > 0);

    check_field(file, MZ_FIELD_POSITION, 3);
    check_field(file, MZ_FIELD_VELOCITY, 3);
    check_field(file, MZ_FIELD_DENSITY, 3);
    assert_int_equal(H5Lexists(file, "/particles/all/pressure", H5P_DEFAULT), 0);
    check_series(file, "position", 3);
    check_series(file, "density", 3);
    check_str(file, "/particles/all/position/time", "unit", "s");

    int32_t b[N], id[N], ph[N];
    hsize_t dims[3], maxd[3];
    read_all(file, "/particles/all/body", H5T_NATIVE_INT32, b);
    read_all(file, "/particles/all/id", H5T_NATIVE_INT32, id);
    assert_int_equal(rank_of(file, "/particles/all/phase", dims, maxd), 1);
    assert_int_equal(dims[0], N);
    read_all(file, "/particles/all/phase", H5T_NATIVE_INT32, ph);
    for (int i = 0; i < N; i++) {
        assert_int_equal(b[i], body[i]);
        assert_int_equal(id[i], i);
        assert_int_equal(ph[i], 0); /* no phase given: all fluid */
    }
    /* No triangles: no connectivity at all; no rigid bodies: no observables. */
    assert_int_equal(H5Lexists(file, "/connectivity", H5P_DEFAULT), 0);
    assert_int_equal(H5Lexists(file, "/observables", H5P_DEFAULT), 0);
    double edges[3];
    read_all(file, "/particles/all/box/edges", H5T_NATIVE_DOUBLE, edges);
    assert_true(edges[0] == 2 && edges[1] == 2 && edges[2] == 2);

    check_str(file, "/parameters/scene/given", NULL, scene_text);
    check_str(file, "/parameters/scene/path", NULL, "scenes/test.json");
    check_str(file, "/parameters/build/device", NULL, "test device");
    char *over[2] = {NULL, NULL};
    hid_t d = H5Dopen2(file, "/parameters/scene/overrides", H5P_DEFAULT);
    hid_t mt = H5Dget_type(d);
    assert_int_equal(H5Tis_variable_str(mt), 1);
    assert_true(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, over) >= 0);
    assert_string_equal(over[0], "simulation.frames=3");
    assert_string_equal(over[1], "output.every=1");
    H5free_memory(over[0]);
    H5free_memory(over[1]);
    H5Tclose(mt);
    H5Dclose(d);

    assert_int_equal(int_attr(file, "/parameters/run", "complete"), 1);
    assert_int_equal(int_attr(file, "/parameters/run", "frames_written"), 3);
    check_str(file, "/parameters/run", "status", "finished");
    H5Fclose(file);
}

static void test_gzip(void **state)
{
    (void)state;
    const char *path = test_path("gzip.h5");
    write_run(path, POS | DEN, 6, 2);
    hid_t file = open_ro(path);
    check_field(file, MZ_FIELD_POSITION, 2);
    check_field(file, MZ_FIELD_DENSITY, 2);
    hid_t d = H5Dopen2(file, "/particles/all/position/value", H5P_DEFAULT);
    hid_t dcpl = H5Dget_create_plist(d);
    unsigned flags;
    assert_true(H5Pget_filter_by_id2(dcpl, H5Z_FILTER_DEFLATE, &flags, NULL, NULL, 0, NULL,
                                     NULL) >= 0);
    assert_true(H5Pget_filter_by_id2(dcpl, H5Z_FILTER_SHUFFLE, &flags, NULL, NULL, 0, NULL,
                                     NULL) >= 0);
    H5Pclose(dcpl);
    H5Dclose(d);
    H5Fclose(file);
}

/* A run killed after 2 frames: the child writes and _exit()s without closing. */
static void test_killed_run(void **state)
{
    (void)state;
    const char *path = test_path("killed.h5");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mz_h5_out *o = create(path, POS | VEL, 0);
        int ok = o && write_frame(o, POS | VEL, 0) == 0 && write_frame(o, POS | VEL, 1) == 0;
        _exit(ok ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    hid_t file = open_ro(path);
    check_field(file, MZ_FIELD_POSITION, 2);
    check_field(file, MZ_FIELD_VELOCITY, 2);
    check_series(file, "position", 2);
    assert_int_equal(int_attr(file, "/parameters/run", "complete"), 0);
    assert_int_equal(int_attr(file, "/parameters/run", "frames_written"), 2);
    check_str(file, "/parameters/run", "status", "running");
    H5Fclose(file);
}

/* Closing a run that failed records it: complete 0 and the status line. */
static void test_incomplete_close(void **state)
{
    (void)state;
    const char *path = test_path("stopped.h5");
    mz_h5_out *o = create(path, POS, 0);
    assert_non_null(o);
    assert_int_equal(write_frame(o, POS, 0), 0);
    assert_int_equal(h5_out_close(o, false, "stopped by SIGTERM at frame 1"), 0);
    hid_t file = open_ro(path);
    assert_int_equal(int_attr(file, "/parameters/run", "complete"), 0);
    check_str(file, "/parameters/run", "status", "stopped by SIGTERM at frame 1");
    H5Fclose(file);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    unsigned char *b = (unsigned char *)read_file(path, len);
    assert_non_null(b);
    return b;
}

static void test_deterministic(void **state)
{
    (void)state;
    static const char *const names[3][2] = {{"det_a.h5", "det_b.h5"},
                                            {"det_tri_a.h5", "det_tri_b.h5"},
                                            {"det_rig_a.h5", "det_rig_b.h5"}};
    const mz_h5_static *const sts[3] = {&body_only, &with_surfaces, &with_rigids};
    for (int k = 0; k < 3; k++) {
        const mz_h5_static *st = sts[k];
        const char *a = test_path(names[k][0]), *b = test_path(names[k][1]);
        write_run_st(a, POS | VEL | DEN, 0, 3, st);
        sleep(1); /* any timestamp left in the file would now differ */
        write_run_st(b, POS | VEL | DEN, 0, 3, st);
        size_t na, nb;
        unsigned char *da = slurp(a, &na), *db = slurp(b, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(da);
        free(db);
    }
}

static void test_unwritable(void **state)
{
    (void)state;
    const char *path = "/nonexistent-dir/x.h5";
    assert_null(create(path, POS, 0));
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access("/nonexistent-dir/x.xdmf", F_OK), -1);

    /* A directory that exists but is read-only: nothing may be left there. */
    char dir[512], file[600];
    snprintf(dir, sizeof dir, "%s/ro", test_dir());
    assert_int_equal(mkdir(dir, 0555), 0);
    snprintf(file, sizeof file, "%s/x.h5", dir);
    if (geteuid() != 0) { /* root writes anywhere */
        assert_null(create(file, POS, 0));
        assert_int_equal(access(file, F_OK), -1);
    }
    chmod(dir, 0755);
}

/* A creation failing half way (the file outgrows a 2 KiB limit) leaves neither file behind. */
static void test_create_failure_cleans_up(void **state)
{
    (void)state;
    const char *path = test_path("half.h5");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {2048, 2048};
        setrlimit(RLIMIT_FSIZE, &lim);
        _exit(create(path, POS | VEL, 0) == NULL ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(test_path("half.xdmf"), F_OK), -1);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Skip an entity reference at *p ('&'); false when it is not one XML allows. */
static bool xml_entity(const char **p)
{
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (!strncmp(*p, named[k], strlen(named[k]))) {
            *p += strlen(named[k]);
            return true;
        }
    if ((*p)[1] != '#')
        return false;
    const char *q = *p + 2;
    int hex = *q == 'x';
    q += hex;
    const char *digits = q;
    while (hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q))
        q++;
    if (q == digits || *q != ';')
        return false;
    *p = q + 1;
    return true;
}

static bool xml_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':';
}

/* A well-formedness check of the XML the sidecar uses: the declaration, a DOCTYPE with an
 * empty internal subset, comments, elements with quoted attributes (each name once), text and
 * entity references; exactly one root element. NULL if well-formed, else what is wrong. */
static const char *xml_problem(const char *x)
{
    enum { DEPTH = 64 };
    const char *stack[DEPTH];
    size_t len[DEPTH];
    int depth = 0, roots = 0;
    const char *p = x;
    if (strncmp(p, "<?xml ", 6))
        return "no XML declaration at the start";
    p = strstr(p, "?>");
    if (!p)
        return "unterminated XML declaration";
    p += 2;
    while (*p) {
        if (*p == '&') {
            if (!xml_entity(&p))
                return "a bad entity reference";
            continue;
        }
        if (*p != '<') {
            if (depth == 0 && !isspace((unsigned char)*p))
                return "text outside the root element";
            p++;
            continue;
        }
        if (!strncmp(p, "<!--", 4)) {
            p = strstr(p + 4, "-->");
            if (!p)
                return "unterminated comment";
            p += 3;
        } else if (!strncmp(p, "<!DOCTYPE", 9)) {
            if (roots || depth)
                return "DOCTYPE after the root element starts";
            p = strchr(p, '>');
            if (!p)
                return "unterminated DOCTYPE";
            p++;
        } else if (!strncmp(p, "<?", 2)) {
            p = strstr(p, "?>");
            if (!p)
                return "unterminated processing instruction";
            p += 2;
        } else if (p[1] == '/') {
            const char *name = p + 2, *q = name;
            while (xml_name_char(*q))
                q++;
            if (depth == 0)
                return "a closing tag without an open element";
            depth--;
            if ((size_t)(q - name) != len[depth] || strncmp(name, stack[depth], len[depth]))
                return "a closing tag that does not match the open element";
            while (isspace((unsigned char)*q))
                q++;
            if (*q != '>')
                return "a malformed closing tag";
            p = q + 1;
        } else {
            const char *name = p + 1, *q = name;
            while (xml_name_char(*q))
                q++;
            size_t nlen = (size_t)(q - name);
            if (nlen == 0)
                return "a tag without a name";
            if (depth == 0 && roots++)
                return "more than one root element";
            const char *attrs[32];
            size_t alen[32];
            int nattr = 0;
            for (;;) {
                int space = 0;
                while (isspace((unsigned char)*q))
                    q++, space = 1;
                if (*q == '>' || !strncmp(q, "/>", 2))
                    break;
                const char *an = q;
                while (xml_name_char(*q))
                    q++;
                if (!space || q == an || *q != '=' || (q[1] != '"' && q[1] != '\''))
                    return "a malformed attribute";
                for (int k = 0; k < nattr; k++)
                    if (alen[k] == (size_t)(q - an) && !strncmp(attrs[k], an, alen[k]))
                        return "an attribute given twice";
                if (nattr == 32)
                    return "too many attributes";
                attrs[nattr] = an;
                alen[nattr++] = (size_t)(q - an);
                char quote = q[1];
                q += 2;
                while (*q != quote) {
                    if (!*q || *q == '<')
                        return "an unterminated attribute value";
                    if (*q == '&') {
                        if (!xml_entity(&q))
                            return "a bad entity reference in an attribute";
                    } else {
                        q++;
                    }
                }
                q++;
            }
            if (*q == '>') {
                if (depth == DEPTH)
                    return "elements nested too deep";
                stack[depth] = name;
                len[depth++] = nlen;
                p = q + 1;
            } else {
                p = q + 2;
            }
        }
    }
    if (depth)
        return "elements left open at the end";
    if (!roots)
        return "no root element";
    return NULL;
}

static void check_well_formed(const char *x)
{
    const char *why = xml_problem(x);
    if (why)
        fail_msg("the sidecar is not well-formed XML: %s", why);
}

static void test_xml_checker(void **state)
{
    (void)state;
    static const char *const good[] = {
        "<?xml version=\"1.0\" ?>\n<!DOCTYPE a SYSTEM \"a.dtd\" []>\n<a x=\"1\"><b/>t&amp;</a>\n",
        "<?xml version=\"1.0\"?><a><b y='&lt;'></b><!-- c --></a>",
    };
    static const char *const bad[] = {
        "<?xml version=\"1.0\"?><a><b></a></b>", "<?xml version=\"1.0\"?><a>",
        "<?xml version=\"1.0\"?><a></a><b/>", "<?xml version=\"1.0\"?><a x=1/>",
        "<?xml version=\"1.0\"?><a x=\"1\" x=\"2\"/>", "<?xml version=\"1.0\"?><a>&</a>",
        "<?xml version=\"1.0\"?><a x=\"<\"/>", "<?xml version=\"1.0\"?><a/>text",
    };
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
        assert_null(xml_problem(good[k]));
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        assert_non_null(xml_problem(bad[k]));
}

static void check_xdmf(const char *xpath, int frames)
{
    char *x = read_file(xpath, NULL);
    assert_non_null(x);
    check_well_formed(x);
    const char *end = "  </Grid>\n </Domain>\n</Xdmf>\n";
    size_t len = strlen(x);
    assert_true(len > strlen(end));
    assert_string_equal(x + len - strlen(end), end);
    assert_int_equal(count(x, "<Grid Name=\"frame "), frames);
    assert_int_equal(count(x, "<Grid "), count(x, "</Grid>"));
    assert_int_equal(count(x, "<Attribute "), count(x, "</Attribute>"));
    /* Each frame's fields through their views (h5_views.c), plain HDF items every reader loads. */
    assert_int_equal(count(x, "Format=\"HDF\">xdmf.h5:/xdmf/position/"), frames);
    assert_int_equal(count(x, "Format=\"HDF\">xdmf.h5:/xdmf/velocity/"), frames);
    assert_null(strstr(x, "HyperSlab"));
    assert_int_equal(count(x, "TopologyType=\"Polyvertex\""), frames);
    assert_int_equal(count(x, "<Attribute Name=\"body\""), frames);
    assert_int_equal(count(x, "<Attribute Name=\"phase\""), frames);
    assert_int_equal(count(x, "Format=\"HDF\">xdmf.h5:/particles/all/phase<"), frames);
    /* Without triangles, no surfaces: one uniform grid per frame. */
    assert_int_equal(count(x, "GridType=\"Uniform\""), frames);
    assert_null(strstr(x, "Spatial"));
    assert_null(strstr(x, "connectivity"));
    assert_null(strstr(x, "Triangle"));
    if (frames > 1)
        assert_non_null(strstr(x, "<DataItem Dimensions=\"5 3\" NumberType=\"Float\" "
                                  "Precision=\"4\" Format=\"HDF\">xdmf.h5:/xdmf/position/1<"));
    free(x);
}

static void test_xdmf(void **state)
{
    (void)state;
    const char *path = test_path("xdmf.h5");
    char *xpath = h5_out_xdmf_path(path);
    mz_h5_out *o = create(path, POS | VEL | DEN, 0);
    assert_non_null(o);
    check_xdmf(xpath, 0);
    assert_int_equal(write_frame(o, POS | VEL | DEN, 0), 0);
    assert_int_equal(write_frame(o, POS | VEL | DEN, 1), 0);
    check_xdmf(xpath, 2);
    assert_int_equal(write_frame(o, POS | VEL | DEN, 2), 0);
    check_xdmf(xpath, 3);
    assert_int_equal(h5_out_close(o, true, "finished"), 0);
    check_xdmf(xpath, 3);
    free(xpath);
}

/* Phase, triangles and their sidecar. */
static void check_surface_xdmf(const char *xpath, int frames)
{
    char *x = read_file(xpath, NULL);
    assert_non_null(x);
    check_well_formed(x);
    const char *end = "  </Grid>\n </Domain>\n</Xdmf>\n";
    assert_string_equal(x + strlen(x) - strlen(end), end);
    assert_int_equal(count(x, "CollectionType=\"Temporal\""), 1);
    assert_int_equal(count(x, "<Grid Name=\"frame "), frames);
    assert_int_equal(count(x, "GridType=\"Collection\" CollectionType=\"Spatial\""), frames);
    assert_int_equal(count(x, "<Grid Name=\"particles\" GridType=\"Uniform\""), frames);
    assert_int_equal(count(x, "<Grid Name=\"surfaces\" GridType=\"Uniform\""), frames);
    assert_int_equal(count(x, "<Time "), frames);
    assert_int_equal(count(x, "TopologyType=\"Polyvertex\" NumberOfElements=\"5\""), frames);
    assert_int_equal(count(x, "TopologyType=\"Triangle\" NumberOfElements=\"3\" "
                              "NodesPerElement=\"3\">"),
                     frames);
    assert_int_equal(count(x, "<DataItem Dimensions=\"3 3\" NumberType=\"Int\" Precision=\"4\" "
                              "Format=\"HDF\">surf.h5:/connectivity/triangles</DataItem>"),
                     frames);
    /* Both grids on the frame's positions, with the same attributes. */
    assert_int_equal(count(x, "Format=\"HDF\">surf.h5:/xdmf/position/"), 2 * frames);
    assert_int_equal(count(x, "<Attribute Name=\"velocity\""), 2 * frames);
    assert_int_equal(count(x, "<Attribute Name=\"body\""), 2 * frames);
    assert_int_equal(count(x, "<Attribute Name=\"phase\""), 2 * frames);
    for (int f = 0; f < frames; f++) {
        char view[64];
        snprintf(view, sizeof view, "/%d</DataItem>", f);
        assert_int_equal(count(x, view), 2 * 2); /* position and velocity, on both grids */
    }
    free(x);
}

static void test_surfaces(void **state)
{
    (void)state;
    const char *path = test_path("surf.h5");
    char *xpath = h5_out_xdmf_path(path);
    mz_h5_out *o = create_st(path, POS | VEL, 0, &with_surfaces);
    assert_non_null(o);
    check_surface_xdmf(xpath, 0);
    for (long t = 0; t < 3; t++) {
        assert_int_equal(write_frame(o, POS | VEL, t), 0);
        check_surface_xdmf(xpath, (int)t + 1);
    }
    assert_int_equal(h5_out_close(o, true, "finished"), 0);
    check_surface_xdmf(xpath, 3);
    assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
    free(xpath);

    hid_t file = open_ro(path);
    int32_t ph[N], b[N], tri[3 * NTRI];
    read_all(file, "/particles/all/phase", H5T_NATIVE_INT32, ph);
    read_all(file, "/particles/all/body", H5T_NATIVE_INT32, b);
    for (int i = 0; i < N; i++) {
        assert_int_equal(ph[i], phase[i]);
        assert_int_equal(b[i], body[i]);
    }
    hid_t d = H5Dopen2(file, "/particles/all/phase", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    assert_true(H5Tequal(t, H5T_STD_I32LE) > 0);
    H5Tclose(t);
    H5Dclose(d);

    hsize_t dims[3], maxd[3];
    assert_int_equal(rank_of(file, "/connectivity/triangles", dims, maxd), 2);
    assert_int_equal(dims[0], NTRI);
    assert_int_equal(dims[1], 3);
    d = H5Dopen2(file, "/connectivity/triangles", H5P_DEFAULT);
    t = H5Dget_type(d);
    assert_true(H5Tequal(t, H5T_STD_I32LE) > 0);
    H5Tclose(t);
    H5Dclose(d);
    read_all(file, "/connectivity/triangles", H5T_NATIVE_INT32, tri);
    for (int k = 0; k < 3 * NTRI; k++)
        assert_int_equal(tri[k], triangles[k]);

    /* particles_group: an object reference that resolves to /particles/all. */
    hid_t a = H5Aopen_by_name(file, "/connectivity/triangles", "particles_group", H5P_DEFAULT,
                              H5P_DEFAULT);
    assert_true(a >= 0);
    t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_REFERENCE);
    assert_true(H5Tequal(t, H5T_STD_REF_OBJ) > 0);
    H5Tclose(t);
    hid_t s = H5Aget_space(a);
    assert_int_equal(H5Sget_simple_extent_type(s), H5S_SCALAR);
    H5Sclose(s);
    hobj_ref_t ref;
    assert_true(H5Aread(a, H5T_STD_REF_OBJ, &ref) >= 0);
    H5Aclose(a);
    hid_t g = H5Rdereference2(file, H5P_DEFAULT, H5R_OBJECT, &ref);
    assert_true(g >= 0);
    assert_int_equal(H5Iget_type(g), H5I_GROUP);
    char name[64] = {0};
    assert_true(H5Iget_name(g, name, sizeof name) > 0);
    assert_string_equal(name, "/particles/all");
    H5Oclose(g);
    H5Fclose(file);
}

/* ---- rigid bodies ---- */

#define RIGID "/observables/rigid"

/* A series of the rigid observables: [frames, NRIGID, cols] float32, one chunk per frame, gzip
 * when asked, holding the poses' elements from `first` on. */
static void check_rigid_series(hid_t file, const char *name, int cols, int first, long frames,
                               int gzip)
{
    char value[96];
    snprintf(value, sizeof value, RIGID "/%s/value", name);
    hsize_t dims[3], maxd[3];
    assert_int_equal(rank_of(file, value, dims, maxd), 3);
    assert_int_equal(dims[0], frames);
    assert_int_equal(dims[1], NRIGID);
    assert_int_equal(dims[2], cols);
    assert_true(maxd[0] == H5S_UNLIMITED);
    assert_int_equal(maxd[1], NRIGID);
    assert_int_equal(maxd[2], cols);

    hid_t d = H5Dopen2(file, value, H5P_DEFAULT);
    hid_t dcpl = H5Dget_create_plist(d);
    hsize_t chunk[3] = {0};
    assert_int_equal(H5Pget_chunk(dcpl, 3, chunk), 3);
    assert_int_equal(chunk[0], 1);
    assert_int_equal(chunk[1], NRIGID);
    assert_int_equal(chunk[2], cols);
    unsigned flags;
    herr_t deflate = H5Pget_filter_by_id2(dcpl, H5Z_FILTER_DEFLATE, &flags, NULL, NULL, 0,
                                          NULL, NULL);
    assert_int_equal(deflate >= 0, gzip > 0);
    H5Pclose(dcpl);
    hid_t t = H5Dget_type(d);
    assert_true(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    H5Tclose(t);
    H5Dclose(d);

    float v[8 * NRIGID * 4];
    assert_true((size_t)frames * NRIGID * (size_t)cols <= sizeof v / sizeof v[0]);
    read_all(file, value, H5T_NATIVE_FLOAT, v);
    for (long tt = 0; tt < frames; tt++)
        for (size_t b = 0; b < NRIGID; b++)
            for (int k = 0; k < cols; k++)
                assert_true(v[((size_t)tt * NRIGID + b) * (size_t)cols + (size_t)k] ==
                            pose_value(tt, b, first + k));

    /* step and time: the particles' (hard links), so the same values and time's unit. */
    long long step[8];
    double time[8];
    char sname[96];
    snprintf(sname, sizeof sname, RIGID "/%s/step", name);
    assert_int_equal(rank_of(file, sname, dims, maxd), 1);
    assert_int_equal(dims[0], frames);
    assert_true(maxd[0] == H5S_UNLIMITED);
    read_all(file, sname, H5T_NATIVE_LLONG, step);
    snprintf(sname, sizeof sname, RIGID "/%s/time", name);
    assert_int_equal(rank_of(file, sname, dims, maxd), 1);
    assert_int_equal(dims[0], frames);
    read_all(file, sname, H5T_NATIVE_DOUBLE, time);
    check_str(file, sname, "unit", "s");
    for (long tt = 0; tt < frames; tt++) {
        assert_int_equal(step[tt], 10 * tt);
        assert_true(time[tt] == 0.5 * (double)tt);
    }
}

static void check_rigids(hid_t file, long frames, int gzip)
{
    hsize_t dims[3], maxd[3];
    assert_int_equal(rank_of(file, RIGID "/body", dims, maxd), 1);
    assert_int_equal(dims[0], NRIGID);
    hid_t d = H5Dopen2(file, RIGID "/body", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    assert_true(H5Tequal(t, H5T_STD_I32LE) > 0);
    H5Tclose(t);
    H5Dclose(d);
    int32_t rb[NRIGID];
    read_all(file, RIGID "/body", H5T_NATIVE_INT32, rb);
    for (int b = 0; b < NRIGID; b++)
        assert_int_equal(rb[b], rigid_body[b]);

    check_rigid_series(file, "center_of_mass", 3, 0, frames, gzip);
    check_rigid_series(file, "orientation", 4, 4, frames, gzip);
    check_str(file, RIGID "/center_of_mass/value", "unit", "m");
    check_str(file, RIGID "/orientation/value", "quaternion_order", "x y z w");
    char *conv = read_str(file, RIGID "/orientation/value", "convention");
    assert_non_null(strstr(conv, "(x, y, z, w), scalar last"));
    assert_non_null(strstr(conv, "Rotation.from_quat"));
    assert_non_null(strstr(conv, "rest offsets"));
    assert_non_null(strstr(conv, "initial centre of mass"));
    free(conv);
    /* A quaternion has no unit. */
    assert_int_equal(H5Aexists_by_name(file, RIGID "/orientation/value", "unit", H5P_DEFAULT),
                     0);
}

/* B = 2 rigid bodies over 3 frames of synthetic poses, with and without gzip. */
static void test_rigids(void **state)
{
    (void)state;
    for (int gzip = 0; gzip <= 6; gzip += 6) {
        const char *path = test_path(gzip ? "rigid_gz.h5" : "rigid.h5");
        write_run_st(path, POS | VEL, gzip, 3, &with_rigids);
        hid_t file = open_ro(path);
        check_field(file, MZ_FIELD_POSITION, 3);
        check_field(file, MZ_FIELD_VELOCITY, 3);
        check_series(file, "position", 3);
        check_rigids(file, 3, gzip);
        assert_int_equal(int_attr(file, "/parameters/run", "frames_written"), 3);
        H5Fclose(file);
    }

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(info_print(test_path("rigid.h5"), out), 0);
    fclose(out);
    assert_non_null(strstr(text, "2 rigid bodies"));
    assert_non_null(strstr(text, "center_of_mass [3, 2, 3]"));
    assert_non_null(strstr(text, "orientation [3, 2, 4]"));
    free(text);
    assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

/* A frame is whole or absent: one without its poses is refused before anything is written,
 * and a run killed after 2 frames leaves 2 frames of poses beside 2 of particles. */
static void test_rigid_frames_atomic(void **state)
{
    (void)state;
    const char *path = test_path("rigid_atomic.h5");
    mz_h5_out *o = create_st(path, POS, 0, &with_rigids);
    assert_non_null(o);
    assert_int_equal(write_frame_pose(o, POS, 0, poses(0)), 0);
    assert_int_equal(write_frame_pose(o, POS, 1, NULL), -1);
    assert_int_equal(h5_out_frames(o), 1);
    assert_int_equal(write_frame_pose(o, POS, 1, poses(1)), 0);
    assert_int_equal(h5_out_close(o, true, "finished"), 0);
    hid_t file = open_ro(path);
    check_field(file, MZ_FIELD_POSITION, 2);
    check_rigids(file, 2, 0);
    H5Fclose(file);

    path = test_path("rigid_killed.h5");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        o = create_st(path, POS, 0, &with_rigids);
        int ok = o && write_frame_pose(o, POS, 0, poses(0)) == 0 &&
                 write_frame_pose(o, POS, 1, poses(1)) == 0;
        _exit(ok ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    file = open_ro(path);
    check_field(file, MZ_FIELD_POSITION, 2);
    check_rigids(file, 2, 0);
    assert_int_equal(int_attr(file, "/parameters/run", "complete"), 0);
    H5Fclose(file);
}

/* ---- boundary particles ---- */

#define NB 4 /* boundary particles that stay put */
#define NM 3 /* moving ones */

/* Known boundary positions: particle b, component k, at time t (rest: t = -1). */
static float boundary_value(double t, size_t b, int k)
{
    return (float)(1000 * t + 10 * (double)b + k) + 0.125f;
}

static void boundary_rest(float *out)
{
    for (size_t b = 0; b < NB; b++)
        for (int k = 0; k < 3; k++)
            out[3 * b + (size_t)k] = boundary_value(-1, b, k);
}

/* mz_h5_static's moving_at: every moving particle moves, so a row written at the wrong time
 * shows. */
static void moving_at(const void *ctx, double t, float *out)
{
    (void)ctx;
    for (size_t b = 0; b < NM; b++)
        for (int k = 0; k < 3; k++)
            out[3 * b + (size_t)k] = boundary_value(t, b, k);
}

/* The static table [NB, 3] written once, and the moving particles' own group of `frames` rows. */
static void check_moving_boundary(const char *path, long frames)
{
    hid_t file = open_ro(path);
    hsize_t dims[3], maxd[3];
    assert_int_equal(rank_of(file, "/particles/boundary/position", dims, maxd), 2);
    assert_int_equal(dims[0], NB);
    float rest[NB * 3], got[NB * 3];
    boundary_rest(rest);
    read_all(file, "/particles/boundary/position", H5T_NATIVE_FLOAT, got);
    assert_memory_equal(got, rest, sizeof rest);
    assert_int_equal(rank_of(file, "/particles/moving_boundary/position/value", dims, maxd), 3);
    assert_int_equal(dims[0], frames);
    assert_int_equal(dims[1], NM);
    assert_int_equal(dims[2], 3);
    assert_true(maxd[0] == H5S_UNLIMITED);
    float v[8 * NM * 3];
    long long step[8];
    double time[8];
    read_all(file, "/particles/moving_boundary/position/value", H5T_NATIVE_FLOAT, v);
    read_all(file, "/particles/moving_boundary/position/step", H5T_NATIVE_LLONG, step);
    read_all(file, "/particles/moving_boundary/position/time", H5T_NATIVE_DOUBLE, time);
    for (long t = 0; t < frames; t++) {
        assert_int_equal(step[t], 10 * t); /* the frames' own step and time */
        assert_true(time[t] == 0.5 * (double)t);
        for (size_t b = 0; b < NM; b++)
            for (int k = 0; k < 3; k++)
                assert_true(v[((size_t)t * NM + b) * 3 + (size_t)k] ==
                            boundary_value(time[t], b, k));
        char view[64];
        float row[NM * 3];
        snprintf(view, sizeof view, "/xdmf/moving_boundary/%ld", t);
        read_all(file, view, H5T_NATIVE_FLOAT, row);
        assert_memory_equal(row, v + (size_t)t * NM * 3, sizeof row);
    }
    char view[64];
    snprintf(view, sizeof view, "/xdmf/moving_boundary/%ld", frames);
    assert_true(H5Lexists(file, view, H5P_DEFAULT) == 0);
    assert_true(H5Lexists(file, "/xdmf/boundary", H5P_DEFAULT) == 0);
    check_str(file, "/particles/moving_boundary/position/value", "unit", "m");
    assert_true(H5Lexists(file, "/particles/boundary/box/edges", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(file, "/particles/moving_boundary/box/edges", H5P_DEFAULT) > 0);
    H5Fclose(file);
    char *xpath = h5_out_xdmf_path(path), *x = read_file(xpath, NULL);
    check_well_formed(x);
    assert_int_equal(count(x, "<Grid Name=\"boundary\""), frames);
    assert_int_equal(count(x, ":/particles/boundary/position<"), frames);
    assert_int_equal(count(x, "<Grid Name=\"moving_boundary\""), frames);
    assert_int_equal(count(x, ":/xdmf/moving_boundary/"), frames);
    free(x);
    free(xpath);
}

/* SPH's wall particles: a [B, 3] table when nothing moves (the sidecar's boundary grid on it);
 * with moving colliders the static ones stay that table and the moving ones get their own
 * particles group, a series beside the frames, each row placed at its frame's time, cut back
 * with them on resume and written again the same; a resume whose boundary moves into a file
 * whose does not is refused, and so is one into an earlier mizu's layout. */
static void test_boundary(void **state)
{
    (void)state;
    float rest[NB * 3];
    boundary_rest(rest);
    mz_h5_static still = {.body = body, .boundary = rest, .n_boundary = NB};
    const char *path = test_path("walls.h5");
    write_run_st(path, POS, 0, 3, &still);
    hid_t file = open_ro(path);
    hsize_t dims[3], maxd[3];
    assert_int_equal(rank_of(file, "/particles/boundary/position", dims, maxd), 2);
    assert_int_equal(dims[0], NB);
    float got[NB * 3];
    read_all(file, "/particles/boundary/position", H5T_NATIVE_FLOAT, got);
    assert_memory_equal(got, rest, sizeof rest);
    assert_true(H5Lexists(file, "/xdmf/boundary", H5P_DEFAULT) == 0);
    assert_true(H5Lexists(file, "/xdmf/moving_boundary", H5P_DEFAULT) == 0);
    assert_true(H5Lexists(file, "/particles/moving_boundary", H5P_DEFAULT) == 0);
    H5Fclose(file);
    char *xpath = h5_out_xdmf_path(path), *x = read_file(xpath, NULL);
    assert_int_equal(count(x, "walls.h5:/particles/boundary/position</DataItem>"), 3);
    assert_int_equal(count(x, "moving_boundary"), 0);
    free(x);
    free(xpath);

    mz_h5_static moving = {.body = body, .boundary = rest, .n_boundary = NB, .n_moving = NM,
                           .moving_at = moving_at};
    path = test_path("moving_walls.h5");
    write_run_st(path, POS, 0, 4, &moving);
    check_moving_boundary(path, 4);
    /* Resumed after frame 2: cut back to 2 rows (views too), then frames 2 and 3 again. */
    mz_h5_out *o = h5_out_reopen(path, N, POS, &moving, 2, "", 4);
    assert_non_null(o);
    assert_int_equal(h5_out_close(o, false, "stopped"), 0);
    check_moving_boundary(path, 2);
    o = h5_out_reopen(path, N, POS, &moving, 2, "", 4);
    assert_non_null(o);
    for (long t = 2; t < 4; t++)
        assert_int_equal(write_frame(o, POS, t), 0);
    assert_int_equal(h5_out_close(o, true, "finished"), 0);
    check_moving_boundary(path, 4);
    assert_null(h5_out_reopen(path, N, POS, &still, 2, "", 4));
    check_moving_boundary(path, 4);
    mz_h5_static fewer = moving; /* another scene's colliders */
    fewer.n_moving = NM - 1;
    assert_null(h5_out_reopen(path, N, POS, &fewer, 2, "", 4));
    check_moving_boundary(path, 4);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(info_print(path, out), 0);
    fclose(out);
    assert_non_null(strstr(text, "4 wall and collider particles in /particles/boundary\n"));
    assert_non_null(strstr(text, "3 moving collider particles in /particles/moving_boundary, "
                                 "a row each frame"));
    free(text);

    /* An earlier mizu's layout (every boundary particle a row each frame in
     * /particles/boundary/position/value): refused on resume, untouched. */
    path = test_path("old_walls.h5");
    write_run_st(path, POS, 0, 2, &moving);
    file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(file, "/particles/boundary/position", H5P_DEFAULT) >= 0);
    assert_true(H5Lmove(file, "/particles/moving_boundary/position", file,
                        "/particles/boundary/position", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Fclose(file);
    assert_null(h5_out_reopen(path, N, POS, &moving, 1, "", 4));
    assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

/* Rigid bodies without their body indices, or with one beyond int32: refused, no file made. */
static void test_bad_rigids(void **state)
{
    (void)state;
    static const uint32_t too_big[1] = {0x80000000u};
    const mz_h5_static bad[] = {{.n_rigids = 2, .rigid_body = NULL},
                                {.n_rigids = 1, .rigid_body = too_big}};
    const char *path = test_path("badrigid.h5");
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_null(create_st(path, POS, 0, &bad[k]));
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(access(test_path("badrigid.xdmf"), F_OK), -1);
    }
}

/* Triangles that name a particle not in the file, or a count without a list: refused before
 * any file is made. */
static void test_bad_triangles(void **state)
{
    (void)state;
    static const uint32_t out_of_range[3] = {0, 1, N};
    const mz_h5_static bad[] = {{.triangles = out_of_range, .n_triangles = 1},
                                {.triangles = NULL, .n_triangles = 2}};
    const char *path = test_path("badtri.h5");
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_null(create_st(path, POS, 0, &bad[k]));
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(access(test_path("badtri.xdmf"), F_OK), -1);
    }
}

static void test_xdmf_path(void **state)
{
    (void)state;
    static const char *const cases[][2] = {{"out.h5", "out.xdmf"},
                                           {"a.b/out", "a.b/out.xdmf"},
                                           {"dir/run.1.h5", "dir/run.1.xdmf"},
                                           {".h5", ".h5.xdmf"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *x = h5_out_xdmf_path(cases[i][0]);
        assert_string_equal(x, cases[i][1]);
        free(x);
    }
    assert_null(h5_out_create(test_path("out.xdmf"), N, POS, 0, NULL, NULL));
    assert_int_equal(access(test_path("out.xdmf"), F_OK), -1);
}

/* A write failing mid-run (a file size limit, as a full disk would): -1, and the frames
 * before stay readable. 1000 particles, so that the .h5 outgrows the limit before the .xdmf. */
static void test_write_failure(void **state)
{
    (void)state;
    enum { M = 1000 };
    const char *path = test_path("full.h5");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static float pos[3 * M];
        const float *data[MZ_FIELD_COUNT] = {pos};
        signal(SIGXFSZ, SIG_IGN);
        mz_h5_out *o = h5_out_create(path, M, POS, 0, NULL, NULL);
        if (!o || h5_out_write_frame(o, 0, 0.0, data, NULL) || h5_out_write_frame(o, 1, 1.0, data, NULL))
            _exit(100);
        struct stat st;
        stat(path, &st);
        struct rlimit lim = {(rlim_t)st.st_size + 4096, (rlim_t)st.st_size + 4096};
        setrlimit(RLIMIT_FSIZE, &lim);
        int rc = 0;
        for (long t = 2; t < 50 && rc == 0; t++)
            rc = h5_out_write_frame(o, t, (double)t, data, NULL);
        long frames = h5_out_frames(o);
        h5_out_close(o, false, "write failed"); /* fails too, but must not crash */
        _exit(rc == -1 ? (int)frames : 101);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    int frames = WEXITSTATUS(st);
    assert_in_range(frames, 2, 3);
    hid_t file = open_ro(path);
    hsize_t dims[3], maxd[3];
    rank_of(file, "/particles/all/position/value", dims, maxd);
    assert_int_equal(dims[0], frames);
    rank_of(file, "/particles/all/position/time", dims, maxd);
    assert_int_equal(dims[0], frames);
    assert_int_equal(int_attr(file, "/parameters/run", "frames_written"), frames);
    float *v = calloc(3 * M * (size_t)frames, sizeof *v);
    read_all(file, "/particles/all/position/value", H5T_NATIVE_FLOAT, v);
    free(v);
    H5Fclose(file);
}

static void test_info(void **state)
{
    (void)state;
    const char *path = test_path("info.h5");
    write_run(path, POS | VEL | DEN, 0, 3);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(info_print(path, out), 0);
    fclose(out);
    assert_non_null(strstr(text, "5 particles"));
    assert_non_null(strstr(text, "3 frames"));
    assert_non_null(strstr(text, "mizu"));
    assert_non_null(strstr(text, "density"));
    assert_non_null(strstr(text, "complete"));
    assert_non_null(strstr(text, "test device"));
    assert_null(strstr(text, "rigid")); /* no rigid bodies: not mentioned */
    free(text);

    const char *bad = test_path("not.h5");
    write_text(bad, "this is not HDF5\n");
    out = open_memstream(&text, &len);
    assert_int_not_equal(info_print(bad, out), 0);
    assert_int_not_equal(info_print(test_path("missing.h5"), out), 0);
    fclose(out);
    free(text);

    /* HDF5, but not ours. */
    const char *other = test_path("other.h5");
    hid_t f = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    H5Fclose(f);
    out = open_memstream(&text, &len);
    assert_int_not_equal(info_print(other, out), 0);
    fclose(out);
    free(text);
    assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_killed_run),   cmocka_unit_test(test_incomplete_close),
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_unwritable),
        cmocka_unit_test(test_create_failure_cleans_up),
        cmocka_unit_test(test_xml_checker),
        cmocka_unit_test(test_xdmf),         cmocka_unit_test(test_surfaces),
        cmocka_unit_test(test_bad_triangles), cmocka_unit_test(test_xdmf_path),
        cmocka_unit_test(test_rigids),       cmocka_unit_test(test_rigid_frames_atomic),
        cmocka_unit_test(test_bad_rigids),   cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_write_failure), cmocka_unit_test(test_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
