/* Inside render/: what a picture needs of the scene besides the particles, read from the
 * effective scene JSON an output file keeps: the domain box, 2D or 3D, the fluids' spacings
 * (the size a particle is drawn) and the colliders' shapes. */
#ifndef MZ_SETTING_H
#define MZ_SETTING_H
#include <stddef.h>

typedef enum { SHAPE_SPHERE, SHAPE_BOX, SHAPE_PLANE, SHAPE_CAPSULE } mz_shape_kind;

typedef struct mz_shape {
    mz_shape_kind kind;
    double a[3], b[3]; /* sphere: centre; box: min, max; plane: point, normal; capsule: ends */
    double r;          /* sphere, capsule */
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
void setting_free(mz_setting *s);

#endif
