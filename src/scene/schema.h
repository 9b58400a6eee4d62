/* Table-driven JSON ↔ struct mapping: each key declared once with its type, bounds, default, unit
 * and meaning. The reader reports every problem with its JSON path; the writer turns a struct
 * back into JSON (the effective scene); the printer documents the keys. */
#ifndef MZ_SCHEMA_H
#define MZ_SCHEMA_H
#include "util/err.h"

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum mz_ktype {
    K_NUMBER, /* double */
    K_INT,    /* int */
    K_BOOL,   /* bool */
    K_STRING, /* char * (owned) */
    K_ENUM,   /* int index into names */
    K_VEC3,   /* double[3] */
    K_VEC2,   /* double[2]; bounds apply to each element */
    K_INT2,   /* int[2]; bounds apply to each element */
    K_FLAGS,  /* unsigned bit mask from an array of names */
    K_OBJECT, /* nested struct at offset; with aux_offset: optional, bool present flag there */
    K_LIST,   /* array of objects: elem pointer at offset, size_t count at aux_offset */
    K_POINTS, /* mz_points: array of [x, y, z] */
} mz_ktype;

enum {
    K_REQUIRED = 1u << 0,
    K_MIN = 1u << 1,    /* value >= min */
    K_MIN_GT = 1u << 2, /* value > min */
    K_MAX = 1u << 3,    /* value <= max */
};

typedef struct mz_schema mz_schema;

typedef struct mz_key {
    const char *name;
    mz_ktype type;
    size_t offset;
    const char *def;           /* default as JSON text; NULL: required or absent */
    unsigned flags;
    double min, max;
    const char *const *names;  /* K_ENUM, K_FLAGS: NULL-terminated vocabulary */
    const mz_schema *sub;      /* K_OBJECT, K_LIST */
    size_t aux_offset;         /* K_LIST count; K_OBJECT present flag (if optional) */
    const char *unit;
    const char *doc;
} mz_key;

struct mz_schema {
    const char *name;
    const mz_key *keys; /* ends with a key whose name is NULL */
    size_t size;        /* sizeof the struct (K_LIST elements) */
};

/* Read obj (may be NULL: all defaults) into dst. path: the JSON path so far ("" at the root). */
void schema_read(const mz_schema *s, const cJSON *obj, void *dst, const char *path,
                 mz_diag *d);
/* The struct as JSON, every key present (optional objects only when present). */
cJSON *schema_write(const mz_schema *s, const void *src);
/* Free what schema_read allocated (strings, lists, points). */
void schema_free(const mz_schema *s, void *dst);
/* Documentation, one line a key, paths prefixed by prefix. */
void schema_print(const mz_schema *s, const char *prefix, FILE *out);
/* Append every key path under s to *paths (xrealloc'd), prefixed. */
void schema_paths(const mz_schema *s, const char *prefix, char ***paths, size_t *n);

/* "a string \"NaN\"", "an array", "-0.01" ...: what the user wrote, for messages. */
void describe_json(const cJSON *v, char *buf, size_t len);

#endif
