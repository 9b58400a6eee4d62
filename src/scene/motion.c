/* colliders[].motion: the law s(t) (a ramped sine or a table read from CSV), checked so that it
 * starts at rest where the scene puts the collider. */
#include "scene/bodies.h"
#include "scene/validate.h"
#include "util/digest.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A motion table's largest file. */
#define MAX_TABLE_BYTES ((size_t)64 << 20)

/* The cubic Hermite piece between rows lo and lo + 1 at t: s, ds/dt, d²s/dt². */
static void table_piece(const mz_motion *m, size_t lo, double t, double out[3])
{
    const double *T = m->table_t, *V = m->table_v, *D = m->table_d;
    double h = T[lo + 1] - T[lo], u = (t - T[lo]) / h;
    double v0 = V[lo], v1 = V[lo + 1], m0 = h * D[lo], m1 = h * D[lo + 1];
    double u2 = u * u, u3 = u2 * u;
    out[0] = (2 * u3 - 3 * u2 + 1) * v0 + (u3 - 2 * u2 + u) * m0 + (3 * u2 - 2 * u3) * v1 +
             (u3 - u2) * m1;
    out[1] = ((6 * u2 - 6 * u) * (v0 - v1) + (3 * u2 - 4 * u + 1) * m0 + (3 * u2 - 2 * u) * m1) /
             h;
    out[2] = ((12 * u - 6) * (v0 - v1) + (6 * u - 4) * m0 + (6 * u - 2) * m1) / (h * h);
}

void motion_eval(const mz_motion *m, double t, double out[3])
{
    if (m->table_n > 0) {
        const double *T = m->table_t, *V = m->table_v;
        size_t n = m->table_n;
        out[1] = out[2] = 0;
        if (t < T[0]) { /* at the first row the first piece's slope: a law may start moving */
            out[0] = V[0];
        } else if (t >= T[n - 1]) {
            out[0] = V[n - 1];
        } else {
            size_t lo = 0, hi = n - 1; /* T[lo] <= t < T[hi] */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (T[mid] <= t)
                    lo = mid;
                else
                    hi = mid;
            }
            table_piece(m, lo, t, out);
        }
    } else {
        double pi = acos(-1.0), w = 2 * pi / m->period, arg = w * t + m->phase * pi / 180;
        double r = 1, r1 = 0, r2 = 0;
        if (m->ramp > 0 && t < m->ramp) {
            double q = pi / m->ramp;
            r = 0.5 * (1 - cos(q * t));
            r1 = 0.5 * q * sin(q * t);
            r2 = 0.5 * q * q * cos(q * t);
        }
        double f = sin(arg), f1 = w * cos(arg), f2 = -w * w * f;
        out[0] = m->amplitude * r * f;
        out[1] = m->amplitude * (r1 * f + r * f1);
        out[2] = m->amplitude * (r2 * f + 2 * r1 * f1 + r * f2);
    }
    for (int k = 0; k < 3; k++)
        out[k] *= m->scale;
}

static double sign_of(double x) { return (x > 0) - (x < 0); }

/* Fritsch–Carlson slopes at the rows (as SciPy's PCHIP): a weighted harmonic mean of the
 * neighbouring secants inside, 0 at a local extremum, one-sided three-point ends kept from
 * overshooting. So the curve never leaves the rows' range between two rows, and its velocity
 * and acceleration belong to the positions (a moving frame feels the motion the table gives). */
void motion_table_slopes(mz_motion *m)
{
    size_t n = m->table_n;
    const double *T = m->table_t, *V = m->table_v;
    double *D = m->table_d;
    for (size_t k = 0; k < n; k++)
        D[k] = 0;
    if (n < 2)
        return;
    if (n == 2) {
        D[0] = D[1] = (V[1] - V[0]) / (T[1] - T[0]);
        return;
    }
    for (size_t k = 1; k + 1 < n; k++) {
        double h0 = T[k] - T[k - 1], h1 = T[k + 1] - T[k];
        double d0 = (V[k] - V[k - 1]) / h0, d1 = (V[k + 1] - V[k]) / h1;
        if (d0 * d1 > 0) {
            double w0 = 2 * h1 + h0, w1 = h1 + 2 * h0;
            D[k] = (w0 + w1) / (w0 / d0 + w1 / d1);
        }
    }
    for (int end = 0; end < 2; end++) { /* rows 0, 1, 2 or n-1, n-2, n-3 */
        size_t a = end ? n - 1 : 0, b = end ? n - 2 : 1, c = end ? n - 3 : 2;
        double h0 = T[b] - T[a], h1 = T[c] - T[b]; /* signed: negative at the far end */
        double d0 = (V[b] - V[a]) / h0, d1 = (V[c] - V[b]) / h1;
        double e = ((2 * h0 + h1) * d0 - h0 * d1) / (h0 + h1);
        if (sign_of(e) != sign_of(d0))
            e = 0;
        else if (sign_of(d0) != sign_of(d1) && fabs(e) > 3 * fabs(d0))
            e = 3 * d0;
        D[a] = e;
    }
}

