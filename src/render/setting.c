#include "render/setting.h"
#include "util/err.h"
#include "util/rotate.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vec3(const cJSON *obj, const char *key, double v[3])
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
        return -1;
    for (int k = 0; k < 3; k++) {
        const cJSON *x = cJSON_GetArrayItem(a, k);
        if (!cJSON_IsNumber(x))
            return -1;
        v[k] = x->valuedouble;
    }
    return 0;
}

static double number(const cJSON *obj, const char *key, double fallback)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(x) ? x->valuedouble : fallback;
}

/* A collider's name and motion (its pose comes with each picture). */
static void motion_of(const cJSON *c, mz_shape *sh)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
    if (cJSON_IsString(name))
        snprintf(sh->name, sizeof sh->name, "%s", name->valuestring);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "motion");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
    if (!cJSON_IsString(type))
        return;
    sh->motion = strcmp(type->valuestring, "rotation") == 0 ? 2 : 1;
    if (vec3(m, "center", sh->center) || vec3(m, "axis", sh->axis))
        sh->motion = sh->motion == 2 ? 0 : sh->motion;
    double n = sqrt(sh->axis[0] * sh->axis[0] + sh->axis[1] * sh->axis[1] +
                    sh->axis[2] * sh->axis[2]);
    if (sh->motion == 2 && !(n > 0))
        sh->motion = 0;
    for (int k = 0; k < 3 && n > 0; k++)
        sh->axis[k] /= n;
}

/* One collider; a kind this version does not know is skipped (it has nothing to draw). */
static int shape(const cJSON *c, mz_shape *sh)
{
    const cJSON *g;
    memset(sh, 0, sizeof *sh);
    motion_of(c, sh);
    if ((g = cJSON_GetObjectItemCaseSensitive(c, "sphere"))) {
        sh->kind = SHAPE_SPHERE;
        sh->r = number(g, "radius", 0);
        return vec3(g, "center", sh->a);
    }
    if ((g = cJSON_GetObjectItemCaseSensitive(c, "box"))) {
        sh->kind = SHAPE_BOX;
        return vec3(g, "min", sh->a) || vec3(g, "max", sh->b) ? -1 : 0;
    }
    if ((g = cJSON_GetObjectItemCaseSensitive(c, "plane"))) {
        sh->kind = SHAPE_PLANE;
        return vec3(g, "point", sh->a) || vec3(g, "normal", sh->b) ? -1 : 0;
    }
    if ((g = cJSON_GetObjectItemCaseSensitive(c, "capsule"))) {
        sh->kind = SHAPE_CAPSULE;
        sh->r = number(g, "radius", 0);
        return vec3(g, "a", sh->a) || vec3(g, "b", sh->b) ? -1 : 0;
    }
    return -1;
}

int setting_read(const char *json, mz_setting *s)
{
    memset(s, 0, sizeof *s);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *domain = cJSON_GetObjectItemCaseSensitive(root, "domain");
    if (!domain || vec3(domain, "min", s->lo) || vec3(domain, "max", s->hi)) {
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(root, "simulation");
    s->dimensions = number(sim, "dimensions", 3) == 2 ? 2 : 3;
    const cJSON *fluids = cJSON_GetObjectItemCaseSensitive(root, "fluids"), *f;
    s->fluid_spacing = xcalloc((size_t)cJSON_GetArraySize(fluids) + 1, sizeof *s->fluid_spacing);
    cJSON_ArrayForEach(f, fluids) s->fluid_spacing[s->n_fluids++] = number(f, "spacing", 0);
    const cJSON *colliders = cJSON_GetObjectItemCaseSensitive(root, "colliders"), *c;
    s->shapes = xcalloc((size_t)cJSON_GetArraySize(colliders) + 1, sizeof *s->shapes);
    cJSON_ArrayForEach(c, colliders) if (shape(c, &s->shapes[s->n_shapes]) == 0) s->n_shapes++;
    cJSON_Delete(root);
    return 0;
}

void setting_pose(mz_setting *s, const mz_pose *pose)
{
    for (size_t k = 0; k < s->n_shapes; k++)
        if (s->shapes[k].motion && strcmp(s->shapes[k].name, pose->name) == 0) {
            memcpy(s->shapes[k].displacement, pose->displacement, sizeof pose->displacement);
            s->shapes[k].angle = pose->angle;
        }
}

void setting_place(const mz_shape *sh, const double p[3], double out[3])
{
    double q[3];
    if (sh->motion == 2) {
        double r[3] = {p[0] - sh->center[0], p[1] - sh->center[1], p[2] - sh->center[2]};
        rotate_about(sh->axis, sh->angle, r, q);
        for (int k = 0; k < 3; k++)
            q[k] += sh->center[k];
    } else {
        for (int k = 0; k < 3; k++)
            q[k] = p[k] + (sh->motion == 1 ? sh->displacement[k] : 0);
    }
    memcpy(out, q, sizeof q);
}

void setting_turn(const mz_shape *sh, const double v[3], double out[3])
{
    double q[3];
    if (sh->motion == 2)
        rotate_about(sh->axis, sh->angle, v, q);
    else
        memcpy(q, v, sizeof q);
    memcpy(out, q, sizeof q);
}

void setting_free(mz_setting *s)
{
    free(s->fluid_spacing);
    free(s->shapes);
    memset(s, 0, sizeof *s);
}
