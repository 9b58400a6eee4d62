/* `mizu compare A.h5 B.h5`: the checks that make two outputs comparable, and the comparison.
 * Reads what io/ writes (io/h5_out.h) one frame of one series at a time, an [N, C] slab from
 * each file, so memory stays at two frames of one field however many frames the files hold.
 * Rows are particle ids (a mizu output's row i is id i; both id datasets must be equal) or,
 * under /observables/rigid, rigid bodies (both body lists must be equal). A value pair is first
 * compared by its bits: NaN against the same NaN matches, -0 against 0 does not. With a
 * tolerance, a pair whose bits differ may still match. /particles/boundary and
 * /particles/moving_boundary (SPH's wall and collider particles; the moving colliders' a row
 * each frame) are not compared: they are not a result of the run but the scene's geometry
 * placed by the motion laws at the frames' times, and those times are compared.
 * compare_report.c prints the result. */
#include "cli/compare.h"
#include "cli/compare_result.h"
#include "io/h5_read.h"
#include "scene/fields.h"
#include "util/err.h"

#include <hdf5.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PARTICLES "/particles/all"
#define RIGID "/observables/rigid"
#define ID_ROWS ((hsize_t)1 << 20) /* ids read at a time */

/* Where a compared series lies (beside r.s[i]): its group, the rank of its value datasets,
 * and those datasets in A and in B. */
typedef struct source {
    char group[160]; /* such as /particles/all/velocity */
    int rank;        /* 2: value [frames, rows]; 3: value [frames, rows, comps] */
    hid_t d[2];
} source;

typedef struct cmp {
    mz_cmp_result r;
    hid_t h[2];
    mz_names fields[2], rigids[2]; /* the series each file holds */
    source *src;                   /* r.ns of them */
    int32_t *body;                 /* each rigid row's body index */
    hsize_t frames[2];
} cmp;

static int not_comparable(cmp *c, const char *fmt, ...) MZ_PRINTF(2, 3);
static int not_comparable(cmp *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!c->r.reason[0])
        vsnprintf(c->r.reason, sizeof c->r.reason, fmt, ap);
    va_end(ap);
    return MZ_COMPARE_NOT_COMPARABLE;
}

/* ---- names ---- */

static void names_add(mz_names *l, const char *s)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = xstrdup(s);
}

static bool names_has(const mz_names *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return true;
    return false;
}

static void names_free(mz_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (mz_names){0};
}

/* "a, b, c" of l and then more (may be NULL), or "none": a static buffer of two, for
 * messages. */
static const char *names_list(const mz_names *l, const mz_names *more)
{
    static char bufs[2][512];
    static int k;
    char *b = bufs[k++ % 2];
    b[0] = '\0';
    for (int j = 0; j < 2; j++) {
        const mz_names *x = j ? more : l;
        for (size_t i = 0; x && i < x->n; i++) {
            size_t len = strlen(b);
            snprintf(b + len, sizeof bufs[0] - len, "%s%s", len ? ", " : "", x->v[i]);
        }
    }
    return b[0] ? b : "none";
}

/* Fields in mz_field_names order (the order of the scene's output.fields), then others by name. */
static int field_rank(const char *name)
{
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (!strcmp(mz_field_names[f], name))
            return f;
    return MZ_FIELD_COUNT;
}

static void sort_fields(mz_names *l)
{
    for (size_t i = 1; i < l->n; i++)
        for (size_t j = i; j > 0 && field_rank(l->v[j]) < field_rank(l->v[j - 1]); j--) {
            char *t = l->v[j];
            l->v[j] = l->v[j - 1];
            l->v[j - 1] = t;
        }
}

/* ---- the files ---- */

static herr_t add_series(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    char value[256];
    snprintf(value, sizeof value, "%s/value", name);
    if (strlen(name) < MZ_CMP_NAME && H5Lexists(group, name, H5P_DEFAULT) > 0 &&
        H5Lexists(group, value, H5P_DEFAULT) > 0)
        names_add(data, name);
    return 0;
}

/* The names of GROUP's children that hold a value dataset, by name. */
static void list_series(hid_t file, const char *group, mz_names *out)
{
    if (!h5_exists(file, group))
        return;
    hid_t g = H5Gopen2(file, group, H5P_DEFAULT);
    if (g >= 0) {
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_series, out);
        H5Gclose(g);
    }
}

