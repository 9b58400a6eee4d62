/* `mizu compare A.h5 B.h5`: whether two outputs hold the same frames, for regression runs in CI
 * (today's output against a golden file). */
#ifndef MZ_COMPARE_H
#define MZ_COMPARE_H
#include <stdbool.h>
#include <stdio.h>

/* Exit codes, as diff(1) and cmp(1) have them; usage errors are MZ_EXIT_USAGE, also 2. */
enum { MZ_COMPARE_MATCH = 0, MZ_COMPARE_DIFFERS = 1, MZ_COMPARE_NOT_COMPARABLE = 2 };

typedef struct mz_compare_opts {
    const char *path[2];   /* A (today's) and B (the reference: rtol scales |b|) */
    const char *fields;    /* --fields: comma-separated names; NULL: every field both hold */
    bool tolerance;        /* --rtol or --atol given; otherwise bits must be identical */
    double rtol, atol;     /* a matches b when |a - b| <= atol + rtol |b| */
    long first, last;      /* --frames: records first..last, both included; last -1: to the end */
    bool json;             /* one JSON object on out instead of the table */
} mz_compare_opts;

/* Compare the files and write the result to out: a table per field and a verdict line, or the
 * JSON object. Reasons the files cannot be compared also go to stderr. Returns one of the
 * MZ_COMPARE_* codes. */
int compare_files(const mz_compare_opts *o, FILE *out);

#endif
