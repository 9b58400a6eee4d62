#include "render/setting.h"
#include "util/err.h"

#include <cJSON.h>

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

/* One collider; a kind this version does not know is skipped (it has nothing to draw). */
static int shape(const cJSON *c, mz_shape *sh)
{
    const cJSON *g;
    memset(sh, 0, sizeof *sh);
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

void setting_free(mz_setting *s)
{
    free(s->fluid_spacing);
    free(s->shapes);
    memset(s, 0, sizeof *s);
}