static int open_output(cmp *c, int k)
{
    const char *path = c->r.o->path[k];
    struct stat st;
    if (stat(path, &st) != 0)
        return not_comparable(c, "cannot open %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return not_comparable(c, "cannot read %s: it is a directory", path);
    if (H5Fis_hdf5(path) <= 0)
        return not_comparable(c, "%s: not a mizu output file: not an HDF5 file", path);
    /* No lock: the file may be one that a run is still writing. */
    c->h[k] = h5_open_unlocked(path);
    if (c->h[k] < 0)
        return not_comparable(c, "cannot open %s: HDF5 could not open it (damaged or "
                                 "truncated?)", path);
    if (!h5_exists(c->h[k], "/h5md"))
        return not_comparable(c, "%s: not a mizu output file: /h5md missing", path);
    if (!h5_exists(c->h[k], PARTICLES "/id"))
        return not_comparable(c, "%s: not a mizu output file: " PARTICLES "/id missing", path);
    list_series(c->h[k], PARTICLES, &c->fields[k]);
    sort_fields(&c->fields[k]);
    list_series(c->h[k], RIGID, &c->rigids[k]);
    long long complete = 1;
    if (H5Aexists_by_name(c->h[k], "/parameters/run", "complete", H5P_DEFAULT) > 0) {
        hid_t a = H5Aopen_by_name(c->h[k], "/parameters/run", "complete", H5P_DEFAULT,
                                  H5P_DEFAULT);
        if (a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, &complete) >= 0 && !complete)
            mz_warn("%s: the run that wrote it did not complete (still running, killed or "
                    "failed)", path);
        if (a >= 0)
            H5Aclose(a);
    }
    return 0;
}

/* Elements [first, first + count) of a 1-D or 2-D dataset (rows of `cols`) as mtype into buf. */
static bool read_rows(hid_t d, hid_t mtype, hsize_t first, hsize_t count, hsize_t cols,
                      void *buf)
{
    hid_t fs = H5Dget_space(d);
    int rank = cols ? 2 : 1;
    hsize_t start[2] = {first, 0}, n[2] = {count, cols};
    hid_t ms = H5Screate_simple(rank, n, NULL);
    bool ok = fs >= 0 && ms >= 0 &&
              H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, n, NULL) >= 0 &&
              H5Dread(d, mtype, ms, fs, H5P_DEFAULT, buf) >= 0;
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    return ok;
}

/* The integer 1-D datasets NAME of A and B hold the same values: 0, or not comparable. *rows is
 * their length; what counts rows ("particles"), whose names their values are ("particle ids");
 * keep (may be NULL) gets the values. */
static int same_ints(cmp *c, const char *name, const char *what, const char *whose,
                     unsigned long long *rows, int32_t **keep)
{
    hid_t d[2] = {-1, -1};
    hsize_t n[2][3] = {{0}};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        d[k] = h5_exists(c->h[k], name) ? H5Dopen2(c->h[k], name, H5P_DEFAULT) : -1;
        hid_t t = d[k] < 0 ? -1 : H5Dget_type(d[k]);
        if (d[k] < 0 || h5_dims(d[k], n[k]) != 1 || H5Tget_class(t) != H5T_INTEGER)
            rc = not_comparable(c, "%s: not a mizu output file: %s %s", c->r.o->path[k], name,
                                d[k] < 0 ? "missing" : "is not a list of integers");
        if (t >= 0)
            H5Tclose(t);
    }
    if (!rc && n[0][0] != n[1][0])
        rc = not_comparable(c, "%s has %llu %s, %s has %llu", c->r.o->path[0],
                            (unsigned long long)n[0][0], what, c->r.o->path[1],
                            (unsigned long long)n[1][0]);
    hsize_t block = keep || n[0][0] < ID_ROWS ? n[0][0] : ID_ROWS; /* kept: all at once */
    int32_t *a = NULL, *b = NULL;
    if (!rc && block) {
        a = xmalloc(2 * block * sizeof *a);
        b = a + block;
    }
    for (hsize_t r = 0; !rc && r < n[0][0]; r += block) {
        hsize_t m = n[0][0] - r < block ? n[0][0] - r : block;
        for (int k = 0; k < 2 && !rc; k++)
            if (!read_rows(d[k], H5T_NATIVE_INT32, r, m, 0, k ? b : a))
                rc = not_comparable(c, "cannot read %s of %s", name, c->r.o->path[k]);
        for (hsize_t i = 0; !rc && i < m; i++)
            if (a[i] != b[i])
                rc = not_comparable(c, "%s differ: row %llu is %ld in %s, %ld in %s", whose,
                                    (unsigned long long)(r + i), (long)a[i], c->r.o->path[0],
                                    (long)b[i], c->r.o->path[1]);
    }
    if (!rc && keep && n[0][0]) { /* the rigid bodies: few; kept to name them */
        *keep = xrealloc(a, n[0][0] * sizeof **keep);
        a = NULL;
    }
    free(a);
    for (int k = 0; k < 2; k++)
        if (d[k] >= 0)
            H5Dclose(d[k]);
    *rows = n[0][0];
    return rc;
}

