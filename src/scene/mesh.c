/* Triangle meshes (contract in mesh.h): OBJ reading, transform, edges and bending pairs, and
 * voxelisation.
 *
 * Voxelisation casts one ray along +x per lattice row (j, k) and fills between sorted crossings.
 * Which triangles a row crosses is decided exactly: the triangles' y and z are snapped to a
 * fine integer grid (2^-k of the spacing, k ≥ 1, so every row sits on an integer point) and
 * point-in-triangle tests use 64-bit integer edge functions. A row that passes exactly through an
 * edge or a vertex is treated as if moved by an infinitesimal step (+y, then +z), the
 * rasterisers' tie rule: the triangles on either side of an edge agree on which one owns the
 * row, so a closed mesh never gets a hole or a doubled crossing. Crossings along the row are
 * snapped to the same grid, and a point is inside when an odd number of them lie at or below it.
 * Both rules are half-open: a point exactly on a face belongs to the solid on the face's +x, +y
 * or +z side, so two boxes that touch share no point and leave no gap. */
#include "scene/mesh.h"

#include "util/digest.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- OBJ ---------------------------------------------------------------------------------- */

/* '\r' is blank so that CRLF files read like LF ones. */
static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The next whitespace-separated token of a line, NUL-terminated in place; NULL at its end. */
static char *next_token(char **p)
{
    char *s = *p;
    while (is_blank(*s))
        s++;
    if (!*s) {
        *p = s;
        return NULL;
    }
    char *t = s;
    while (*s && !is_blank(*s))
        s++;
    if (*s)
        *s++ = '\0';
    *p = s;
    return t;
}

/* An optional integer field of a face vertex ("", or digits with a sign), up to '/' or the end. */
static bool skip_index_field(const char **s)
{
    const char *p = *s;
    if (*p == '-' || *p == '+')
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    if ((*p && *p != '/') || (p != *s && (p[-1] == '-' || p[-1] == '+')))
        return false;
    *s = p;
    return true;
}

/* A face vertex: v, v/t, v/t/n or v//n; only v is kept. */
static bool parse_face_vertex(const char *tok, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(tok, &end, 10);
    if (end == tok || errno || (*end && *end != '/'))
        return false;
    const char *p = end;
    for (int field = 0; field < 2 && *p == '/'; field++) {
        p++;
        if (!skip_index_field(&p))
            return false;
    }
    return *p == '\0';
}

typedef struct obj_reader {
    const char *name;
    size_t line, n_total; /* vertices in the whole file */
    mz_mesh *m;
    size_t cap_tris, cap_lines, n_faces;
    uint32_t *face;
    size_t face_cap;
    mz_diag *d;
    size_t errors;
} obj_reader;

static void obj_error(obj_reader *r, const char *msg, const char *arg)
{
    diag_add(r->d, "%s:%zu: %s%s", r->name, r->line, msg, arg ? arg : "");
    r->errors++;
}

static void read_vertex(obj_reader *r, char *rest)
{
    double x[3];
    int got = 0;
    for (char *tok; got < 3 && (tok = next_token(&rest)); got++) {
        char *end;
        x[got] = strtod(tok, &end);
        if (end == tok || *end) {
            diag_add(r->d, "%s:%zu: '%s' is not a number", r->name, r->line, tok);
            r->errors++;
            return;
        }
        if (!isfinite(x[got])) {
            diag_add(r->d, "%s:%zu: '%s' is not a finite number", r->name, r->line, tok);
            r->errors++;
            return;
        }
    }
    if (got < 3) {
        diag_add(r->d, "%s:%zu: a vertex needs 3 coordinates (got %d)", r->name, r->line, got);
        r->errors++;
        return;
    }
    if (r->m->n_verts == r->n_total) { /* the first pass counted differently: cannot be */
        obj_error(r, "unreadable vertex line", NULL);
        return;
    }
    /* further values (w, or vertex colours) are ignored */
    memcpy(r->m->v[r->m->n_verts++], x, sizeof x);
}