/* The rows of a CSV table: time, value (',' ';' or blanks between), '#' comments, one header
 * line allowed before the first row. Times must increase. */
static void read_table(mz_motion *m, const char *file, const char *path, mz_diag *d)
{
    size_t len;
    char *text = read_file_max(file, MAX_TABLE_BYTES, &len);
    if (!text) {
        diag_add(d, "%s.table: cannot read %s: %s", path, file,
                 read_file_error(errno, MAX_TABLE_BYTES));
        return;
    }
    m->table_digest = digest_add(DIGEST_START, text, len);
    size_t cap = 64, line = 0;
    m->table_t = xmalloc(cap * sizeof *m->table_t);
    m->table_v = xmalloc(cap * sizeof *m->table_v);
    bool header_allowed = true;
    for (char *p = text, *next; p && *p; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        line++;
        for (char *c = p; *c; c++)
            if (*c == ',' || *c == ';' || *c == '\r' || *c == '\t')
                *c = ' ';
        char *q = p;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '\0' || *q == '#')
            continue;
        char *end1, *end2;
        double t = strtod(q, &end1), v = end1 == q ? 0 : strtod(end1, &end2);
        bool ok = end1 != q && end2 != end1;
        if (ok)
            for (char *c = end2; *c; c++)
                ok &= isspace((unsigned char)*c) != 0;
        if (!ok && header_allowed) {
            header_allowed = false;
            continue;
        }
        header_allowed = false;
        if (!ok || !isfinite(t) || !isfinite(v)) {
            diag_add(d, "%s.table: %s line %zu: expected two numbers, time (s) and value", path,
                     file, line);
            break;
        }
        if (m->table_n > 0 && !(t > m->table_t[m->table_n - 1])) {
            diag_add(d, "%s.table: %s line %zu: time %g does not increase (the row before is at "
                        "%g s)", path, file, line, t, m->table_t[m->table_n - 1]);
            break;
        }
        if (m->table_n == cap) {
            cap *= 2;
            m->table_t = xrealloc(m->table_t, cap * sizeof *m->table_t);
            m->table_v = xrealloc(m->table_v, cap * sizeof *m->table_v);
        }
        m->table_t[m->table_n] = t;
        m->table_v[m->table_n++] = v;
    }
    free(text);
    if (m->table_n < 2) { /* (a bad row already said so) */
        if (d->count == 0)
            diag_add(d, "%s.table: %s has %zu rows; a motion needs at least 2", path, file,
                     m->table_n);
        return;
    }
    m->table_d = xcalloc(m->table_n, sizeof *m->table_d);
    motion_table_slopes(m);
}

/* A unit vector from v in the simulated axes into out; false when it is zero there. */
static bool unit_of(const double v[3], int dim, double out[3])
{
    double n = 0;
    for (int a = 0; a < 3; a++) {
        out[a] = a < dim ? v[a] : 0;
        n += out[a] * out[a];
    }
    if (!(n > 0))
        return false;
    for (int a = 0; a < 3; a++)
        out[a] /= sqrt(n);
    return true;
}

/* The scene's laws by slot: colliders[c].motion for slot c, domain.motion for slot
 * n_colliders; NULL where that one does not move. Its JSON path into path. */
static const mz_motion *slot_law(const mz_scene *s, size_t slot, char path[48])
{
    if (slot < s->n_colliders) {
        snprintf(path, 48, "colliders[%zu].motion", slot);
        return s->colliders[slot].has_motion ? &s->colliders[slot].motion : NULL;
    }
    snprintf(path, 48, "domain.motion");
    return slot == s->n_colliders && s->domain.has_motion ? &s->domain.motion : NULL;
}

