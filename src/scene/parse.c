/* JSON scene → mz_scene: syntax errors with line and column, --set overrides, the key tables
 * (keys.c through schema.c), then the checks that span keys (validate.c). */
#include "scene/scene.h"

#include "scene/bodies.h"
#include "scene/keys.h"
#include "scene/schema.h"
#include "scene/validate.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --set PATH=VALUE on the JSON tree, before validation. PATH: key(.key|[index])*. */
/* Where text holds a NUL character, raw or as the escape \u0000 (outside an escaped
 * backslash), or len when it holds none. cJSON would end the string there, so the scene stored
 * with the output (and reloaded by --resume) would not be the one that ran. */
static size_t find_nul(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\0')
            return i;
        if (text[i] == '\\') {
            if (i + 5 < len && text[i + 1] == 'u' && text[i + 2] == '0' && text[i + 3] == '0' &&
                text[i + 4] == '0' && text[i + 5] == '0')
                return i;
            i++; /* the escaped character */
        }
    }
    return len;
}

#define NUL_MESSAGE "a NUL character (\\u0000): a scene's strings cannot hold one"

static void apply_override(cJSON *root, const char *arg, mz_diag *d)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        diag_add(d, "--set %s: expected PATH=VALUE, e.g. fluids[0].spacing=0.02", arg);
        return;
    }
    char *path = xstrdup(arg);
    path[eq - arg] = '\0';
    const char *text = eq + 1;
    if (find_nul(text, strlen(text)) < strlen(text)) {
        diag_add(d, "--set %s: " NUL_MESSAGE, arg);
        free(path);
        return;
    }
    /* The whole value must be JSON ("60fps" is not 60); otherwise it is a bare-word string:
     * output.compression=gzip. */
    cJSON *value = cJSON_ParseWithOpts(text, NULL, 1);
    if (!value)
        value = cJSON_CreateString(text);
    cJSON *node = root;
    const char *p = path;
    bool ok = true;
    while (ok && *p) {
        char key[256];
        size_t k = 0;
        while (*p && *p != '.' && *p != '[' && k < sizeof key - 1)
            key[k++] = *p++;
        key[k] = '\0';
        if (!k || !cJSON_IsObject(node)) {
            diag_add(d, "--set %s: bad path (expected names joined by '.' and [index])", path);
            ok = false;
            break;
        }
        bool last = !*p;
        cJSON *child = cJSON_GetObjectItemCaseSensitive(node, key);
        if (last) {
            if (child)
                cJSON_ReplaceItemInObjectCaseSensitive(node, key, value);
            else
                cJSON_AddItemToObject(node, key, value);
            value = NULL;
            break;
        }
        if (!child) {
            if (*p == '[') {
                diag_add(d, "--set %s: %s is not in the scene", path, key);
                ok = false;
                break;
            }
            child = cJSON_AddObjectToObject(node, key);
        }
        node = child;
        while (ok && *p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            if (end == p + 1 || *end != ']' || idx < 0) {
                diag_add(d, "--set %s: bad index in path", path);
                ok = false;
                break;
            }
            int size = cJSON_IsArray(node) ? cJSON_GetArraySize(node) : -1;
            if (idx >= size) {
                if (size < 0)
                    diag_add(d, "--set %s: %s is not an array", path, key);
                else
                    diag_add(d, "--set %s: %s has %d element%s", path, key, size,
                             size == 1 ? "" : "s");
                ok = false;
                break;
            }
            p = end + 1;
            if (!*p) {
                cJSON_ReplaceItemInArray(node, (int)idx, value);
                value = NULL;
            } else {
                node = cJSON_GetArrayItem(node, (int)idx);
            }
        }
        if (*p == '.') {
            p++;
            if (!*p) { /* "a.b." names nothing */
                diag_add(d, "--set %s: bad path (ends with '.')", path);
                ok = false;
            }
        }
    }
    if (ok && value) /* the walk ended without a key to set, e.g. "fluids[0]." */
        diag_add(d, "--set %s: bad path (names no key)", path);
    cJSON_Delete(value);
    free(path);
}

