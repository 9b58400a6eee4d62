/* The XDMF sidecar described in xdmf.h. */
#include "io/xdmf.h"
#include "scene/fields.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mz_xdmf {
    char *path;
    char *h5_ref;       /* the .h5 file's basename, XML-escaped, as the sidecar names it */
    size_t n, n_triangles, n_boundary;
    size_t n_moving; /* each frame's moving boundary is its view /xdmf/moving_boundary/<frame> */
    unsigned fields;
    int fd;
    off_t tail;         /* offset of the closing tags: the next frame goes there */
};

static const char xdmf_head[] =
    "<?xml version=\"1.0\" ?>\n"
    "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
    "<Xdmf Version=\"2.0\">\n"
    " <Domain>\n"
    "  <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
static const char xdmf_tail[] = "  </Grid>\n </Domain>\n</Xdmf>\n";

static char *xml_escape(const char *s)
{
    mz_str b = {0};
    str_addf(&b, "%s", "");
    for (; *s; s++) {
        switch (*s) {
        case '&': str_addf(&b, "&amp;"); break;
        case '<': str_addf(&b, "&lt;"); break;
        case '>': str_addf(&b, "&gt;"); break;
        case '"': str_addf(&b, "&quot;"); break;
        default: str_addf(&b, "%c", *s);
        }
    }
    return b.s;
}

/* Frame f of a field as a plain HDF DataItem: the per-frame view /xdmf/<field>/<f> that the
 * writer makes (h5_views.c), which every XDMF reader loads (a HyperSlab of the frame series is
 * read by ParaView's legacy reader only). */
static void frame_item(mz_str *b, const mz_xdmf *x, int ind, long f, const char *field, int comp)
{
    char shape[48];
    snprintf(shape, sizeof shape, comp == 3 ? "%zu 3" : "%zu", x->n);
    str_addf(b,
             "%*s<DataItem Dimensions=\"%s\" NumberType=\"Float\" Precision=\"4\" "
             "Format=\"HDF\">%s:/xdmf/%s/%ld</DataItem>\n",
             ind, "", shape, x->h5_ref, field, f);
}

/* A time-independent [n] int32 dataset as a node attribute. */
static void int_attribute(mz_str *b, const mz_xdmf *x, int ind, const char *name)
{
    str_addf(b,
             "%*s<Attribute Name=\"%s\" AttributeType=\"Scalar\" Center=\"Node\">\n"
             "%*s <DataItem Dimensions=\"%zu\" NumberType=\"Int\" Precision=\"4\" "
             "Format=\"HDF\">%s:/particles/all/%s</DataItem>\n"
             "%*s</Attribute>\n",
             ind, "", name, ind, "", x->n, x->h5_ref, name, ind, "");
}

/* A uniform grid's geometry and node attributes for frame f, after its topology; ind is the
 * indentation of the grid's children. */
static void geometry_and_attributes(mz_str *b, const mz_xdmf *x, int ind, long f)
{
    str_addf(b, "%*s<Geometry GeometryType=\"XYZ\">\n", ind, "");
    frame_item(b, x, ind + 2, f, "position", 3);
    str_addf(b, "%*s</Geometry>\n", ind, "");
    for (int k = 0; k < MZ_FIELD_COUNT; k++) {
        const mz_field_info *fi = &mz_field_infos[k];
        if (k == MZ_FIELD_POSITION || !(x->fields & MZ_FIELD_BIT(k)))
            continue;
        str_addf(b, "%*s<Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Node\">\n", ind, "",
                 fi->name, fi->components == 3 ? "Vector" : "Scalar");
        frame_item(b, x, ind + 2, f, fi->name, fi->components);
        str_addf(b, "%*s</Attribute>\n", ind, "");
    }
    int_attribute(b, x, ind, "body");
    int_attribute(b, x, ind, "phase");
}

static void points_topology(mz_str *b, const mz_xdmf *x, int ind)
{
    str_addf(b,
             "%*s<Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%zu\" "
             "NodesPerElement=\"1\"/>\n",
             ind, "", x->n);
}

/* A grid of `count` points without attributes, their positions the dataset `where`. */
static void points_grid(mz_str *b, const mz_xdmf *x, const char *name, size_t count,
                        const char *where)
{
    str_addf(b,
             "    <Grid Name=\"%s\" GridType=\"Uniform\">\n"
             "     <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%zu\" "
             "NodesPerElement=\"1\"/>\n"
             "     <Geometry GeometryType=\"XYZ\">\n"
             "      <DataItem Dimensions=\"%zu 3\" NumberType=\"Float\" Precision=\"4\" "
             "Format=\"HDF\">%s:%s</DataItem>\n"
             "     </Geometry>\n"
             "    </Grid>\n",
             name, count, count, x->h5_ref, where);
}

