/* The probes', gauges' and loads' time series (scene probes[], gauges[], colliders[].forces,
 * domain.boundary.forces; solvers/observe.h samples them), H5MD observables that grow by the
 * samples a run takes:
 *
 *   /observables/probes/<name>           attr position [3] (m)
 *     <field>/step [S] int64, time [S] float64, value [S] float32 or [S, 3] (velocity),
 *                                        attr unit; the fields as probes[].fields lists them;
 *                                        the first field's step and time are hard-linked into
 *                                        the others (they are sampled together)
 *   /observables/gauges/<name>           attrs start, end [3] (m)
 *     step [S], time [S], value [S] float32: the level, the distance from start to the
 *                                        surface along the gauge (m)
 *   /observables/colliders/<name>        attr about [3] (m): the point torques are taken about
 *     force/{step, time, value [S, 3]}   the fluid's force on the solid (N)
 *     torque/{step, time, value [S, 3]}  its moment about `about` (N m); step and time are
 *                                        force's, hard-linked
 *   /observables/walls/<x_min|x_max|..>  the same for each wall of the domain
 *   /observables/colliders/<name>        a moving collider's pose, once a frame (or with its
 *     displacement/{step, time, value [S, 3]}   forces): a translation's displacement (m)
 *     angle/{step, time, value [S]}      or a rotation's angle (rad)
 *
 * Samples are appended as the run collects them and the file flushed; a resumed run cuts every
 * series back to the samples of the checkpoint's step and before. */
#include "io/h5_file.h"
#include "solvers/observe.h"

#include <stdio.h>
#include <stdlib.h>

#define PROBES "/observables/probes"
#define GAUGES "/observables/gauges"
#define COLLIDERS "/observables/colliders"
#define WALLS "/observables/walls"
#define DOMAIN "/observables/domain"
#define SAMPLE_CHUNK 1024 /* rows per chunk */

/* Per observer (probes first, then gauges, then loads): its step and time, and a value per
 * field (a gauge's in slot 0, a load's force and torque in 0 and 1), -1 where absent. */
typedef struct h5_series {
    hid_t step, time, value[MZ_PROBE_FIELD_COUNT];
    unsigned fields; /* MZ_PROBE_FIELD_BIT; a gauge: bit 0; a load: bits 0 and 1 */
    size_t at[MZ_PROBE_FIELD_COUNT], comps[MZ_PROBE_FIELD_COUNT]; /* in a sample row */
} h5_series;

struct h5_obs {
    size_t n_probes, n_gauges, n_loads, n_motion;
    h5_series *s;
};

static size_t row_at(const mz_scene *s, size_t i, int f, size_t *comps, const char **unit);

typedef enum { OBS_PROBE, OBS_GAUGE, OBS_LOAD, OBS_MOTION } obs_kind;

static obs_kind kind_of(const mz_scene *s, size_t i)
{
    size_t gauges = s->n_probes + s->n_gauges, loads = gauges + scene_load_count(s);
    return i < s->n_probes ? OBS_PROBE : i < gauges ? OBS_GAUGE : i < loads ? OBS_LOAD
                                                                             : OBS_MOTION;
}

/* The k-th pose law (scene_pose_law) and its group: a collider's, or the domain's. */
static const mz_motion *mover(const mz_scene *s, size_t k, char *group, size_t size)
{
    size_t c;
    const mz_motion *m = scene_pose_law(s, k, &c);
    if (c < s->n_colliders)
        snprintf(group, size, COLLIDERS "/%s", s->colliders[c].name);
    else
        snprintf(group, size, DOMAIN);
    return m;
}

/* Observer i's index among the loads (OBS_LOAD) or the moving colliders (OBS_MOTION). */
static size_t index_in_kind(const mz_scene *s, size_t i)
{
    size_t k = i - s->n_probes - s->n_gauges;
    return k < scene_load_count(s) ? k : k - scene_load_count(s);
}

static size_t obs_count(const mz_scene *s)
{
    return s->n_probes + s->n_gauges + scene_load_count(s) + scene_pose_count(s);
}

void h5_obs_free(struct h5_obs *obs)
{
    if (!obs)
        return;
    for (size_t i = 0; i < obs->n_probes + obs->n_gauges + obs->n_loads + obs->n_motion; i++) {
        h5_close_id(obs->s[i].step);
        h5_close_id(obs->s[i].time);
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++)
            h5_close_id(obs->s[i].value[f]);
    }
    free(obs->s);
    free(obs);
}