/* One law: its unit vector, centre (default `centre`), table, and s(0) = 0. */
static void check_law(mz_scene *s, mz_motion *m, const char *path, const double centre[3],
                      const char *what, mz_diag *d)
{
    int dim = s->sim.dimensions;
    m->scale = m->type == MZ_MOTION_ROTATION ? acos(-1.0) / 180 : 1;
    if (m->type == MZ_MOTION_TRANSLATION && !unit_of(m->direction, dim, m->unit))
        diag_add(d, "%s.direction must not be zero in the simulated axes", path);
    if (m->type == MZ_MOTION_ROTATION) {
        if (dim == 2 && (m->axis[0] != 0 || m->axis[1] != 0 || m->axis[2] == 0))
            diag_add(d, "%s.axis must be [0, 0, 1] or [0, 0, -1] in 2D (got [%g, %g, %g])", path,
                     m->axis[0], m->axis[1], m->axis[2]);
        else if (!unit_of(m->axis, 3, m->unit))
            diag_add(d, "%s.axis must not be zero", path);
        if (!m->has_center) {
            memcpy(m->center, centre, sizeof m->center);
            m->has_center = true;
        }
    }
    if (m->table) {
        char *file = scene_input_path(s, m->table);
        read_table(m, file, path, d);
        free(file);
    }
    double at0[3];
    motion_eval(m, 0, at0);
    double size = m->table_n ? fabs(m->table_v[0]) : fabs(m->amplitude);
    for (size_t k = 0; k < m->table_n; k++)
        size = fmax(size, fabs(m->table_v[k]));
    if (d->count == 0 && fabs(at0[0]) > 1e-9 * fmax(size, 1e-300) * m->scale)
        diag_add(d, "%s: the law is %g %s at t = 0, not 0 (the scene's geometry is where %s "
                    "starts: %s)", path, at0[0] / m->scale,
                 m->type == MZ_MOTION_ROTATION ? "degrees" : "m", what,
                 m->table ? "make the table's value at t = 0 zero"
                          : "a phase of 0 or 180 degrees, or a ramp");
}

void validate_motion(mz_scene *s, const double centre[][3], mz_diag *d)
{
    size_t moving = scene_moving_count(s);
    if (moving > MZ_MAX_MOVING)
        diag_add(d, "colliders: %zu move; at most %d may", moving, MZ_MAX_MOVING);
    for (size_t c = 0; c <= s->n_colliders; c++) {
        char path[48];
        mz_motion *m = (mz_motion *)slot_law(s, c, path);
        if (!m)
            continue;
        bool domain = c == s->n_colliders;
        if (!domain && s->n_fluids && scene_solver(s) == MZ_SOLVER_FLIP &&
            s->colliders[c].has_forces)
            diag_add(d, "colliders[%zu]: flip does not measure the forces on a moving collider yet "
                        "(its solid cells change as it moves, and the pressure on their faces "
                        "jumps with them): leave out forces, or keep it static", c);
        if (!domain && scene_is_sph(s) &&
            s->domain.boundary.friction == MZ_FRICTION_WALL_FUNCTION)
            diag_add(d, "%s: moving colliders with domain.boundary.friction \"wall_function\" "
                        "are not supported yet (no_slip or free_slip)", path);
        double mid[3];
        for (int a = 0; a < 3; a++)
            mid[a] = 0.5 * (s->domain.min[a] + s->domain.max[a]);
        check_law(s, m, path, domain ? mid : centre[c], domain ? "the domain" : "the collider",
                  d);
    }
}

size_t scene_moving_count(const mz_scene *s)
{
    size_t n = 0;
    for (size_t c = 0; c < s->n_colliders; c++)
        n += s->colliders[c].has_motion;
    return n;
}