/* The vertex indices of an `f` or `l` statement into r->face, 0-based; the count, or -1 after
 * reporting. */
static long read_indices(obj_reader *r, char *rest, const char *what)
{
    size_t n = 0;
    for (char *tok; (tok = next_token(&rest));) {
        long long v;
        if (!parse_face_vertex(tok, &v)) {
            diag_add(r->d, "%s:%zu: '%s' is not a %s vertex (expected v, v/t, v/t/n or v//n)",
                     r->name, r->line, tok, what);
            r->errors++;
            return -1;
        }
        /* positive indices may name any vertex of the file; negative ones count back from the
         * last vertex defined before this face */
        long long so_far = (long long)r->m->n_verts, idx = v > 0 ? v - 1 : so_far + v;
        if (v == 0) {
            diag_add(r->d, "%s:%zu: %s index 0 is invalid (OBJ indices start at 1)", r->name,
                     r->line, what);
            r->errors++;
            return -1;
        }
        if (v > 0 && v > (long long)r->n_total) {
            diag_add(r->d, "%s:%zu: %s index %lld is out of range (the file has %zu vertices)",
                     r->name, r->line, what, v, r->n_total);
            r->errors++;
            return -1;
        }
        if (v < 0 && idx < 0) {
            diag_add(r->d, "%s:%zu: %s index %lld is out of range (%zu vertices defined so far)",
                     r->name, r->line, what, v, r->m->n_verts);
            r->errors++;
            return -1;
        }
        if (n == r->face_cap) {
            r->face_cap = r->face_cap ? 2 * r->face_cap : 16;
            r->face = xrealloc(r->face, r->face_cap * sizeof *r->face);
        }
        r->face[n++] = (uint32_t)idx;
    }
    return (long)n;
}

/* `l a b c ...`: a polyline, one segment per consecutive pair (ropes and chains). */
static void read_line(obj_reader *r, char *rest)
{
    long n = read_indices(r, rest, "line");
    if (n < 0)
        return;
    if (n < 2) {
        diag_add(r->d, "%s:%zu: a line needs at least 2 vertices (got %ld)", r->name, r->line, n);
        r->errors++;
        return;
    }
    mz_mesh *m = r->m;
    for (long i = 1; i < n; i++) {
        if (r->face[i - 1] == r->face[i])
            continue;
        if (m->n_lines == r->cap_lines) {
            r->cap_lines = r->cap_lines ? 2 * r->cap_lines : 64;
            m->line = xrealloc(m->line, r->cap_lines * sizeof *m->line);
        }
        m->line[m->n_lines][0] = r->face[i - 1];
        m->line[m->n_lines][1] = r->face[i];
        m->n_lines++;
    }
}

static void read_face(obj_reader *r, char *rest)
{
    long nl = read_indices(r, rest, "face");
    if (nl < 0)
        return;
    size_t n = (size_t)nl;
    if (n < 3) {
        diag_add(r->d, "%s:%zu: a face needs at least 3 vertices (got %zu)", r->name, r->line, n);
        r->errors++;
        return;
    }
    r->n_faces++;
    mz_mesh *m = r->m;
    for (size_t i = 2; i < n; i++) {
        uint32_t a = r->face[0], b = r->face[i - 1], c = r->face[i];
        if (a == b || b == c || a == c)
            continue; /* degenerate: no area, no edges worth a constraint */
        if (m->n_tris == r->cap_tris) {
            r->cap_tris = r->cap_tris ? 2 * r->cap_tris : 64;
            m->tri = xrealloc(m->tri, r->cap_tris * sizeof *m->tri);
        }
        m->tri[m->n_tris][0] = a;
        m->tri[m->n_tris][1] = b;
        m->tri[m->n_tris][2] = c;
        m->n_tris++;
    }
}