/* ---- what is compared ---- */

static void add_to_compare(cmp *c, const char *name, bool rigid)
{
    for (size_t i = 0; i < c->r.ns; i++)
        if (!strcmp(c->r.s[i].name, name))
            return; /* named twice in --fields */
    c->r.s = xrealloc(c->r.s, (c->r.ns + 1) * sizeof *c->r.s);
    c->src = xrealloc(c->src, (c->r.ns + 1) * sizeof *c->src);
    mz_cmp_series *s = &c->r.s[c->r.ns];
    source *src = &c->src[c->r.ns++];
    *s = (mz_cmp_series){.rigid = rigid};
    *src = (source){.d = {-1, -1}};
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(src->group, sizeof src->group, "%s/%s", rigid ? RIGID : PARTICLES, name);
}

/* "A.h5 holds x, y; B.h5 holds x", or "both hold x, y" when they hold the same. */
static const char *holdings(const cmp *c)
{
    static char buf[1200];
    const char *a = names_list(&c->fields[0], &c->rigids[0]);
    const char *b = names_list(&c->fields[1], &c->rigids[1]);
    if (!strcmp(a, b))
        snprintf(buf, sizeof buf, "both files hold %s", a);
    else
        snprintf(buf, sizeof buf, "%s holds %s; %s holds %s", c->r.o->path[0], a, c->r.o->path[1],
                 b);
    return buf;
}

/* --fields: each name must be a series of both files. */
static int requested_series(cmp *c)
{
    char *list = xstrdup(c->r.o->fields);
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && !rc;
         tok = strtok_r(NULL, ",", &save)) {
        tok += strspn(tok, " ");
        tok[strcspn(tok, " ")] = '\0';
        bool field[2], rigid[2];
        for (int k = 0; k < 2; k++) {
            field[k] = names_has(&c->fields[k], tok);
            rigid[k] = names_has(&c->rigids[k], tok);
        }
        bool in[2] = {field[0] || rigid[0], field[1] || rigid[1]};
        if (!in[0] && !in[1])
            rc = not_comparable(c, "unknown field '%s' (%s)", tok, holdings(c));
        else if (!in[0] || !in[1])
            rc = not_comparable(c, "field %s is in %s but not in %s (%s)", tok,
                                c->r.o->path[in[0] ? 0 : 1], c->r.o->path[in[0] ? 1 : 0],
                                holdings(c));
        else if (field[0] != field[1])
            rc = not_comparable(c, "%s is a particle field in one file and a rigid-body series "
                                   "in the other", tok);
        else
            add_to_compare(c, tok, rigid[0]);
    }
    free(list);
    if (!rc && !c->r.ns)
        rc = not_comparable(c, "--fields names no field (%s)", holdings(c));
    return rc;
}

/* No --fields: the particle fields both files hold (one only one holds is noted, not compared),
 * and the rigid bodies' series, which must be in both or neither. */
static int common_series(cmp *c)
{
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < c->fields[k].n; i++) {
            const char *f = c->fields[k].v[i];
            if (!names_has(&c->fields[1 - k], f))
                names_add(&c->r.only[k], f);
            else if (k == 0)
                add_to_compare(c, f, false);
        }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < c->rigids[k].n; i++)
            if (!names_has(&c->rigids[1 - k], c->rigids[k].v[i]))
                return not_comparable(c, "%s has " RIGID "/%s (rigid bodies), %s has not",
                                      c->r.o->path[k], c->rigids[k].v[i], c->r.o->path[1 - k]);
    for (size_t i = 0; i < c->rigids[0].n; i++)
        add_to_compare(c, c->rigids[0].v[i], true);
    if (!c->r.ns)
        return not_comparable(c, "%s and %s have no field in common (%s)", c->r.o->path[0],
                              c->r.o->path[1], holdings(c));
    return 0;
}

/* Open a series' value datasets: float values of [frames, rows] or [frames, rows, comps], the
 * same shape in both files but for the frames. */