static struct h5_obs *obs_new(const mz_scene *s)
{
    struct h5_obs *obs = xcalloc(1, sizeof *obs);
    obs->n_probes = s->n_probes;
    obs->n_gauges = s->n_gauges;
    obs->n_loads = scene_load_count(s);
    obs->n_motion = scene_pose_count(s);
    obs->s = xcalloc(obs_count(s), sizeof *obs->s);
    for (size_t i = 0; i < obs_count(s); i++) {
        h5_series *se = &obs->s[i];
        se->step = se->time = -1;
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++)
            se->value[f] = -1;
        obs_kind kind = kind_of(s, i);
        se->fields = kind == OBS_PROBE ? s->probes[i].fields : kind == OBS_LOAD ? 3u : 1u;
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++) {
            const char *unit;
            if (se->fields & (1u << f))
                se->at[f] = row_at(s, i, f, &se->comps[f], &unit);
        }
    }
    return obs;
}


/* The group of observer i and the element of its field f (the group itself for a gauge). */
static void names_of(const mz_scene *s, size_t i, int f, char *group, char *elem, size_t size)
{
    switch (kind_of(s, i)) {
    case OBS_PROBE:
        snprintf(group, size, PROBES "/%s", s->probes[i].name);
        snprintf(elem, size, "%s/%s", group, mz_probe_field_infos[f].name);
        break;
    case OBS_GAUGE:
        snprintf(group, size, GAUGES "/%s", s->gauges[i - s->n_probes].name);
        snprintf(elem, size, "%s", group);
        break;
    case OBS_LOAD: {
        mz_load_ref l = scene_load_ref(s, index_in_kind(s, i));
        snprintf(group, size, "%s/%s", l.wall ? WALLS : COLLIDERS, l.name);
        snprintf(elem, size, "%s/%s", group, f == 0 ? "force" : "torque");
        break;
    }
    case OBS_MOTION: {
        const mz_motion *m = mover(s, index_in_kind(s, i), group, size);
        snprintf(elem, size, "%s/%s", group,
                 m->type == MZ_MOTION_TRANSLATION ? "displacement" : "angle");
        break;
    }
    }
}

/* Where field f of observer i sits in a sample row (observe.h), its components and unit. */
static size_t row_at(const mz_scene *s, size_t i, int f, size_t *comps, const char **unit)
{
    switch (kind_of(s, i)) {
    case OBS_PROBE:
        *comps = f == MZ_PROBE_VELOCITY ? 3 : 1;
        *unit = mz_probe_field_infos[f].unit;
        return 6 * i + (f == MZ_PROBE_FRACTION ? 0 : f == MZ_PROBE_PRESSURE ? 1
                        : f == MZ_PROBE_DENSITY ? 2 : 3);
    case OBS_GAUGE:
        *comps = 1;
        *unit = "m";
        return 6 * s->n_probes + (i - s->n_probes);
    case OBS_LOAD:
        *comps = 3;
        *unit = f == 0 ? "N" : "N m";
        return 6 * s->n_probes + s->n_gauges + 6 * index_in_kind(s, i) + 3 * (size_t)f;
    case OBS_MOTION:
    default: {
        char group[256];
        bool turn = mover(s, index_in_kind(s, i), group, sizeof group)->type == MZ_MOTION_ROTATION;
        *comps = turn ? 1 : 3;
        *unit = turn ? "rad" : "m";
        return 6 * s->n_probes + s->n_gauges + 6 * scene_load_count(s) +
               3 * index_in_kind(s, i);
    }
    }
}

static int first_field(unsigned fields)
{
    for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++)
        if (fields & (1u << f))
            return f;
    return 0;
}

static int link_to(const mz_h5_out *o, const char *src, const char *dst)
{
    if (H5Lcreate_hard(o->file, src, H5L_SAME_LOC, dst, H5P_DEFAULT, H5P_DEFAULT) < 0) {
        h5_fail(o->path, "linking %s", dst);
        return -1;
    }
    return 0;
}

/* On a pose's element: the unit direction of a translation, or a rotation's unit axis and the
 * point it passes through (what turns the domain's frame back into the world's). */