/* Whether a line's first token is exactly `v`. */
static bool is_vertex_line(const char *s, const char *end)
{
    while (s < end && is_blank(*s))
        s++;
    return s + 1 < end && s[0] == 'v' && is_blank(s[1]);
}

int mesh_parse_obj(const char *text, size_t len, const char *name, mz_mesh *m, mz_diag *d)
{
    *m = (mz_mesh){0};
    /* a first pass counts the vertices so that faces may refer to later ones */
    size_t n_total = 0;
    for (const char *s = text, *end = text + len; s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *eol = nl ? nl : end;
        n_total += is_vertex_line(s, eol);
        s = eol + 1;
    }
    obj_reader r = {.name = name, .n_total = n_total, .m = m, .d = d};
    if (n_total > UINT32_MAX) {
        diag_add(d, "%s: too many vertices (%zu; at most %u)", name, n_total, UINT32_MAX);
        return -1;
    }
    m->v = xcalloc(n_total ? n_total : 1, sizeof *m->v);
    char *buf = xmalloc(len + 1); /* lines are cut into NUL-terminated tokens in place */
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (char *s = buf, *end = buf + len; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        if (nl)
            *nl = '\0';
        char *hash = strchr(s, '#');
        if (hash)
            *hash = '\0';
        r.line++;
        char *rest = s, *kw = next_token(&rest);
        if (kw && !strcmp(kw, "v"))
            read_vertex(&r, rest);
        else if (kw && !strcmp(kw, "f"))
            read_face(&r, rest);
        else if (kw && !strcmp(kw, "l"))
            read_line(&r, rest);
        /* everything else (vt, vn, o, g, s, usemtl, mtllib, ...) carries nothing we use */
        s = nl ? nl + 1 : end;
    }
    free(buf);
    free(r.face);
    if (!r.errors && m->n_tris == 0 && m->n_lines == 0) {
        if (r.n_faces)
            diag_add(d, "%s: no triangles (all %zu faces are degenerate)", name, r.n_faces);
        else
            diag_add(d, "%s: no triangles (the file has %zu vertices and no faces or lines)",
                     name, m->n_verts);
        r.errors++;
    }
    if (r.errors) {
        mesh_free(m);
        return -1;
    }
    return 0;
}

int mesh_load_obj(const char *path, mz_mesh *m, uint64_t *digest, mz_diag *d)
{
    size_t len;
    char *text = read_file_max(path, MZ_MESH_MAX_BYTES, &len);
    if (!text) {
        *m = (mz_mesh){0};
        diag_add(d, "%s: cannot read the mesh: %s", path, read_file_error(errno, MZ_MESH_MAX_BYTES));
        return -1;
    }
    if (digest)
        *digest = digest_add(DIGEST_START, text, len);
    int rc = mesh_parse_obj(text, len, path, m, d);
    free(text);
    return rc;
}

void mesh_free(mz_mesh *m)
{
    free(m->v);
    free(m->tri);
    free(m->line);
    *m = (mz_mesh){0};
}

/* ---- geometry ----------------------------------------------------------------------------- */

/* cos and sin of an angle in degrees, exact at multiples of 90° so that axis-aligned meshes
 * stay axis-aligned (and lattice-aligned) after a quarter turn. */
static void cos_sin_deg(double deg, double *c, double *s)
{
    double r = fmod(deg, 360.0);
    if (r < 0)
        r += 360.0;
    if (r == 0 || r == 90 || r == 180 || r == 270) {
        int q = (int)(r / 90);
        static const double cq[4] = {1, 0, -1, 0}, sq[4] = {0, 1, 0, -1};
        *c = cq[q];
        *s = sq[q];
        return;
    }
    double a = deg * (3.14159265358979323846 / 180.0);
    *c = cos(a);
    *s = sin(a);
}