static int open_series(cmp *c, size_t i)
{
    mz_cmp_series *s = &c->r.s[i];
    source *src = &c->src[i];
    hsize_t dims[2][3] = {{0}};
    int rank[2];
    char value[200];
    snprintf(value, sizeof value, "%s/value", src->group);
    hsize_t rows = s->rigid ? c->r.n_rigid : c->r.n;
    for (int k = 0; k < 2; k++) {
        src->d[k] = H5Dopen2(c->h[k], value, H5P_DEFAULT);
        hid_t t = src->d[k] < 0 ? -1 : H5Dget_type(src->d[k]);
        rank[k] = h5_dims(src->d[k], dims[k]);
        bool is_float = t >= 0 && H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4;
        if (t >= 0)
            H5Tclose(t);
        if (!is_float || rank[k] < 2)
            return not_comparable(c, "%s: not a mizu output file: %s is not a float32 series",
                                  c->r.o->path[k], value);
        if (dims[k][1] != rows)
            return not_comparable(c, "%s: not a mizu output file: %s has %llu rows for %llu %s",
                                  c->r.o->path[k], value, (unsigned long long)dims[k][1],
                                  (unsigned long long)rows, s->rigid ? "rigid bodies"
                                                                     : "particles");
    }
    if (rank[0] != rank[1] || (rank[0] == 3 && dims[0][2] != dims[1][2]))
        return not_comparable(c, "%s has %llu values per row in %s, %llu in %s", s->name,
                              rank[0] == 3 ? (unsigned long long)dims[0][2] : 1ULL,
                              c->r.o->path[0],
                              rank[1] == 3 ? (unsigned long long)dims[1][2] : 1ULL,
                              c->r.o->path[1]);
    src->rank = rank[0];
    s->comps = rank[0] == 3 ? (int)dims[0][2] : 1;
    for (int k = 0; k < 2; k++) {
        /* Every series of a mizu output has one record per frame: the file's frame count. */
        if (i == 0)
            c->frames[k] = dims[k][0];
        else if (dims[k][0] != c->frames[k])
            return not_comparable(c, "%s: not a mizu output file: %s has %llu frames, %s %llu",
                                  c->r.o->path[k], s->name, (unsigned long long)dims[k][0],
                                  c->r.s[0].name, (unsigned long long)c->frames[k]);
    }
    return 0;
}

/* "--frames 2" or "--frames 2:5", as given. */
static const char *range_text(const mz_compare_opts *o)
{
    static char buf[64];
    if (o->last < 0)
        snprintf(buf, sizeof buf, "--frames %ld:", o->first);
    else if (o->first == o->last)
        snprintf(buf, sizeof buf, "--frames %ld", o->first);
    else
        snprintf(buf, sizeof buf, "--frames %ld:%ld", o->first, o->last);
    return buf;
}

/* The records to compare: those --frames names, which both files must hold, or from its first
 * to the end (without it, all), where both must hold the same number. */
static int frame_range(cmp *c)
{
    const mz_compare_opts *o = c->r.o;
    long long fa = (long long)c->frames[0], fb = (long long)c->frames[1];
    c->r.first = o->first;
    c->r.last = o->last;
    if (o->last < 0) {
        if (fa != fb)
            return not_comparable(c, "%s has %lld frames, %s has %lld (--frames K:L compares "
                                     "frames both hold)", o->path[0], fa, o->path[1], fb);
        c->r.last = (long)fa - 1;
        if (c->r.first > 0 && c->r.first > c->r.last)
            return not_comparable(c, "%s is out of range: both files hold frames 0..%lld",
                                  range_text(o), fa - 1);
        return 0;
    }
    if (o->last >= fa && o->last >= fb && fa == fb)
        return not_comparable(c, "%s is out of range: both files hold frames 0..%lld",
                              range_text(o), fa - 1);
    if (o->last >= fa && o->last >= fb)
        return not_comparable(c, "%s is out of range: %s holds frames 0..%lld, %s 0..%lld",
                              range_text(o), o->path[0], fa - 1, o->path[1], fb - 1);
    for (int k = 0; k < 2; k++)
        if (o->last >= (long long)c->frames[k])
            return not_comparable(c, "%s holds frames 0..%lld only, %s 0..%lld: %s asks for "
                                     "frames that %s lacks", o->path[k],
                                  (long long)c->frames[k] - 1, o->path[1 - k],
                                  (long long)c->frames[1 - k] - 1, range_text(o), o->path[k]);
    return 0;
}