void scene_frame_extremes(const mz_scene *s, double *speed, double *accel)
{
    *speed = *accel = 0;
    if (!s->domain.has_motion)
        return;
    const mz_motion *m = &s->domain.motion;
    double r = 0; /* a turning domain's farthest point from its axis: at most its diagonal */
    for (int a = 0; a < s->sim.dimensions; a++)
        r += (s->domain.max[a] - s->domain.min[a]) * (s->domain.max[a] - s->domain.min[a]);
    r = m->type == MZ_MOTION_ROTATION ? sqrt(r) : 1;
    double end = s->sim.frames / s->sim.fps, x[3];
    for (size_t k = 0; k <= 1000 + m->table_n; k++) {
        motion_eval(m, k <= 1000 ? end * (double)k / 1000 : m->table_t[k - 1001], x);
        double a = m->type == MZ_MOTION_ROTATION ? (fabs(x[2]) + x[1] * x[1]) * r : fabs(x[2]);
        *speed = fmax(*speed, fabs(x[1]) * r);
        *accel = fmax(*accel, a);
    }
}

size_t scene_pose_count(const mz_scene *s)
{
    return scene_moving_count(s) + s->domain.has_motion;
}

const mz_motion *scene_pose_law(const mz_scene *s, size_t k, size_t *slot)
{
    char path[48];
    for (size_t c = 0; c <= s->n_colliders; c++) {
        const mz_motion *m = slot_law(s, c, path);
        if (m && k-- == 0) {
            *slot = c;
            return m;
        }
    }
    return NULL;
}

void scene_motion_warnings(const mz_scene *s)
{
    double end = s->sim.frames / s->sim.fps;
    char path[48];
    for (size_t c = 0; c <= s->n_colliders; c++) {
        const mz_motion *m = slot_law(s, c, path);
        if (!m || m->table_n < 2 || !(m->table_t[m->table_n - 1] < end))
            continue;
        double at = m->table_t[m->table_n - 1], x[3];
        motion_eval(m, at - 1e-9 * (at - m->table_t[0]), x);
        bool turn = m->type == MZ_MOTION_ROTATION;
        double to = turn ? 180 / acos(-1.0) : 1;
        if (fabs(x[1]) * to > 1e-9)
            mz_warn("%s.table ends at %g s while still moving (%.4g %s); the run goes on to %g s "
                    "with it held there, stopped dead (a collider in one step; a moving domain's "
                    "frame never feels the stop): end the table at rest (a last row repeating "
                    "the value) or the run at %g s",
                    path, at, x[1] * to, turn ? "deg/s" : "m/s", end, at);
    }
}

char *scene_input_path(const mz_scene *s, const char *file)
{
    if (file[0] == '/')
        return xstrdup(file);
    mz_str p = {0};
    str_addf(&p, "%s/%s", s->dir ? s->dir : ".", file);
    return p.s;
}

void scene_motion_free(mz_scene *s)
{
    for (size_t c = 0; c <= s->n_colliders; c++) {
        char path[48];
        mz_motion *m = (mz_motion *)slot_law(s, c, path);
        if (!m)
            continue;
        free(m->table_t);
        free(m->table_v);
        free(m->table_d);
        m->table_t = m->table_v = m->table_d = NULL;
        m->table_n = 0;
    }
}

/* ---- the files a run reads besides the scene: OBJ meshes, then motion tables ---- */

/* The k-th law with a table (slot order), its path into path; NULL past the last. */
static const mz_motion *table_motion(const mz_scene *s, size_t k, char path[48])
{
    for (size_t c = 0; c <= s->n_colliders; c++) {
        const mz_motion *m = slot_law(s, c, path);
        if (m && m->table && k-- == 0)
            return m;
    }
    return NULL;
}

size_t scene_input_count(const mz_scene *s)
{
    size_t n = bodies_count(s);
    char path[48];
    while (table_motion(s, n - bodies_count(s), path))
        n++;
    return n;
}

uint64_t scene_input_digest(const mz_scene *s, size_t k)
{
    char path[48];
    if (k < bodies_count(s))
        return bodies_get(s, k)->obj ? bodies_get(s, k)->obj_digest : 0;
    return table_motion(s, k - bodies_count(s), path)->table_digest;
}

const char *scene_input_name(const mz_scene *s, size_t k, char buf[96])
{
    if (k < bodies_count(s)) {
        char where[48];
        const mz_body *b = bodies_get(s, k);
        snprintf(buf, 96, "%s.obj (%s)", bodies_path(s, k, where), b->obj ? b->obj : "none");
        return buf;
    }
    char path[48];
    const mz_motion *m = table_motion(s, k - bodies_count(s), path);
    snprintf(buf, 96, "%.40s.table (%.40s)", path, m ? m->table : "none");
    return buf;
}