void mesh_transform(mz_mesh *m, double scale, const double rotate_deg[3],
                    const double translate[3])
{
    double c[3] = {1, 1, 1}, s[3] = {0, 0, 0};
    for (int a = 0; a < 3 && rotate_deg; a++)
        cos_sin_deg(rotate_deg[a], &c[a], &s[a]);
    for (size_t i = 0; i < m->n_verts; i++) {
        double *p = m->v[i];
        double x = scale * p[0], y = scale * p[1], z = scale * p[2], t;
        t = c[0] * y - s[0] * z; /* about x */
        z = s[0] * y + c[0] * z;
        y = t;
        t = c[1] * x + s[1] * z; /* about y */
        z = -s[1] * x + c[1] * z;
        x = t;
        t = c[2] * x - s[2] * y; /* about z */
        y = s[2] * x + c[2] * y;
        x = t;
        p[0] = x + (translate ? translate[0] : 0);
        p[1] = y + (translate ? translate[1] : 0);
        p[2] = z + (translate ? translate[2] : 0);
    }
}

void mesh_bounds(const mz_mesh *m, double lo[3], double hi[3])
{
    for (int a = 0; a < 3; a++) {
        lo[a] = m->n_verts ? m->v[0][a] : 0;
        hi[a] = lo[a];
    }
    for (size_t i = 1; i < m->n_verts; i++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], m->v[i][a]);
            hi[a] = fmax(hi[a], m->v[i][a]);
        }
}

/* ---- topology ----------------------------------------------------------------------------- */

/* A triangle's edge (lo << 32 | hi) and the vertex opposite it. */
typedef struct half_edge {
    uint64_t key;
    uint32_t opp;
} half_edge;

static int cmp_half_edge(const void *pa, const void *pb)
{
    const half_edge *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->opp > b->opp) - (a->opp < b->opp);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

static uint64_t edge_key(uint32_t a, uint32_t b)
{
    return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
}

/* The 3 per triangle, sorted by edge (equal edges adjacent). */
static half_edge *sorted_half_edges(const mz_mesh *m)
{
    half_edge *h = xmalloc((3 * m->n_tris + 1) * sizeof *h);
    for (size_t t = 0; t < m->n_tris; t++)
        for (int e = 0; e < 3; e++) {
            const uint32_t *v = m->tri[t];
            h[3 * t + e] = (half_edge){edge_key(v[e], v[(e + 1) % 3]), v[(e + 2) % 3]};
        }
    qsort(h, 3 * m->n_tris, sizeof *h, cmp_half_edge);
    return h;
}

/* Sorted unique edge keys; returns the count. */
static size_t edge_keys(const mz_mesh *m, uint64_t **keys)
{
    half_edge *h = sorted_half_edges(m);
    uint64_t *k = xmalloc((3 * m->n_tris + m->n_lines + 1) * sizeof *k);
    size_t n = 0;
    for (size_t i = 0; i < 3 * m->n_tris; i++)
        if (!n || k[n - 1] != h[i].key)
            k[n++] = h[i].key;
    free(h);
    if (m->n_lines) { /* line segments join the triangle edges, duplicates merged */
        for (size_t i = 0; i < m->n_lines; i++)
            k[n++] = edge_key(m->line[i][0], m->line[i][1]);
        qsort(k, n, sizeof *k, cmp_u64);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            if (!u || k[u - 1] != k[i])
                k[u++] = k[i];
        n = u;
    }
    *keys = k;
    return n;
}

size_t mesh_edges(const mz_mesh *m, uint32_t (**edges)[2])
{
    uint64_t *k;
    size_t n = edge_keys(m, &k);
    uint32_t(*e)[2] = xmalloc((n ? n : 1) * sizeof *e);
    for (size_t i = 0; i < n; i++) {
        e[i][0] = (uint32_t)(k[i] >> 32);
        e[i][1] = (uint32_t)k[i];
    }
    free(k);
    *edges = e;
    return n;
}

