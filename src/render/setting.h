/* Inside render/: what a picture needs of the scene besides the particles, read from the
 * effective scene JSON an output file keeps: the domain box, 2D or 3D, the fluids' spacings
 * (the size a particle is drawn) and the colliders' shapes. */
#ifndef MZ_SETTING_H
#define MZ_SETTING_H
#include "render/render.h"

#include <stddef.h>

typedef enum { SHAPE_SPHERE, SHAPE_BOX, SHAPE_PLANE, SHAPE_CAPSULE } mz_shape_kind;

typedef struct mz_shape {
    mz_shape_kind kind;
    double a[3], b[3]; /* sphere: centre; box: min, max; plane: point, normal; capsule: ends */
    double r;          /* sphere, capsule */
    char name[64];     /* the collider's name ("" without one) */
    /* colliders[].motion: 0 none, 1 translation, 2 rotation (about center, unit axis); the
     * picture's pose: displacement, or angle (rad). */
    int motion;
    double center[3], axis[3];
    double displacement[3], angle;
} mz_shape;

typedef struct mz_setting {
    int dimensions;
    double lo[3], hi[3];   /* the domain */
    double *fluid_spacing; /* per fluids[] entry */
    size_t n_fluids;
    mz_shape *shapes;
    size_t n_shapes;
} mz_setting;

/* Returns 0, or -1 when json is not a scene mizu wrote (no domain.min/max). */
int setting_read(const char *json, mz_setting *s);
/* A moving collider's pose for this picture, to the shape of its name. */
void setting_pose(mz_setting *s, const mz_pose *pose);
/* Point p of a shape where its pose puts it (out may be p); a direction turned by it. */
void setting_place(const mz_shape *sh, const double p[3], double out[3]);
void setting_turn(const mz_shape *sh, const double v[3], double out[3]);
void setting_free(mz_setting *s);

#endif