/* ---- comparing ---- */

/* A pair of values whose bits differ, at (frame, row, comp): the statistics, and whether it
 * still matches under the tolerance; the first mismatch is kept. */
static void differ(mz_cmp_diff *df, const mz_compare_opts *o, double a, double b, long frame,
                   long long row, int comp, unsigned long long abits, unsigned long long bbits,
                   int bytes)
{
    bool both_nan = isnan(a) && isnan(b);
    double d = both_nan ? 0 : fabs(a - b);
    if (isnan(d))
        d = INFINITY; /* NaN against a number */
    double rel = d == 0 ? 0 : d / fabs(b);
    if (isnan(rel))
        rel = INFINITY; /* an infinity against another */
    df->max_abs = d > df->max_abs ? d : df->max_abs;
    df->max_rel = rel > df->max_rel ? rel : df->max_rel;
    df->sumsq += d * d;
    /* A tolerance relative to an infinity would take any value: a non-finite value matches
     * only itself (or NaN another NaN). */
    bool finite = isfinite(a) && isfinite(b);
    double tol = o->atol + (finite ? o->rtol * fabs(b) : 0);
    if (o->tolerance && (both_nan || (finite && d <= tol)))
        return;
    df->mismatches++;
    if (df->failed)
        return;
    df->failed = true;
    df->frame = frame;
    df->id = row;
    df->comp = comp;
    df->a = a;
    df->b = b;
    df->tol = tol;
    df->abits = abits;
    df->bbits = bbits;
    df->bytes = bytes;
}

/* One frame of a series: n values in each of a and b, rows of comps. */
static void compare_floats(mz_cmp_diff *df, const mz_compare_opts *o, const float *a,
                           const float *b, size_t n, int comps, long frame)
{
    if (!memcmp(a, b, n * sizeof *a))
        return; /* the usual case in CI */
    for (size_t i = 0; i < n; i++) {
        uint32_t x, y;
        memcpy(&x, &a[i], sizeof x);
        memcpy(&y, &b[i], sizeof y);
        if (x != y)
            differ(df, o, a[i], b[i], frame, (long long)(i / (size_t)comps),
                   comps > 1 ? (int)(i % (size_t)comps) : -1, x, y, 4);
    }
}

/* Every frame of a series, one [rows, comps] slab from each file at a time. */
static int compare_series(cmp *c, size_t i)
{
    mz_cmp_series *s = &c->r.s[i];
    const source *src = &c->src[i];
    hsize_t rows = s->rigid ? c->r.n_rigid : c->r.n;
    size_t n = (size_t)rows * (size_t)s->comps;
    float *a = xmalloc(2 * (n ? n : 1) * sizeof *a), *b = a + n;
    int rc = 0;
    for (long f = c->r.first; f <= c->r.last && !rc; f++) {
        for (int k = 0; k < 2 && !rc; k++) {
            hid_t fs = H5Dget_space(src->d[k]);
            hsize_t start[3] = {(hsize_t)f, 0, 0}, count[3] = {1, rows, (hsize_t)s->comps};
            hid_t ms = H5Screate_simple(src->rank, count, NULL);
            bool ok = fs >= 0 && ms >= 0 &&
                      H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                      H5Dread(src->d[k], H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, k ? b : a) >= 0;
            if (ms >= 0)
                H5Sclose(ms);
            if (fs >= 0)
                H5Sclose(fs);
            if (!ok)
                rc = not_comparable(c, "cannot read frame %ld of %s/value in %s (damaged?)", f,
                                    src->group, c->r.o->path[k]);
        }
        if (!rc) {
            compare_floats(&s->df, c->r.o, a, b, n, s->comps, f);
            s->df.frames++;
            s->df.rows += rows;
        }
    }
    free(a);
    return rc;
}

/* The first mismatches' rows as ids: a particle's id (in a mizu output, its row), a rigid
 * body's body index. */
static void name_rows(cmp *c)
{
    hid_t d = H5Dopen2(c->h[0], PARTICLES "/id", H5P_DEFAULT);
    for (size_t i = 0; i < c->r.ns; i++) {
        mz_cmp_diff *df = &c->r.s[i].df;
        int32_t id;
        if (!df->failed)
            continue;
        if (c->r.s[i].rigid)
            df->id = c->body[df->id];
        else if (d >= 0 && read_rows(d, H5T_NATIVE_INT32, (hsize_t)df->id, 1, 0, &id))
            df->id = id;
    }
    if (d >= 0)
        H5Dclose(d);
}

