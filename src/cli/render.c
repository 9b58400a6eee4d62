/* `mizu render OUT.h5 [--frame K | --every N] [-o FILE.png | DIR] [--field F] [--view V]
 * [--size WxH] [--range LO:HI]`: reads frames through io/h5_read.h, draws them with render/,
 * one PNG per frame. */
#include "cli/render.h"
#include "io/h5_read.h"
#include "render/render.h"
#include "scene/fields.h"
#include "util/err.h"

#include <hdf5.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MOVING_SERIES "/particles/moving_boundary/position/value" /* when colliders move */
/* An earlier mizu's files kept every wall particle there, a row each frame, when colliders moved */
#define OLD_MOVING_SERIES "/particles/boundary/position/value"

typedef struct render_args {
    const char *in, *out, *field;
    long frame; /* record to draw; -1: the last */
    long every; /* 0: one frame */
    bool quiet;
    mz_render_opts ro;
} render_args;

/* A moving collider's poses the file keeps (/observables/colliders/<name>/displacement, 3
 * values a sample, or angle, 1). */
typedef struct pose_series {
    char *name;
    bool turn;
    size_t n;
    double *t;
    float *v;
} pose_series;

/* What the file holds for drawing. */
typedef struct render_file {
    hid_t h5;
    size_t n;            /* particles */
    hsize_t records;     /* frames written */
    char *scene;         /* effective scene JSON */
    uint32_t *phase, *body, *tri;
    size_t n_tri;
    float *boundary;     /* the wall particles that stay put, then the moving ones' frame */
    size_t n_boundary;   /* those of /particles/boundary/position */
    size_t n_moving;     /* rows of moving_series, read with each frame after the static ones */
    const char *moving_series;
    const mz_field_info *field; /* NULL: colour by phase */
    const char *label;
    pose_series *ps; /* the moving colliders' */
    size_t n_ps;
    mz_pose *poses;  /* theirs in the picture being drawn */
} render_file;

static const char usage[] =
    "usage: mizu render OUT.h5 [--frame K | --every N] [-o FILE.png | -o DIR] [--field F]\n"
    "                          [--view auto|front|side|top|iso] [--size WxH] [--range LO:HI]\n"
    "                          [--quiet]\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mizu: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return MZ_EXIT_USAGE;
}

static long whole(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *end || end == s || v < lo || v > hi ? -1 : v;
}

static int parse_size(const char *s, mz_render_opts *ro)
{
    char *end;
    long w = strtol(s, &end, 10), h;
    if (end == s || (*end != 'x' && *end != 'X'))
        return -1;
    const char *hs = end + 1;
    h = strtol(hs, &end, 10);
    if (*end || end == hs || w < 1 || h < 1 || w > 100000 || h > 100000)
        return -1;
    ro->width = (int)w;
    ro->height = (int)h;
    return 0;
}

static int parse_range(const char *s, mz_render_opts *ro)
{
    char *end;
    ro->lo = strtod(s, &end);
    if (end == s || *end != ':')
        return -1;
    const char *hs = end + 1;
    ro->hi = strtod(hs, &end);
    if (*end || end == hs || !isfinite(ro->lo) || !isfinite(ro->hi) || !(ro->hi > ro->lo))
        return -1;
    ro->fixed_range = true;
    return 0;
}

static int parse_args(int argc, char **argv, render_args *a)
{
    enum { OPT_FRAME = 1000, OPT_EVERY, OPT_FIELD, OPT_VIEW, OPT_SIZE, OPT_RANGE };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},     {"frame", required_argument, 0, OPT_FRAME},
        {"every", required_argument, 0, OPT_EVERY}, {"field", required_argument, 0, OPT_FIELD},
        {"view", required_argument, 0, OPT_VIEW},   {"size", required_argument, 0, OPT_SIZE},
        {"range", required_argument, 0, OPT_RANGE}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    *a = (render_args){.frame = -1, .ro = {.width = 1280, .height = 720}};
    bool frame_given = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'q': a->quiet = true; break;
        case 'h': fputs(usage, stdout); return MZ_EXIT_OK;
        case OPT_FIELD: a->field = optarg; break;
        case OPT_FRAME:
            if ((a->frame = whole(optarg, 0, 1000000000L)) < 0)
                return usage_error("--frame wants a frame record number from 0 (got '%s')",
                                   optarg);
            frame_given = true;
            break;
        case OPT_EVERY:
            if ((a->every = whole(optarg, 1, 1000000000L)) < 0)
                return usage_error("--every wants a whole number >= 1 (got '%s')", optarg);
            break;
        case OPT_VIEW: {
            int k = 0;
            while (mz_view_names[k] && strcmp(mz_view_names[k], optarg))
                k++;
            if (!mz_view_names[k])
                return usage_error("--view wants auto, front, side, top or iso (got '%s')",
                                   optarg);
            a->ro.view = (mz_view_kind)k;
            break;
        }
        case OPT_SIZE:
            if (parse_size(optarg, &a->ro) < 0)
                return usage_error("--size wants WIDTHxHEIGHT in pixels, e.g. 1280x720 (got '%s')",
                                   optarg);
            break;
        case OPT_RANGE:
            if (parse_range(optarg, &a->ro) < 0)
                return usage_error("--range wants LO:HI with LO < HI (got '%s')", optarg);
            break;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (frame_given && a->every)
        return usage_error("%s", "--frame draws one frame and --every many: give one");
    size_t len = a->out ? strlen(a->out) : 0;
    if (a->every && len > 4 && !strcmp(a->out + len - 4, ".png"))
        return usage_error("--every writes one picture per frame into a folder: -o %s names a "
                           "PNG", a->out);
    if (argc - optind != 1)
        return usage_error("%s", "render takes one output file");
    a->in = argv[optind];
    return -1;
}