size_t mesh_bending_pairs(const mz_mesh *m, uint32_t (**pairs)[2], size_t *nonmanifold)
{
    half_edge *h = sorted_half_edges(m);
    size_t nh = 3 * m->n_tris, n = 0, bad = 0;
    uint64_t *p = xmalloc((nh + 1) * sizeof *p);
    for (size_t i = 0, j; i < nh; i = j) {
        for (j = i + 1; j < nh && h[j].key == h[i].key;)
            j++;
        if (j - i > 2)
            bad++;
        else if (j - i == 2 && h[i].opp != h[i + 1].opp)
            p[n++] = edge_key(h[i].opp, h[i + 1].opp);
    }
    free(h);
    qsort(p, n, sizeof *p, cmp_u64);
    uint64_t *k;
    size_t ne = edge_keys(m, &k), out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && p[out - 1] == p[i])
            continue;
        if (bsearch(&p[i], k, ne, sizeof *k, cmp_u64))
            continue; /* already held by a stretch constraint */
        p[out++] = p[i];
    }
    free(k);
    uint32_t(*r)[2] = xmalloc((out ? out : 1) * sizeof *r);
    for (size_t i = 0; i < out; i++) {
        r[i][0] = (uint32_t)(p[i] >> 32);
        r[i][1] = (uint32_t)p[i];
    }
    free(p);
    if (nonmanifold)
        *nonmanifold = bad;
    *pairs = r;
    return out;
}

int mesh_is_closed(const mz_mesh *m)
{
    if (!m->n_tris)
        return 0;
    half_edge *h = sorted_half_edges(m);
    size_t nh = 3 * m->n_tris;
    int closed = 1;
    for (size_t i = 0, j; i < nh && closed; i = j) {
        for (j = i + 1; j < nh && h[j].key == h[i].key;)
            j++;
        closed = j - i == 2;
    }
    free(h);
    return closed;
}

/* ---- voxelisation ------------------------------------------------------------------------- */

/* A crossing of row `row` at x = xq·spacing/q from the origin. */
typedef struct crossing {
    size_t row;
    int64_t xq;
} crossing;

static int cmp_crossing(const void *pa, const void *pb)
{
    const crossing *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return (a->xq > b->xq) - (a->xq < b->xq);
}

/* The first lattice index i with (i + 1/2)·q >= c (snapped units); may exceed the lattice. */
static int64_t first_point_from(int64_t c, int64_t q)
{
    return c <= q / 2 ? 0 : (c - q / 2 + q - 1) / q;
}

/* Which side of edge a→b the point p is on, with exact ties broken as if p were moved by
 * (+ε, +ε²) in (y, z): the sign of cross(b − a, p − a), never 0 for a proper edge. */
static int edge_side(const int64_t a[2], const int64_t b[2], const int64_t p[2])
{
    int64_t du = b[0] - a[0], dv = b[1] - a[1];
    int64_t e = du * (p[1] - a[1]) - dv * (p[0] - a[0]);
    if (e == 0)
        e = dv != 0 ? -dv : du;
    return e > 0 ? 1 : -1;
}