/* The frames' steps and times, which every series of a mizu output shares (hard links to one
 * step and one time dataset): those of the first series compared. */
static int compare_counters(cmp *c)
{
    hsize_t count = (hsize_t)(c->r.last - c->r.first + 1);
    long long *step[2] = {xcalloc(count, sizeof **step), xcalloc(count, sizeof **step)};
    double *time[2] = {xcalloc(count, sizeof **time), xcalloc(count, sizeof **time)};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        for (int j = 0; j < 2 && !rc; j++) {
            char name[200];
            snprintf(name, sizeof name, "%s/%s", c->src[0].group, j ? "time" : "step");
            hid_t d = h5_exists(c->h[k], name) ? H5Dopen2(c->h[k], name, H5P_DEFAULT) : -1;
            hsize_t dims[3];
            if (d < 0 || h5_dims(d, dims) != 1 || dims[0] < (hsize_t)c->r.last + 1)
                rc = not_comparable(c, "%s: not a mizu output file: %s %s", c->r.o->path[k],
                                    name, d < 0 ? "missing" : "does not have a record a frame");
            else if (!read_rows(d, j ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG,
                                (hsize_t)c->r.first, count, 0, j ? (void *)time[k]
                                                               : (void *)step[k]))
                rc = not_comparable(c, "cannot read %s in %s", name, c->r.o->path[k]);
            if (d >= 0)
                H5Dclose(d);
        }
    for (hsize_t i = 0; !rc && i < count; i++) {
        long f = c->r.first + (long)i;
        if (step[0][i] != step[1][i])
            differ(&c->r.step, c->r.o, (double)step[0][i], (double)step[1][i], f, -1, -1, 0, 0, 0);
        uint64_t x, y;
        memcpy(&x, &time[0][i], sizeof x);
        memcpy(&y, &time[1][i], sizeof y);
        if (x != y)
            differ(&c->r.time, c->r.o, time[0][i], time[1][i], f, -1, -1, x, y, 8);
    }
    c->r.step.frames = c->r.time.frames = c->r.step.rows = c->r.time.rows = rc ? 0 : count;
    for (int k = 0; k < 2; k++) {
        free(step[k]);
        free(time[k]);
    }
    return rc;
}

static int compare_all(cmp *c)
{
    int rc = open_output(c, 0);
    if (!rc)
        rc = open_output(c, 1);
    if (!rc)
        rc = same_ints(c, PARTICLES "/id", "particles", "particle ids", &c->r.n, NULL);
    if (!rc)
        rc = c->r.o->fields ? requested_series(c) : common_series(c);
    bool rigid = false;
    for (size_t i = 0; i < c->r.ns; i++)
        rigid |= c->r.s[i].rigid;
    if (!rc && rigid)
        rc = same_ints(c, RIGID "/body", "rigid bodies", "the rigid bodies' body indices",
                       &c->r.n_rigid, &c->body);
    for (size_t i = 0; i < c->r.ns && !rc; i++)
        rc = open_series(c, i);
    if (!rc)
        rc = frame_range(c);
    if (!rc && c->r.last >= c->r.first)
        rc = compare_counters(c);
    for (size_t i = 0; i < c->r.ns && !rc; i++)
        rc = compare_series(c, i);
    if (rc)
        return rc;
    name_rows(c);
    c->r.compared = true;
    bool differs = c->r.step.mismatches || c->r.time.mismatches;
    for (size_t i = 0; i < c->r.ns; i++)
        differs |= c->r.s[i].df.mismatches > 0;
    return differs ? MZ_COMPARE_DIFFERS : MZ_COMPARE_MATCH;
}

int compare_files(const mz_compare_opts *o, FILE *out)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    cmp c = {.r = {.o = o}, .h = {-1, -1}};
    int rc = compare_all(&c);
    compare_report(&c.r, rc, out);
    for (size_t i = 0; i < c.r.ns; i++)
        for (int k = 0; k < 2; k++)
            if (c.src[i].d[k] >= 0)
                H5Dclose(c.src[i].d[k]);
    for (int k = 0; k < 2; k++) {
        names_free(&c.fields[k]);
        names_free(&c.rigids[k]);
        names_free(&c.r.only[k]);
        if (c.h[k] >= 0)
            H5Fclose(c.h[k]);
    }
    free(c.r.s);
    free(c.src);
    free(c.body);
    return rc;
}
