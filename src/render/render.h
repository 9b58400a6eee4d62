/* render/: pictures of particle states without a GPU or a display (mizu render, run --preview).
 * Orthographic views of the domain box, particles as depth-tested shaded spheres coloured by a
 * field with a colour bar, cloth as a lit surface, colliders as solids, a caption; PNG through
 * libpng. Includes util/ and cJSON (for the scene's colliders and spacings); knows nothing of
 * HDF5, devices or solvers: the caller hands it arrays.
 */
#ifndef MZ_RENDER_H
#define MZ_RENDER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mz_view_kind { MZ_VIEW_AUTO, MZ_VIEW_FRONT, MZ_VIEW_SIDE, MZ_VIEW_TOP, MZ_VIEW_ISO }
    mz_view_kind;
extern const char *const mz_view_names[]; /* "auto", "front", ... NULL-terminated */

/* A moving collider's pose in one picture (colliders[].motion: what the output keeps in
 * /observables/colliders/<name>/displacement or angle at the frame's time), for the scene's
 * collider of that name. */
typedef struct mz_pose {
    const char *name;
    double displacement[3]; /* a translation's, m */
    double angle;           /* a rotation's, rad */
} mz_pose;

/* One state to draw. Arrays are in id order, n rows. */
typedef struct mz_picture {
    size_t n;
    const float *pos;        /* 3 per particle */
    const float *value;      /* the colouring field, 1 per particle; NULL: colour by phase */
    const uint32_t *phase;   /* MZ_PHASE_* values (0 fluid, 1 cloth, 2 soft body, 3 rigid); may be NULL */
    const uint32_t *body;    /* body index per particle (fluids, cloths, meshes, rigids); may be NULL */
    const uint32_t *tri;     /* cloth triangles, 3 ids each */
    size_t n_tri;
    const float *boundary;   /* SPH wall particles, 3 floats each (may be NULL): those beyond
                              * the walls the viewer looks at from inside are drawn */
    size_t n_boundary;
    const char *scene_json;  /* the effective scene: domain, colliders, spacings, dimensions */
    const char *field_label; /* "speed", "pressure": the colour bar's title */
    const char *field_unit;  /* "m s-1"; NULL or "" for none */
    const char *caption;     /* top line, e.g. "dam_break.h5   t = 0.500 s   frame 30 of 180" */
    const mz_pose *poses;    /* the moving colliders' (may be NULL: all at rest) */
    size_t n_poses;
} mz_picture;

typedef struct mz_render_opts {
    int width, height;       /* pixels */
    mz_view_kind view;       /* AUTO: front in 2D, iso in 3D */
    bool fixed_range;        /* colour range lo..hi given; else render_range on this picture */
    double lo, hi;
} mz_render_opts;

/* A picture: width × height RGB, 8 bits each, rows top to bottom. */
typedef struct mz_image {
    int width, height;
    uint8_t *rgb;
} mz_image;

/* The colour range a picture of these values gets: the 0.5th to 99.5th percentile (so a few
 * splashing particles do not wash the colours out); lo == hi when they are all equal (the
 * picture then widens it so that the value sits mid-scale). Non-finite values are skipped.
 * Returns false when no value is finite. */
bool render_range(const float *value, size_t n, double *lo, double *hi);

/* Draw pic into a new image (free with image_free). Returns 0; -2 with a message when the
 * options ask for what cannot be drawn (a size outside 256..16384 by 160..16384, a view other
 * than front of a 2D run); -1 with a message when the scene text has no domain. */
int render_picture(const mz_picture *pic, const mz_render_opts *o, mz_image *img);
void image_free(mz_image *img);

/* Write img as PNG to path through a temporary file renamed into place, so that path is either
 * the old file or the whole new one. A file already there is replaced only when it is a PNG
 * that mizu wrote (its Software text says so); anything else is refused with a message.
 * Returns 0 or -1. */
int render_write_png(const char *path, const mz_image *img, const char *title);

#endif
