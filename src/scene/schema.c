#include "scene/schema.h"

#include "scene/scene.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(dst, k, T) ((T *)((char *)(dst) + (k)->offset))
#define AUX(dst, k, T) ((T *)((char *)(dst) + (k)->aux_offset))
#define CFIELD(src, k, T) ((const T *)((const char *)(src) + (k)->offset))
#define CAUX(src, k, T) ((const T *)((const char *)(src) + (k)->aux_offset))

/* The shortest text that reads back as x: 1000000001, not 1e+09; 0.1, not 0.10000000000000001. */
static void shortest(double x, char *buf, size_t len)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

void describe_json(const cJSON *v, char *buf, size_t len)
{
    if (!v)
        snprintf(buf, len, "nothing");
    else if (cJSON_IsNumber(v))
        shortest(v->valuedouble, buf, len);
    else if (cJSON_IsString(v)) {
        size_t n = strlen(v->valuestring);
        snprintf(buf, len, "\"%.*s%s\"", n > 40 ? 40 : (int)n, v->valuestring,
                 n > 40 ? "..." : "");
    } else if (cJSON_IsTrue(v))
        snprintf(buf, len, "true");
    else if (cJSON_IsFalse(v))
        snprintf(buf, len, "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, len, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, len, "an array of %d", cJSON_GetArraySize(v));
    else if (cJSON_IsObject(v))
        snprintf(buf, len, "an object");
    else
        snprintf(buf, len, "an invalid value");
}

static void sub_path(char *out, size_t len, const char *path, const char *name)
{
    snprintf(out, len, "%s%s%s", path, *path ? "." : "", name);
}

/* "> 0", ">= 1 and <= 9", "" */
static void bounds_text(const mz_key *k, char *buf, size_t len)
{
    buf[0] = '\0';
    if (k->flags & (K_MIN | K_MIN_GT))
        snprintf(buf, len, "%s %g", (k->flags & K_MIN_GT) ? ">" : ">=", k->min);
    if (k->flags & K_MAX) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s<= %g", used ? " and " : "", k->max);
    }
}

static bool read_number(const mz_key *k, const cJSON *v, double *out, const char *path,
                        mz_diag *d)
{
    char got[96];
    describe_json(v, got, sizeof got);
    if (!cJSON_IsNumber(v)) {
        diag_add(d, "%s must be %s (got %s)", path, k->type == K_INT ? "an integer" : "a number",
                 got);
        return false;
    }
    double x = v->valuedouble;
    if (!isfinite(x)) {
        diag_add(d, "%s must be a finite number (got %s)", path, got);
        return false;
    }
    if (k->type == K_INT && (x != floor(x) || x < INT_MIN || x > INT_MAX)) {
        diag_add(d, "%s must be an integer (got %s)", path, got);
        return false;
    }
    bool low = ((k->flags & K_MIN) && x < k->min) || ((k->flags & K_MIN_GT) && x <= k->min);
    bool high = (k->flags & K_MAX) && x > k->max;
    if (low || high) {
        char b[96];
        bounds_text(k, b, sizeof b);
        diag_add(d, "%s must be %s (got %s)", path, b, got);
        return false;
    }
    /* Devices compute in single precision: 1e308 would be infinite there, 1e-300 zero. */
    if (fabs(x) > FLT_MAX || (x != 0 && fabs(x) < FLT_MIN)) {
        diag_add(d, "%s must be 0 or of magnitude between %g and %g, which the device's single "
                    "precision holds (got %s)", path, FLT_MIN, FLT_MAX, got);
        return false;
    }
    *out = x;
    return true;
}

static int name_index(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static void names_text(const char *const *names, mz_str *b)
{
    for (int i = 0; names[i]; i++)
        str_addf(b, "%s\"%s\"", i ? ", " : "", names[i]);
}

static bool read_name(const mz_key *k, const cJSON *v, int *out, const char *path, mz_diag *d)
{
    int i = cJSON_IsString(v) ? name_index(k->names, v->valuestring) : -1;
    if (i < 0) {
        char got[96];
        mz_str b = {0};
        describe_json(v, got, sizeof got);
        names_text(k->names, &b);
        diag_add(d, "%s must be one of %s (got %s)", path, b.s, got);
        str_free(&b);
        return false;
    }
    *out = i;
    return true;
}

/* An array of n numbers, each checked against elem (its type and bounds). */
static bool read_numbers(const mz_key *elem, const cJSON *v, double *out, int n,
                         const char *path, mz_diag *d)
{
    char got[96];
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n) {
        describe_json(v, got, sizeof got);
        diag_add(d, "%s must be an array of %d %s (got %s)", path, n,
                 elem->type == K_INT ? "integers" : "numbers", got);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        ok &= read_number(elem, cJSON_GetArrayItem(v, i), &out[i], p, d);
    }
    return ok;
}