static void line_col(const char *text, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static void syntax_error(const char *text, size_t len, size_t off, mz_diag *d)
{
    int line, col;
    line_col(text, off, &line, &col);
    if (off >= len) {
        diag_add(d, "%d:%d: invalid JSON: unexpected end of file", line, col);
        return;
    }
    char near[24];
    size_t k = 0;
    for (size_t i = off; i < len && k < 20 && text[i] != '\n'; i++)
        near[k++] = isprint((unsigned char)text[i]) ? text[i] : '?';
    near[k] = '\0';
    diag_add(d, "%d:%d: invalid JSON near '%s'", line, col, near);
}

/* simulation.duration, when given, decides simulation.frames: the frames that reach it, a
 * product within a billionth of a whole number taken as that number (1.5 s at 100 fps is 150
 * frames, not 151 because 1.5 × 100 rounds above 150). */
static void frames_from_duration(mz_scene *s, mz_diag *d)
{
    if (s->sim.duration <= 0)
        return;
    double f = s->sim.duration * s->sim.fps, n = ceil(f - 1e-9 * f);
    if (n > 1e9) {
        diag_add(d, "simulation.duration: %g s at %g fps is %.3g frames (at most 10^9)",
                 s->sim.duration, s->sim.fps, n);
        return;
    }
    s->sim.frames = n < 1 ? 1 : (int)n;
}

int scene_load_text(const char *text, size_t len, const char *name,
                    const char *const *overrides, size_t n_overrides, mz_scene *s, mz_diag *d)
{
    memset(s, 0, sizeof *s);
    s->path = xstrdup(name);
    char *tmp = xstrdup(name);
    s->dir = xstrdup(dirname(tmp));
    free(tmp);
    s->given_json = xmalloc(len + 1);
    memcpy(s->given_json, text, len);
    s->given_json[len] = '\0';
    s->overrides = xcalloc(n_overrides, sizeof *s->overrides);
    for (size_t i = 0; i < n_overrides; i++)
        s->overrides[s->n_overrides++] = xstrdup(overrides[i]);

    size_t start = 0;
    while (start < len && isspace((unsigned char)text[start]))
        start++;
    if (start == len) {
        diag_add(d, "empty file (expected a JSON object)");
        scene_free(s);
        return -1;
    }
    /* cJSON clamps an error's offset to the last byte; parsing a copy with one byte of padding
     * tells "ends too early" (offset at the padding) from an error at the last character. */
    char *padded = xmalloc(len + 2);
    memcpy(padded, text, len);
    padded[len] = '\n';
    padded[len + 1] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(padded, len + 1, &end, 0);
    size_t off = end ? (size_t)(end - padded) : len;
    free(padded);
    if (root) {
        while (off < len && isspace((unsigned char)text[off]))
            off++;
        if (off < len) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        syntax_error(text, len, off, d);
        scene_free(s);
        return -1;
    }
    size_t nul = find_nul(text, len);
    if (nul < len) {
        int line, col;
        line_col(text, nul, &line, &col);
        diag_add(d, "%d:%d: " NUL_MESSAGE, line, col);
        cJSON_Delete(root);
        scene_free(s);
        return -1;
    }
    for (size_t i = 0; i < n_overrides; i++)
        apply_override(root, overrides[i], d);
    if (!d->count)
        schema_read(&mz_scene_schema, root, s, "", d);
    cJSON_Delete(root);
    if (!d->count)
        frames_from_duration(s, d);
    if (!d->count)
        scene_validate(s, d);
    if (d->count) {
        scene_free(s);
        return -1;
    }
    cJSON *eff = schema_write(&mz_scene_schema, s);
    s->effective_json = cJSON_Print(eff);
    cJSON_Delete(eff);
    return 0;
}

int scene_load(const char *path, const char *const *overrides, size_t n_overrides,
               mz_scene *s, mz_diag *d)
{
    size_t len = 0;
    char *text = read_file_max(path, MZ_SCENE_MAX_BYTES, &len);
    if (!text) {
        memset(s, 0, sizeof *s);
        diag_add(d, "cannot read the scene: %s", read_file_error(errno, MZ_SCENE_MAX_BYTES));
        return -1;
    }
    int rc = scene_load_text(text, len, path, overrides, n_overrides, s, d);
    free(text);
    return rc;
}

void scene_free(mz_scene *s)
{
    bodies_free(s);
    scene_motion_free(s);
    schema_free(&mz_scene_schema, s);
    free(s->path);
    free(s->dir);
    free(s->given_json);
    free(s->effective_json);
    for (size_t i = 0; i < s->n_overrides; i++)
        free(s->overrides[i]);
    free(s->overrides);
    memset(s, 0, sizeof *s);
}

void scene_print_keys(FILE *out) { schema_print(&mz_scene_schema, "", out); }

const char *const *scene_key_paths(void)
{
    static char **paths;
    static size_t n;
    if (!paths) {
        schema_paths(&mz_scene_schema, "", &paths, &n);
        paths = xrealloc(paths, (n + 1) * sizeof *paths);
        paths[n] = NULL;
    }
    return (const char *const *)paths;
}