static int motion_attrs(const mz_h5_out *o, const mz_scene *s, size_t k, const char *elem)
{
    char group[256];
    const mz_motion *m = mover(s, k, group, sizeof group);
    bool turn = m->type == MZ_MOTION_ROTATION;
    return h5_put_attr(o, elem, turn ? "axis" : "direction", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                       3, m->unit) ||
           (turn && h5_put_attr(o, elem, "center", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3,
                                m->center));
}

static int create_one(mz_h5_out *o, const mz_scene *s, size_t i)
{
    h5_series *se = &o->obs->s[i];
    char group[256], elem[320], name[400], first[400];
    obs_kind kind = kind_of(s, i);
    bool gauge = kind == OBS_GAUGE;
    names_of(s, i, 0, group, elem, sizeof group);
    const char *const g[] = {group, NULL};
    /* A collider measured and moving has one group for both. */
    if (H5Lexists(o->file, group, H5P_DEFAULT) <= 0 && h5_make_groups(o, g))
        return -1;
    if (gauge) {
        const mz_gauge *ga = &s->gauges[i - s->n_probes];
        if (h5_put_attr(o, group, "start", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, ga->start) ||
            h5_put_attr(o, group, "end", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, ga->end))
            return -1;
    } else if (kind == OBS_MOTION) {
        /* nothing more on the group */
    } else if (kind == OBS_LOAD) {
        mz_load_ref l = scene_load_ref(s, index_in_kind(s, i));
        if (h5_put_attr(o, group, "about", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, l.load->about))
            return -1;
    } else if (h5_put_attr(o, group, "position", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3,
                           s->probes[i].position)) {
        return -1;
    }
    int f0 = first_field(se->fields);
    for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++) {
        if (!(se->fields & (1u << f)))
            continue;
        names_of(s, i, f, group, elem, sizeof group);
        const char *const e[] = {elem, NULL};
        if (!gauge && h5_make_groups(o, e))
            return -1;
        size_t comps;
        const char *unit;
        row_at(s, i, f, &comps, &unit);
        snprintf(name, sizeof name, "%s/value", elem);
        hid_t v = h5_series_create(o, name, H5T_IEEE_F32LE, comps == 3 ? 2 : 1, SAMPLE_CHUNK, 0,
                                   comps == 3 ? 3 : 0, 0);
        se->value[f] = v;
        if (v < 0 || h5_put_str_attr(o, name, "unit", unit) ||
            (kind == OBS_MOTION && motion_attrs(o, s, index_in_kind(s, i), elem)))
            return -1;
        if (f == f0) {
            snprintf(name, sizeof name, "%s/step", elem);
            se->step = h5_series_create(o, name, H5T_STD_I64LE, 1, SAMPLE_CHUNK, 0, 0, 0);
            snprintf(name, sizeof name, "%s/time", elem);
            se->time = se->step < 0 ? -1
                                    : h5_series_create(o, name, H5T_IEEE_F64LE, 1, SAMPLE_CHUNK,
                                                       0, 0, 0);
            if (se->time < 0 || h5_put_str_attr(o, name, "unit", "s"))
                return -1;
            snprintf(first, sizeof first, "%s", elem);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            char src[420], dst[420];
            snprintf(src, sizeof src, "%s/%s", first, k ? "time" : "step");
            snprintf(dst, sizeof dst, "%s/%s", elem, k ? "time" : "step");
            if (link_to(o, src, dst))
                return -1;
        }
    }
    return 0;
}

int h5_out_add_observables(mz_h5_out *o, const mz_scene *s)
{
    if (obs_count(s) == 0)
        return 0;
    o->obs = obs_new(s);
    bool colliders = false;
    for (size_t c = 0; c < s->n_colliders; c++)
        colliders |= s->colliders[c].has_forces || s->colliders[c].has_motion;
    const char *const top[] = {"/observables", NULL}, *const probes[] = {PROBES, NULL},
                      *const gauges[] = {GAUGES, NULL}, *const cols[] = {COLLIDERS, NULL},
                      *const walls[] = {WALLS, NULL};
    if ((H5Lexists(o->file, "/observables", H5P_DEFAULT) <= 0 && h5_make_groups(o, top)) ||
        (s->n_probes && h5_make_groups(o, probes)) ||
        (s->n_gauges && h5_make_groups(o, gauges)) || (colliders && h5_make_groups(o, cols)) ||
        (s->domain.boundary.has_forces && h5_make_groups(o, walls)))
        return -1;
    for (size_t i = 0; i < obs_count(s); i++)
        if (create_one(o, s, i))
            return -1;
    if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing");
        return -1;
    }
    return 0;
}