static bool read_vec3(const cJSON *v, double out[3], const char *path, mz_diag *d)
{
    static const mz_key any = {.name = "", .type = K_NUMBER};
    return read_numbers(&any, v, out, 3, path, d);
}

static void read_value(const mz_key *k, const cJSON *v, void *dst, const char *path, mz_diag *d);

static void read_points(const cJSON *v, mz_points *pts, const char *path, mz_diag *d)
{
    char got[96];
    if (!cJSON_IsArray(v)) {
        describe_json(v, got, sizeof got);
        diag_add(d, "%s must be an array of [x, y, z] points (got %s)", path, got);
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(v);
    pts->p = xcalloc(n, sizeof *pts->p);
    pts->n = n;
    size_t i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char p[512];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        read_vec3(e, pts->p[i], p, d);
    }
}

static void read_flags(const mz_key *k, const cJSON *v, unsigned *out, const char *path,
                       mz_diag *d)
{
    char got[96];
    if (!cJSON_IsArray(v)) {
        describe_json(v, got, sizeof got);
        diag_add(d, "%s must be an array of names (got %s)", path, got);
        return;
    }
    *out = 0;
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char p[512];
        int idx;
        snprintf(p, sizeof p, "%s[%d]", path, i);
        if (!read_name(k, e, &idx, p, d))
            continue;
        if (*out & (1u << idx))
            diag_add(d, "%s: \"%s\" is listed twice", p, k->names[idx]);
        *out |= 1u << idx;
    }
}

static void read_list(const mz_key *k, const cJSON *v, void *dst, const char *path, mz_diag *d)
{
    char got[96];
    if (!cJSON_IsArray(v)) {
        describe_json(v, got, sizeof got);
        diag_add(d, "%s must be an array of objects (got %s)", path, got);
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(v);
    char *elems = xcalloc(n, k->sub->size);
    *FIELD(dst, k, void *) = elems;
    *AUX(dst, k, size_t) = n;
    size_t i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char p[512];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        schema_read(k->sub, e, elems + i * k->sub->size, p, d);
    }
}

static void read_value(const mz_key *k, const cJSON *v, void *dst, const char *path, mz_diag *d)
{
    char got[96];
    switch (k->type) {
    case K_NUMBER:
        read_number(k, v, FIELD(dst, k, double), path, d);
        break;
    case K_INT: {
        double x;
        if (read_number(k, v, &x, path, d))
            *FIELD(dst, k, int) = (int)x;
        break;
    }
    case K_BOOL:
        if (cJSON_IsBool(v))
            *FIELD(dst, k, bool) = cJSON_IsTrue(v);
        else {
            describe_json(v, got, sizeof got);
            diag_add(d, "%s must be true or false (got %s)", path, got);
        }
        break;
    case K_STRING:
        if (cJSON_IsString(v)) {
            free(*FIELD(dst, k, char *));
            *FIELD(dst, k, char *) = xstrdup(v->valuestring);
        } else {
            describe_json(v, got, sizeof got);
            diag_add(d, "%s must be a string (got %s)", path, got);
        }
        break;
    case K_ENUM:
        read_name(k, v, FIELD(dst, k, int), path, d);
        break;
    case K_VEC3:
        read_vec3(v, FIELD(dst, k, double), path, d);
        if (k->aux_offset) /* given or not (validation fills in a default) */
            *AUX(dst, k, bool) = true;
        break;
    case K_VEC2:
    case K_INT2: {
        mz_key elem = *k;
        elem.type = k->type == K_INT2 ? K_INT : K_NUMBER;
        double x[2];
        if (read_numbers(&elem, v, x, 2, path, d))
            for (int i = 0; i < 2; i++) {
                if (k->type == K_INT2)
                    FIELD(dst, k, int)[i] = (int)x[i];
                else
                    FIELD(dst, k, double)[i] = x[i];
            }
        break;
    }
    case K_FLAGS:
        read_flags(k, v, FIELD(dst, k, unsigned), path, d);
        break;
    case K_OBJECT:
        schema_read(k->sub, v, FIELD(dst, k, char), path, d);
        if (k->aux_offset)
            *AUX(dst, k, bool) = true;
        break;
    case K_LIST:
        read_list(k, v, dst, path, d);
        break;
    case K_POINTS:
        read_points(v, FIELD(dst, k, mz_points), path, d);
        break;
    }
}