size_t mesh_voxelize(const mz_mesh *m, double spacing, double origin[3], size_t dims[3],
                     uint8_t **inside)
{
    double hi[3];
    mesh_bounds(m, origin, hi);
    *inside = NULL;
    dims[0] = dims[1] = dims[2] = 0;
    if (!m->n_tris || !(spacing > 0))
        return 0;
    for (int a = 0; a < 3; a++) {
        /* a mesh exactly N spacings wide gets N points, not N + 1 from round-off */
        double n = ceil((hi[a] - origin[a]) / spacing - 1e-9);
        dims[a] = n < 1 ? 1 : (size_t)n;
    }
    size_t nx = dims[0], ny = dims[1], nz = dims[2];
    *inside = xcalloc(nx * ny * nz, 1);

    /* coordinates in units of spacing/q: points sit at (i + 1/2)·q, everything below 2^29, so
     * edge functions (products of two differences) fit in int64 with room to spare */
    size_t most = nx > ny ? nx : ny;
    most = nz > most ? nz : most;
    int64_t q = (int64_t)1 << 28;
    while (q > 2 && (double)q * (double)(most + 1) >= 0x1p29)
        q /= 2;
    int64_t (*yz)[2] = xmalloc(m->n_verts * sizeof *yz);
    for (size_t i = 0; i < m->n_verts; i++)
        for (int a = 0; a < 2; a++)
            yz[i][a] = llround((m->v[i][a + 1] - origin[a + 1]) / spacing * (double)q);

    size_t n_cross = 0, cap = 1024;
    crossing *cr = xmalloc(cap * sizeof *cr);
    for (size_t t = 0; t < m->n_tris; t++) {
        const uint32_t *tv = m->tri[t];
        const int64_t *a = yz[tv[0]], *b = yz[tv[1]], *c = yz[tv[2]];
        int64_t area2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
        if (area2 == 0)
            continue; /* seen edge-on: a perturbed row never crosses it */
        int sign = area2 > 0 ? 1 : -1;
        /* rows whose (y, z) lies in the triangle's bounding box, bounds included */
        int64_t lo_rc[2], hi_rc[2];
        for (int ax = 0; ax < 2; ax++) {
            int64_t mn = a[ax], mx = a[ax];
            mn = b[ax] < mn ? b[ax] : mn, mx = b[ax] > mx ? b[ax] : mx;
            mn = c[ax] < mn ? c[ax] : mn, mx = c[ax] > mx ? c[ax] : mx;
            int64_t n = (int64_t)(ax ? nz : ny);
            lo_rc[ax] = first_point_from(mn, q);
            hi_rc[ax] = first_point_from(mx + 1, q) - 1;
            if (hi_rc[ax] > n - 1)
                hi_rc[ax] = n - 1;
        }
        const double *xa = m->v[tv[0]], *xb = m->v[tv[1]], *xc = m->v[tv[2]];
        for (int64_t k = lo_rc[1]; k <= hi_rc[1]; k++)
            for (int64_t j = lo_rc[0]; j <= hi_rc[0]; j++) {
                const int64_t p[2] = {j * q + q / 2, k * q + q / 2};
                if (edge_side(a, b, p) != sign || edge_side(b, c, p) != sign ||
                    edge_side(c, a, p) != sign)
                    continue;
                /* x where the row meets the triangle's plane, from barycentric weights that
                 * are exact and sum to area2 */
                int64_t wa = (c[0] - b[0]) * (p[1] - b[1]) - (c[1] - b[1]) * (p[0] - b[0]);
                int64_t wb = (a[0] - c[0]) * (p[1] - c[1]) - (a[1] - c[1]) * (p[0] - c[0]);
                int64_t wc = area2 - wa - wb;
                double x = ((double)wa * xa[0] + (double)wb * xb[0] + (double)wc * xc[0]) /
                           (double)area2;
                if (n_cross == cap) {
                    cap *= 2;
                    cr = xrealloc(cr, cap * sizeof *cr);
                }
                cr[n_cross++] = (crossing){(size_t)k * ny + (size_t)j,
                                           llround((x - origin[0]) / spacing * (double)q)};
            }
    }
    free(yz);

    /* fill each row between crossing pairs: points with entry <= (i + 1/2)·q < exit */
    qsort(cr, n_cross, sizeof *cr, cmp_crossing);
    size_t count = 0;
    for (size_t i = 0; i + 1 < n_cross; i++) {
        if (cr[i].row != cr[i + 1].row)
            continue; /* an odd crossing out: only an open mesh leaves one */
        int64_t from = first_point_from(cr[i].xq, q), to = first_point_from(cr[i + 1].xq, q);
        size_t i0 = from > (int64_t)nx ? nx : (size_t)from;
        size_t i1 = to > (int64_t)nx ? nx : (size_t)to;
        memset(*inside + cr[i].row * nx + i0, 1, i1 - i0);
        count += i1 - i0;
        i++; /* the pair's exit is not the next entry */
    }
    free(cr);
    return count;
}