/* Open dataset NAME and cut it to `rows`. The dataset, or -1 after reporting. */
static hid_t open_cut(const mz_h5_out *o, const char *name, hsize_t rows)
{
    hid_t d = H5Lexists(o->file, name, H5P_DEFAULT) > 0 ? H5Dopen2(o->file, name, H5P_DEFAULT)
                                                        : -1;
    if (d < 0) {
        mz_error("resuming into %s: it has no %s (written by another scene's run?)", o->path,
                 name);
        return -1;
    }
    hid_t sp = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    int rank = sp < 0 ? -1 : H5Sget_simple_extent_dims(sp, dims, NULL);
    h5_close_id(sp);
    dims[0] = rows;
    if (rank < 1 || H5Dset_extent(d, dims) < 0) {
        h5_fail(o->path, "cutting %s back", name);
        h5_close_id(d);
        return -1;
    }
    return d;
}

/* The samples of observer i at steps up to `step` (its steps ascend). -1 after reporting. */
static long rows_up_to(const mz_h5_out *o, const char *name, long step)
{
    hsize_t dims[1] = {0};
    hid_t d = H5Lexists(o->file, name, H5P_DEFAULT) > 0 ? H5Dopen2(o->file, name, H5P_DEFAULT)
                                                        : -1;
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    long rows = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
        H5Sget_simple_extent_dims(sp, dims, NULL) == 1) {
        int64_t *v = xmalloc((dims[0] ? dims[0] : 1) * sizeof *v);
        if (H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0) {
            rows = 0;
            while ((hsize_t)rows < dims[0] && v[rows] <= step)
                rows++;
        }
        free(v);
    }
    if (rows < 0)
        mz_error("resuming into %s: cannot read %s", o->path, name);
    h5_close_id(sp);
    h5_close_id(d);
    return rows;
}

int h5_out_reopen_observables(mz_h5_out *o, const mz_scene *s, long step)
{
    if (obs_count(s) == 0)
        return 0;
    o->obs = obs_new(s);
    char group[256], elem[320], name[400];
    for (size_t i = 0; i < obs_count(s); i++) {
        h5_series *se = &o->obs->s[i];
        int f0 = first_field(se->fields);
        names_of(s, i, f0, group, elem, sizeof group);
        snprintf(name, sizeof name, "%s/step", elem);
        long rows = rows_up_to(o, name, step);
        if (rows < 0 || (se->step = open_cut(o, name, (hsize_t)rows)) < 0)
            return -1;
        snprintf(name, sizeof name, "%s/time", elem);
        if ((se->time = open_cut(o, name, (hsize_t)rows)) < 0)
            return -1;
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++) {
            if (!(se->fields & (1u << f)))
                continue;
            names_of(s, i, f, group, elem, sizeof group);
            snprintf(name, sizeof name, "%s/value", elem);
            if ((se->value[f] = open_cut(o, name, (hsize_t)rows)) < 0)
                return -1;
        }
    }
    return 0;
}

/* Append c rows (cols values each, 0: one) from v to series d. When the file is collective
 * every rank makes the same calls (the series grows by c on all, HDF5 requires it) and rank 0
 * writes the rows, the others selecting none in the same collective write. */
static int append(const mz_h5_out *o, hid_t d, hid_t mtype, size_t c, size_t cols,
                  const void *v)
{
    hsize_t dims[2], start[2] = {0, 0}, cnt[2] = {c, cols};
    hid_t fs = H5Dget_space(d), ms = -1;
    int rank = fs < 0 ? -1 : H5Sget_simple_extent_dims(fs, dims, NULL);
    h5_close_id(fs);
    fs = -1;
    start[0] = dims[0];
    dims[0] += c;
    bool none = !h5_rank0(o);
    int ok = rank >= 1 && H5Dset_extent(d, dims) >= 0 && (fs = H5Dget_space(d)) >= 0 &&
             (ms = H5Screate_simple(rank, cnt, NULL)) >= 0 &&
             (none ? H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0
                   : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL) >= 0) &&
             H5Dwrite(d, mtype, ms, fs, o->dxpl, v) >= 0;
    h5_close_id(ms);
    h5_close_id(fs);
    if (!ok)
        h5_fail(o->path, "appending samples");
    return ok ? 0 : -1;
}