static void file_close(render_file *f)
{
    if (f->h5 >= 0)
        H5Fclose(f->h5);
    free(f->scene);
    free(f->phase);
    free(f->body);
    free(f->tri);
    free(f->boundary);
    for (size_t k = 0; k < f->n_ps; k++) {
        free(f->ps[k].name);
        free(f->ps[k].t);
        free(f->ps[k].v);
    }
    free(f->ps);
    free(f->poses);
}

static herr_t add_name(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g, (void)info;
    render_file *f = data;
    f->ps = xrealloc(f->ps, (f->n_ps + 1) * sizeof *f->ps);
    f->ps[f->n_ps++] = (pose_series){.name = xstrdup(name)};
    return 0;
}

/* A whole dataset of n × comps into out (native type mtype). */
static bool read_whole(hid_t file, const char *name, hid_t mtype, void *out)
{
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    bool ok = d >= 0 && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
    if (d >= 0)
        H5Dclose(d);
    return ok;
}

/* The moving colliders' poses (colliders[].motion), so that pictures draw them where they
 * were; a series the file lacks or cannot give leaves that collider at rest. */
static void read_poses(render_file *f)
{
    if (!h5_exists(f->h5, "/observables/colliders"))
        return;
    hid_t g = H5Gopen2(f->h5, "/observables/colliders", H5P_DEFAULT);
    if (g < 0)
        return;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_name, f);
    H5Gclose(g);
    size_t kept = 0;
    for (size_t k = 0; k < f->n_ps; k++) {
        pose_series *p = &f->ps[k];
        char tname[400], vname[400];
        hsize_t dims[3] = {0, 0, 0};
        for (int turn = 0; turn < 2 && !p->n; turn++) {
            snprintf(tname, sizeof tname, "/observables/colliders/%s/%s/time", p->name,
                     turn ? "angle" : "displacement");
            snprintf(vname, sizeof vname, "/observables/colliders/%s/%s/value", p->name,
                     turn ? "angle" : "displacement");
            if (!h5_exists(f->h5, vname) || h5_dataset_dims(f->h5, tname, dims) != 1 ||
                dims[0] == 0)
                continue;
            p->turn = turn;
            p->t = xmalloc(dims[0] * sizeof *p->t);
            p->v = xmalloc(dims[0] * (turn ? 1 : 3) * sizeof *p->v);
            if (read_whole(f->h5, tname, H5T_NATIVE_DOUBLE, p->t) &&
                read_whole(f->h5, vname, H5T_NATIVE_FLOAT, p->v))
                p->n = (size_t)dims[0];
        }
        if (p->n)
            f->ps[kept++] = *p;
        else {
            free(p->name);
            free(p->t);
            free(p->v);
        }
    }
    f->n_ps = kept;
    f->poses = xcalloc(kept + 1, sizeof *f->poses);
}

/* Each moving collider's pose at time t: its sample nearest to t (a frame's time is a sampled
 * step's). */
static void poses_at(const render_file *f, double t)
{
    for (size_t k = 0; k < f->n_ps; k++) {
        const pose_series *p = &f->ps[k];
        size_t best = 0;
        for (size_t q = 1; q < p->n; q++)
            if (fabs(p->t[q] - t) < fabs(p->t[best] - t))
                best = q;
        mz_pose *o = &f->poses[k];
        *o = (mz_pose){.name = p->name};
        if (p->turn)
            o->angle = p->v[best];
        else
            for (int a = 0; a < 3; a++)
                o->displacement[a] = p->v[3 * best + a];
    }
}

