/* Inside cli/: what `mizu compare` found (compare.c) and how it is printed (compare_report.c):
 * a table and a verdict line, or one JSON object. */
#ifndef MZ_COMPARE_RESULT_H
#define MZ_COMPARE_RESULT_H
#include "cli/compare.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MZ_CMP_NAME 64 /* longest series name + 1 */

typedef struct mz_names {
    char **v;
    size_t n;
} mz_names;

/* One series' differences over the frames compared, and its first mismatch. */
typedef struct mz_cmp_diff {
    unsigned long long frames, rows, mismatches; /* rows: frames × rows a frame (for the RMS) */
    double max_abs, max_rel, sumsq;
    bool failed;       /* the first mismatch below is set */
    long frame;
    long long id;      /* the particle id or the rigid's body index; -1 for step and time */
    int comp;          /* component; -1 where a row is one value */
    double a, b, tol;  /* the values, and the tolerance they broke */
    unsigned long long abits, bbits;
    int bytes;         /* of the values' bits: 4 (float32), 8 (float64), 0 (an integer) */
} mz_cmp_diff;

/* A compared series: a particle field, or a rigid-body pose series (rows are rigid bodies). */
typedef struct mz_cmp_series {
    char name[MZ_CMP_NAME];
    bool rigid;
    int comps; /* values a row: 1, 3 or 4 */
    mz_cmp_diff df;
} mz_cmp_series;

typedef struct mz_cmp_result {
    const mz_compare_opts *o;
    mz_cmp_series *s;          /* in the table's order */
    size_t ns;
    mz_names only[2];          /* particle fields that only A / only B holds: not compared */
    unsigned long long n, n_rigid; /* particles; rigid bodies (0 unless their series count) */
    long first, last;          /* the frame records compared */
    mz_cmp_diff step, time;
    bool compared;             /* every check passed and the values were compared */
    char reason[1024];         /* why the files cannot be compared */
} mz_cmp_result;

/* Write r, whose outcome is rc (MZ_COMPARE_*), to out: the table and the verdict line, or the
 * JSON object with --json; when the files are not comparable, the reason goes to stderr. */
void compare_report(const mz_cmp_result *r, int rc, FILE *out);

#endif