/* Observer i's samples among t's first `count`: their steps, times and each field's values. */
static int write_observer(mz_h5_out *o, const mz_samples *t, size_t count, size_t i,
                          size_t row, void *buf)
{
    const struct h5_obs *obs = o->obs;
    const h5_series *se = &obs->s[i];
    size_t m = obs->n_probes + obs->n_gauges + obs->n_loads + obs->n_motion, c = 0;
    int64_t *step = buf;
    double *time = (double *)(step + count);
    float *val = (float *)(time + count);
    for (size_t k = 0; k < count; k++)
        if (t->due[k * m + i]) {
            step[c] = t->step[k];
            time[c++] = t->time[k];
        }
    if (c == 0)
        return 0;
    if (append(o, se->step, H5T_NATIVE_INT64, c, 0, step) ||
        append(o, se->time, H5T_NATIVE_DOUBLE, c, 0, time))
        return -1;
    for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++) {
        if (!(se->fields & (1u << f)))
            continue;
        size_t at = se->at[f], comps = se->comps[f];
        size_t j = 0;
        for (size_t k = 0; k < count; k++)
            if (t->due[k * m + i])
                for (size_t q = 0; q < comps; q++)
                    val[j++] = t->rows[k * row + at + q];
        if (append(o, se->value[f], H5T_NATIVE_FLOAT, c, comps == 3 ? 3 : 0, val))
            return -1;
    }
    return 0;
}

int h5_out_write_samples(mz_h5_out *o, const mz_samples *t, size_t count, size_t row)
{
    if (!o->obs || count == 0)
        return 0;
    size_t m = o->obs->n_probes + o->obs->n_gauges + o->obs->n_loads + o->obs->n_motion;
    if (h5_file_reserve(o, (unsigned long long)count * m * 40, "the probes' samples"))
        return -1;
    void *buf = xmalloc(count * (8 + 8 + 12));
    int rc = 0;
    /* Collective: every rank goes through every series even after a failure of its own. */
    for (size_t i = 0; (rc == 0 || o->par) && i < m; i++)
        if (write_observer(o, t, count, i, row, buf) != 0)
            rc = -1;
    free(buf);
    if ((rc == 0 || o->par) && H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) {
        h5_fail(o->path, "flushing");
        rc = -1;
    }
    return h5_agree(o, rc);
}

int h5_obs_open(mz_h5_out *o, const mz_scene *s)
{
    if (obs_count(s) == 0)
        return 0;
    o->obs = obs_new(s);
    char group[256], elem[320], name[400];
    for (size_t i = 0; i < obs_count(s); i++) {
        h5_series *se = &o->obs->s[i];
        names_of(s, i, first_field(se->fields), group, elem, sizeof group);
        snprintf(name, sizeof name, "%s/step", elem);
        se->step = H5Dopen2(o->file, name, H5P_DEFAULT);
        snprintf(name, sizeof name, "%s/time", elem);
        se->time = se->step < 0 ? -1 : H5Dopen2(o->file, name, H5P_DEFAULT);
        if (se->time < 0) {
            h5_fail(o->path, "opening %s", name);
            return -1;
        }
        for (int f = 0; f < MZ_PROBE_FIELD_COUNT; f++) {
            if (!(se->fields & (1u << f)))
                continue;
            names_of(s, i, f, group, elem, sizeof group);
            snprintf(name, sizeof name, "%s/value", elem);
            if ((se->value[f] = H5Dopen2(o->file, name, H5P_DEFAULT)) < 0) {
                h5_fail(o->path, "opening %s", name);
                return -1;
            }
        }
    }
    return 0;
}

bool h5_obs_early(const struct h5_obs *obs)
{
    size_t m = obs ? obs->n_probes + obs->n_gauges + obs->n_loads + obs->n_motion : 0;
    for (size_t i = 0; i < m; i++) {
        const h5_series *se = &obs->s[i];
        for (int f = -2; f < MZ_PROBE_FIELD_COUNT; f++) {
            hid_t d = f == -2 ? se->step : f == -1 ? se->time : se->value[f];
            if (f >= 0 && !(se->fields & (1u << f)))
                continue;
            if (!h5_allocated_early(d))
                return false;
        }
    }
    return true;
}