/* The field to colour by: asked for, else velocity, pressure, density, else the phases. */
static int choose_field(render_file *f, const char *asked, const char *path)
{
    static const char *const aliases[][2] = {{"speed", "velocity"}, {"height", "position"}};
    for (size_t k = 0; asked && k < 2; k++)
        if (!strcmp(asked, aliases[k][0]))
            asked = aliases[k][1];
    if (asked && !strcmp(asked, "phase"))
        return 0;
    static const mz_field f_order[] = {MZ_FIELD_VELOCITY, MZ_FIELD_PRESSURE, MZ_FIELD_DENSITY};
    for (int k = 0; k < MZ_FIELD_COUNT; k++) {
        const mz_field_info *fi = &mz_field_infos[k];
        char name[96];
        snprintf(name, sizeof name, "/particles/all/%s/value", fi->name);
        bool want = asked ? !strcmp(asked, fi->name) : false;
        if (want) {
            if (!h5_exists(f->h5, name)) {
                mz_error("%s has no %s field (written fields: see mizu info %s)", path, fi->name,
                         path);
                return -2;
            }
            f->field = fi;
        }
    }
    if (asked && !f->field) {
        mz_error("--field: no field '%s'; one of position (height), velocity (speed), density, "
                 "pressure, phase", asked);
        return -2;
    }
    for (size_t k = 0; !asked && k < sizeof f_order / sizeof f_order[0]; k++) {
        char name[96];
        snprintf(name, sizeof name, "/particles/all/%s/value", mz_field_infos[f_order[k]].name);
        if (h5_exists(f->h5, name)) {
            f->field = &mz_field_infos[f_order[k]];
            break;
        }
    }
    if (f->field)
        f->label = f->field == &mz_field_infos[MZ_FIELD_VELOCITY] ? "speed"
                   : f->field == &mz_field_infos[MZ_FIELD_POSITION] ? "height"
                                                                     : f->field->name;
    return 0;
}

/* SPH's wall particles: those written once, and room after them for the moving colliders'
 * (read with the frame, boundary_record); left out (not an error) when absent or unreadable. */
static void read_boundary(render_file *f)
{
    const char *name = "/particles/boundary/position";
    hsize_t dims[3], mdims[3];
    bool old = false; /* the old layout: no table (name is the series' group there) */
    if (h5_dataset_dims(f->h5, MOVING_SERIES, mdims) == 3)
        f->moving_series = MOVING_SERIES;
    else if ((old = h5_dataset_dims(f->h5, OLD_MOVING_SERIES, mdims) == 3))
        f->moving_series = OLD_MOVING_SERIES;
    f->n_moving = f->moving_series && mdims[2] == 3 ? (size_t)mdims[1] : 0;
    bool table = !old && h5_dataset_dims(f->h5, name, dims) == 2;
    hid_t d = table ? H5Dopen2(f->h5, name, H5P_DEFAULT) : -1;
    size_t ns = h5_dims(d, dims) == 2 && dims[1] == 3 ? (size_t)dims[0] : 0;
    if (ns + f->n_moving > 0)
        f->boundary = xmalloc(3 * (ns + f->n_moving) * sizeof *f->boundary);
    if (ns > 0 && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f->boundary) >= 0)
        f->n_boundary = ns;
    if (d >= 0)
        H5Dclose(d);
}

/* Record k's moving wall particles after the static ones; how many to draw (the static ones
 * alone when the frame's cannot be read). */
static size_t boundary_record(const render_file *f, hsize_t k)
{
    if (f->n_moving > 0 && h5_read_record(f->h5, f->moving_series, k, 3, f->n_moving,
                                          f->boundary + 3 * f->n_boundary) >= 0)
        return f->n_boundary + f->n_moving;
    return f->n_boundary;
}