static const mz_key *find_key(const mz_schema *s, const char *name)
{
    for (const mz_key *k = s->keys; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}

void schema_read(const mz_schema *s, const cJSON *obj, void *dst, const char *path,
                 mz_diag *d)
{
    char got[96], p[512];
    if (obj && !cJSON_IsObject(obj)) {
        describe_json(obj, got, sizeof got);
        diag_add(d, "%s must be an object (got %s)", *path ? path : "the scene", got);
        return;
    }
    /* Unknown and duplicate keys (cJSON keeps duplicates, so count them ourselves); both scans
     * are linear in the object's size, so a huge generated object cannot stall the check. */
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
        if (find_key(s, c->string))
            continue;
        sub_path(p, sizeof p, path, c->string);
        mz_str b = {0};
        for (const mz_key *k = s->keys; k->name; k++)
            str_addf(&b, "%s%s", k == s->keys ? "" : ", ", k->name);
        diag_add(d, "%s: unknown key (expected one of: %s)", p, b.s);
        str_free(&b);
    }
    for (const mz_key *k = s->keys; obj && k->name; k++) {
        int count = 0;
        for (const cJSON *c = obj->child; c; c = c->next)
            count += !strcmp(c->string, k->name);
        if (count > 1) {
            sub_path(p, sizeof p, path, k->name);
            diag_add(d, "%s: duplicate key (given %d times)", p, count);
        }
    }
    for (const mz_key *k = s->keys; k->name; k++) {
        sub_path(p, sizeof p, path, k->name);
        const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, k->name) : NULL;
        if (v) {
            read_value(k, v, dst, p, d);
        } else if (k->def) {
            cJSON *def = cJSON_Parse(k->def);
            read_value(k, def, dst, p, d);
            cJSON_Delete(def);
        } else if (k->flags & K_REQUIRED) {
            diag_add(d, "%s is required (%s)", p, k->doc);
        } else if (k->type == K_OBJECT && !k->aux_offset) {
            schema_read(k->sub, NULL, FIELD(dst, k, char), p, d);
        }
    }
}

cJSON *schema_write(const mz_schema *s, const void *src)
{
    cJSON *o = cJSON_CreateObject();
    for (const mz_key *k = s->keys; k->name; k++) {
        cJSON *v = NULL;
        switch (k->type) {
        case K_NUMBER:
            v = cJSON_CreateNumber(*CFIELD(src, k, double));
            break;
        case K_INT:
            v = cJSON_CreateNumber(*CFIELD(src, k, int));
            break;
        case K_BOOL:
            v = cJSON_CreateBool(*CFIELD(src, k, bool));
            break;
        case K_STRING:
            if (*CFIELD(src, k, char *))
                v = cJSON_CreateString(*CFIELD(src, k, char *));
            break;
        case K_ENUM:
            v = cJSON_CreateString(k->names[*CFIELD(src, k, int)]);
            break;
        case K_VEC3:
            v = cJSON_CreateDoubleArray(CFIELD(src, k, double), 3);
            break;
        case K_VEC2:
            v = cJSON_CreateDoubleArray(CFIELD(src, k, double), 2);
            break;
        case K_INT2:
            v = cJSON_CreateIntArray(CFIELD(src, k, int), 2);
            break;
        case K_FLAGS:
            v = cJSON_CreateArray();
            for (int i = 0; k->names[i]; i++)
                if (*CFIELD(src, k, unsigned) & (1u << i))
                    cJSON_AddItemToArray(v, cJSON_CreateString(k->names[i]));
            break;
        case K_OBJECT:
            if (!k->aux_offset || *CAUX(src, k, bool))
                v = schema_write(k->sub, CFIELD(src, k, char));
            break;
        case K_LIST: {
            const char *elems = *CFIELD(src, k, char *);
            size_t n = *CAUX(src, k, size_t);
            v = cJSON_CreateArray();
            for (size_t i = 0; i < n; i++)
                cJSON_AddItemToArray(v, schema_write(k->sub, elems + i * k->sub->size));
            break;
        }
        case K_POINTS: {
            const mz_points *pts = CFIELD(src, k, mz_points);
            if (pts->n) {
                v = cJSON_CreateArray();
                for (size_t i = 0; i < pts->n; i++)
                    cJSON_AddItemToArray(v, cJSON_CreateDoubleArray(pts->p[i], 3));
            }
            break;
        }
        }
        if (v)
            cJSON_AddItemToObject(o, k->name, v);
    }
    return o;
}