static void frame_grid(mz_str *b, const mz_xdmf *x, long f, long step, double time)
{
    if (x->n_triangles == 0 && x->n_boundary == 0 && x->n_moving == 0) {
        str_addf(b,
                 "   <Grid Name=\"frame %ld\" GridType=\"Uniform\">\n"
                 "    <Time Value=\"%.17g\"/>\n"
                 "    <Information Name=\"step\" Value=\"%ld\"/>\n",
                 f, time, step);
        points_topology(b, x, 4);
        geometry_and_attributes(b, x, 4, f);
        str_addf(b, "   </Grid>\n");
        return;
    }
    /* Points with surfaces or walls: grids shown together at the frame's time. */
    str_addf(b,
             "   <Grid Name=\"frame %ld\" GridType=\"Collection\" CollectionType=\"Spatial\">\n"
             "    <Time Value=\"%.17g\"/>\n"
             "    <Information Name=\"step\" Value=\"%ld\"/>\n"
             "    <Grid Name=\"particles\" GridType=\"Uniform\">\n",
             f, time, step);
    points_topology(b, x, 5);
    geometry_and_attributes(b, x, 5, f);
    str_addf(b, "    </Grid>\n");
    if (x->n_triangles > 0) { /* the cloth surfaces, on the particles' geometry */
        str_addf(b,
                 "    <Grid Name=\"surfaces\" GridType=\"Uniform\">\n"
                 "     <Topology TopologyType=\"Triangle\" NumberOfElements=\"%zu\" "
                 "NodesPerElement=\"3\">\n"
                 "      <DataItem Dimensions=\"%zu 3\" NumberType=\"Int\" Precision=\"4\" "
                 "Format=\"HDF\">%s:/connectivity/triangles</DataItem>\n"
                 "     </Topology>\n",
                 x->n_triangles, x->n_triangles, x->h5_ref);
        geometry_and_attributes(b, x, 5, f);
        str_addf(b, "    </Grid>\n");
    }
    if (x->n_boundary > 0) /* SPH's wall particles that stay put: the same every frame */
        points_grid(b, x, "boundary", x->n_boundary, "/particles/boundary/position");
    if (x->n_moving > 0) { /* the moving colliders' particles: the frame's */
        char where[64];
        snprintf(where, sizeof where, "/xdmf/moving_boundary/%ld", f);
        points_grid(b, x, "moving_boundary", x->n_moving, where);
    }
    str_addf(b, "   </Grid>\n");
}

int xdmf_reserve_space(int fd, off_t offset, off_t len)
{
    int err = posix_fallocate(fd, offset, len);
    return err == EINVAL || err == EOPNOTSUPP ? 0 : err;
}

/* Write text (the head, a frame's grid, or nothing) where the closing tags were, then the
 * closing tags again. */
static int append(mz_xdmf *x, const mz_str *text)
{
    mz_str b = {0};
    str_addf(&b, "%s%s", text->s ? text->s : "", xdmf_tail);
    off_t tail = x->tail + (off_t)text->len;
    int err = xdmf_reserve_space(x->fd, x->tail, (off_t)b.len);
    for (size_t done = 0; !err && done < b.len;) {
        ssize_t w = pwrite(x->fd, b.s + done, b.len - done, x->tail + (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            err = w < 0 ? errno : EIO;
        else
            done += (size_t)w;
    }
    if (!err && ftruncate(x->fd, x->tail + (off_t)b.len) != 0)
        err = errno;
    str_free(&b);
    if (err) {
        mz_error("writing %s: %s", x->path, strerror(err));
        return -1;
    }
    x->tail = tail;
    return 0;
}

char *xdmf_path_for(const char *h5_path)
{
    const char *base = strrchr(h5_path, '/');
    base = base ? base + 1 : h5_path;
    while (*base == '.')
        base++;
    const char *dot = strrchr(base, '.');
    size_t keep = dot ? (size_t)(dot - h5_path) : strlen(h5_path);
    char *x = xmalloc(keep + sizeof ".xdmf");
    memcpy(x, h5_path, keep);
    memcpy(x + keep, ".xdmf", sizeof ".xdmf");
    return x;
}

mz_xdmf *xdmf_create(const char *xdmf_path, const char *h5_path, size_t n, unsigned fields,
                     size_t n_triangles, size_t n_boundary, size_t n_moving)
{
    int fd = open(xdmf_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        mz_error("cannot create %s: %s", xdmf_path, strerror(errno));
        return NULL;
    }
    mz_xdmf *x = xcalloc(1, sizeof *x);
    x->path = xstrdup(xdmf_path);
    const char *base = strrchr(h5_path, '/');
    x->h5_ref = xml_escape(base ? base + 1 : h5_path);
    x->n = n;
    x->n_triangles = n_triangles;
    x->n_boundary = n_boundary;
    x->n_moving = n_moving;
    x->fields = fields | MZ_FIELD_BIT(MZ_FIELD_POSITION);
    x->fd = fd;
    mz_str head = {0};
    str_addf(&head, "%s", xdmf_head);
    int rc = append(x, &head);
    str_free(&head);
    if (rc) {
        xdmf_close(x, 1);
        return NULL;
    }
    return x;
}

int xdmf_append_frame(mz_xdmf *x, long frame, long step, double time)
{
    mz_str b = {0};
    frame_grid(&b, x, frame, step, time);
    int rc = append(x, &b);
    str_free(&b);
    return rc;
}

int xdmf_close(mz_xdmf *x, int discard)
{
    if (!x)
        return 0;
    int rc = 0;
    if (close(x->fd) != 0) {
        if (!discard)
            mz_error("writing %s: %s", x->path, strerror(errno));
        rc = -1;
    }
    if (discard)
        remove(x->path);
    free(x->path);
    free(x->h5_ref);
    free(x);
    return rc;
}