static int file_open(render_file *f, const render_args *a)
{
    memset(f, 0, sizeof *f);
    f->h5 = -1;
    H5E_BEGIN_TRY { f->h5 = h5_open_unlocked(a->in); }
    H5E_END_TRY;
    if (f->h5 < 0) {
        struct stat sb;
        mz_error("cannot read %s: %s", a->in,
                 stat(a->in, &sb) != 0 ? strerror(errno) : "not an HDF5 file");
        return -1;
    }
    hsize_t dims[3];
    int rank = h5_dataset_dims(f->h5, "/particles/all/position/value", dims);
    long long written = 0;
    if (rank != 3 || dims[2] != 3) {
        mz_error("%s has no particle positions to draw (/particles/all/position)", a->in);
        return -1;
    }
    f->n = (size_t)dims[1];
    f->records = dims[0];
    /* A run still writing may have grown the series ahead of the frames it committed. */
    if (H5Aexists_by_name(f->h5, "/parameters/run", "frames_written", H5P_DEFAULT) > 0) {
        hid_t at = H5Aopen_by_name(f->h5, "/parameters/run", "frames_written", H5P_DEFAULT,
                                   H5P_DEFAULT);
        if (at >= 0 && H5Aread(at, H5T_NATIVE_LLONG, &written) >= 0 && written >= 0 &&
            (hsize_t)written < f->records)
            f->records = (hsize_t)written;
        if (at >= 0)
            H5Aclose(at);
    }
    if (f->records == 0) {
        mz_error("%s has no frames yet", a->in);
        return -1;
    }
    f->scene = h5_read_str(f->h5, "/parameters/scene/effective");
    if (!f->scene) {
        mz_error("%s has no scene (/parameters/scene/effective): not a mizu output", a->in);
        return -1;
    }
    f->phase = xmalloc((f->n + 1) * sizeof *f->phase);
    f->body = xmalloc((f->n + 1) * sizeof *f->body);
    if (h5_read_uints(f->h5, "/particles/all/phase", f->n, f->phase) < 0) {
        free(f->phase);
        f->phase = NULL;
    }
    if (h5_read_uints(f->h5, "/particles/all/body", f->n, f->body) < 0) {
        free(f->body);
        f->body = NULL;
    }
    if (h5_dataset_dims(f->h5, "/connectivity/triangles", dims) == 2 && dims[1] == 3) {
        f->n_tri = (size_t)dims[0];
        f->tri = xmalloc((3 * f->n_tri + 1) * sizeof *f->tri);
        if (h5_read_uints(f->h5, "/connectivity/triangles", 3 * f->n_tri, f->tri) < 0)
            f->n_tri = 0;
        for (size_t k = 0; k < 3 * f->n_tri; k++)
            if (f->tri[k] >= f->n)
                f->n_tri = 0; /* not this file's particles: draw them as points */
    }
    read_boundary(f);
    read_poses(f);
    return choose_field(f, a->field, a->in);
}

static int exit_code(int rc)
{
    return rc == -2 ? MZ_EXIT_USAGE : rc < 0 ? MZ_EXIT_RUNTIME : MZ_EXIT_OK;
}

/* Record k's positions and, when a field colours them, its value per particle. */
static int read_record(const render_file *f, hsize_t k, float *pos, float *value, float *tmp)
{
    if (h5_read_record(f->h5, "/particles/all/position/value", k, 3, f->n, pos) < 0)
        return -1;
    if (!f->field)
        return 0;
    if (f->field == &mz_field_infos[MZ_FIELD_POSITION]) {
        for (size_t i = 0; i < f->n; i++)
            value[i] = pos[3 * i + 1];
        return 0;
    }
    char name[96];
    snprintf(name, sizeof name, "/particles/all/%s/value", f->field->name);
    int comps = f->field->components;
    if (h5_read_record(f->h5, name, k, comps, f->n, comps == 1 ? value : tmp) < 0)
        return -1;
    for (size_t i = 0; comps == 3 && i < f->n; i++)
        value[i] = sqrtf(tmp[3 * i] * tmp[3 * i] + tmp[3 * i + 1] * tmp[3 * i + 1] +
                         tmp[3 * i + 2] * tmp[3 * i + 2]);
    return 0;
}