void schema_free(const mz_schema *s, void *dst)
{
    for (const mz_key *k = s->keys; k->name; k++) {
        switch (k->type) {
        case K_STRING:
            free(*FIELD(dst, k, char *));
            *FIELD(dst, k, char *) = NULL;
            break;
        case K_OBJECT:
            schema_free(k->sub, FIELD(dst, k, char));
            break;
        case K_LIST: {
            char *elems = *FIELD(dst, k, char *);
            for (size_t i = 0; i < *AUX(dst, k, size_t); i++)
                schema_free(k->sub, elems + i * k->sub->size);
            free(elems);
            *FIELD(dst, k, char *) = NULL;
            *AUX(dst, k, size_t) = 0;
            break;
        }
        case K_POINTS:
            free(FIELD(dst, k, mz_points)->p);
            *FIELD(dst, k, mz_points) = (mz_points){0};
            break;
        default:
            break;
        }
    }
}

static const char *type_text(const mz_key *k, mz_str *b)
{
    switch (k->type) {
    case K_NUMBER: return "number";
    case K_INT: return "integer";
    case K_BOOL: return "boolean";
    case K_STRING: return "string";
    case K_VEC3: return "[x, y, z]";
    case K_VEC2: return "[a, b]";
    case K_INT2: return "[integer, integer]";
    case K_OBJECT: return "object";
    case K_LIST: return "array of objects";
    case K_POINTS: return "array of [x, y, z]";
    case K_ENUM:
        str_addf(b, "one of ");
        names_text(k->names, b);
        return b->s;
    case K_FLAGS:
        str_addf(b, "array of ");
        names_text(k->names, b);
        return b->s;
    }
    return "?";
}

void schema_print(const mz_schema *s, const char *prefix, FILE *out)
{
    for (const mz_key *k = s->keys; k->name; k++) {
        char p[512], bounds[96];
        mz_str t = {0};
        sub_path(p, sizeof p, prefix, k->name);
        bounds_text(k, bounds, sizeof bounds);
        fprintf(out, "%s\n    %s%s%s", p, type_text(k, &t), *bounds ? ", " : "", bounds);
        if (k->unit)
            fprintf(out, ", in %s", k->unit);
        if (k->flags & K_REQUIRED)
            fprintf(out, "; required");
        else if (k->def)
            fprintf(out, "; default %s", k->def);
        fprintf(out, "\n    %s\n", k->doc);
        str_free(&t);
        if (k->type == K_OBJECT || k->type == K_LIST) {
            if (k->type == K_LIST)
                strncat(p, "[]", sizeof p - strlen(p) - 1);
            schema_print(k->sub, p, out);
        }
    }
}

void schema_paths(const mz_schema *s, const char *prefix, char ***paths, size_t *n)
{
    for (const mz_key *k = s->keys; k->name; k++) {
        char p[512];
        sub_path(p, sizeof p, prefix, k->name);
        *paths = xrealloc(*paths, (*n + 1) * sizeof **paths);
        (*paths)[(*n)++] = xstrdup(p);
        if (k->type == K_LIST)
            strncat(p, "[]", sizeof p - strlen(p) - 1);
        if (k->type == K_OBJECT || k->type == K_LIST)
            schema_paths(k->sub, p, paths, n);
    }
}