static double record_time(const render_file *f, hsize_t k)
{
    double t = NAN;
    h5_read_element(f->h5, "/particles/all/position/time", k, &t);
    return t;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* PATH without a trailing ".h5" (malloc'd). */
static char *stem(const char *path)
{
    char *s = xstrdup(path);
    size_t len = strlen(s);
    if (len > 3 && !strcmp(s + len - 3, ".h5"))
        s[len - 3] = '\0';
    return s;
}

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Where the pictures go: for one frame a file (-o FILE, -o DIR/ and the input's stem, or
 * IN.png beside the input); for --every a folder, made if missing. NULL on error. */
static char *target(const render_args *a)
{
    char *st = stem(a->in), *out;
    mz_str b = {0};
    if (!a->every) {
        if (a->out && is_dir(a->out))
            str_addf(&b, "%s/%s.png", a->out, base_name(st));
        else
            str_addf(&b, "%s%s", a->out ? a->out : st, a->out ? "" : ".png");
        free(st);
        return b.s;
    }
    if (a->out)
        str_addf(&b, "%s", a->out);
    else
        str_addf(&b, "%s_frames", st);
    free(st);
    out = b.s;
    if (!is_dir(out) && mkdir(out, 0777) != 0) {
        mz_error("cannot make the folder %s for the frames: %s", out, strerror(errno));
        free(out);
        return NULL;
    }
    return out;
}

/* With --every and no --range, one colour scale for all frames: the union of each frame's. */
static int common_range(const render_file *f, const render_args *a, mz_render_opts *ro,
                        float *pos, float *value, float *tmp)
{
    if (!a->every || ro->fixed_range || !f->field)
        return 0;
    double lo = INFINITY, hi = -INFINITY;
    for (hsize_t k = 0; k < f->records; k += (hsize_t)a->every) {
        double l, h;
        if (read_record(f, k, pos, value, tmp) < 0)
            return -1;
        if (render_range(value, f->n, &l, &h))
            lo = fmin(lo, l), hi = fmax(hi, h);
    }
    if (hi > lo) {
        ro->lo = lo, ro->hi = hi;
        ro->fixed_range = true;
    }
    return 0;
}

static int draw(const render_file *f, const render_args *a, const mz_render_opts *ro, hsize_t k,
                const char *path, float *pos, float *value, float *tmp)
{
    if (read_record(f, k, pos, value, tmp) < 0) {
        mz_error("cannot read frame %llu of %s", (unsigned long long)k, a->in);
        return -1;
    }
    char caption[512];
    double t = record_time(f, k);
    snprintf(caption, sizeof caption, "%s   t = %.4g s   frame %llu of %llu   %zu particles",
             base_name(a->in), t, (unsigned long long)k, (unsigned long long)(f->records - 1),
             f->n);
    poses_at(f, t);
    mz_picture pic = {.n = f->n, .pos = pos, .value = f->field ? value : NULL, .phase = f->phase,
                      .body = f->body, .tri = f->tri, .n_tri = f->n_tri,
                      .boundary = f->boundary, .n_boundary = boundary_record(f, k),
                      .scene_json = f->scene,
                      .field_label = f->label, .field_unit = f->field ? f->field->unit : NULL,
                      .caption = caption, .poses = f->poses, .n_poses = f->n_ps};
    mz_image img;
    int rc = render_picture(&pic, ro, &img);
    if (rc < 0)
        return rc;
    rc = render_write_png(path, &img, caption);
    image_free(&img);
    return rc;
}

int render_command(int argc, char **argv)
{
    render_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    render_file f;
    if ((rc = file_open(&f, &a)) < 0) {
        file_close(&f);
        return exit_code(rc);
    }
    if (a.frame >= (long)f.records) {
        mz_error("%s has frames 0 to %llu: no frame %ld", a.in,
                 (unsigned long long)(f.records - 1), a.frame);
        file_close(&f);
        return MZ_EXIT_USAGE;
    }
    char *out = target(&a);
    float *pos = xmalloc((3 * f.n + 1) * sizeof *pos), *value = xmalloc((f.n + 1) * sizeof *value),
          *tmp = xmalloc((3 * f.n + 1) * sizeof *tmp);
    mz_render_opts ro = a.ro;
    rc = out && common_range(&f, &a, &ro, pos, value, tmp) == 0 ? MZ_EXIT_OK : MZ_EXIT_RUNTIME;
    if (rc == MZ_EXIT_OK && !a.every) {
        hsize_t k = a.frame < 0 ? f.records - 1 : (hsize_t)a.frame;
        rc = exit_code(draw(&f, &a, &ro, k, out, pos, value, tmp));
        if (rc == MZ_EXIT_OK && !a.quiet)
            printf("mizu: frame %llu of %s drawn to %s\n", (unsigned long long)k, a.in, out);
    }
    size_t drawn = 0;
    for (hsize_t k = 0; rc == MZ_EXIT_OK && a.every && k < f.records; k += (hsize_t)a.every) {
        mz_str path = {0};
        str_addf(&path, "%s/frame_%06llu.png", out, (unsigned long long)k);
        rc = exit_code(draw(&f, &a, &ro, k, path.s, pos, value, tmp));
        drawn += rc == MZ_EXIT_OK;
        str_free(&path);
    }
    if (a.every && !a.quiet && drawn)
        printf("mizu: %zu frames of %s drawn to %s/frame_NNNNNN.png (NNNNNN: the frame)\n", drawn,
               a.in, out);
    free(pos), free(value), free(tmp), free(out);
    file_close(&f);
    return rc;
}
