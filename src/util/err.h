/* util/: what every layer uses and nothing of mizu's own: messages, diagnostics, checked
 * allocation, growable strings, file reading. Includes only the C library.
 *
 * Errors: exit codes, messages on stderr, and a list of diagnostics for errors reported together. */
#ifndef MZ_ERR_H
#define MZ_ERR_H
#include <stddef.h>

enum { MZ_EXIT_OK = 0, MZ_EXIT_RUNTIME = 1, MZ_EXIT_USAGE = 2 };

#if defined(__GNUC__)
#define MZ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MZ_PRINTF(a, b)
#endif

/* "mizu: error: ..." on stderr. */
void mz_error(const char *fmt, ...) MZ_PRINTF(1, 2);
void mz_warn(const char *fmt, ...) MZ_PRINTF(1, 2);
/* Under mpirun: errors read "mizu: rank R: error: ..."; quiet_warnings drops this rank's
 * warnings and diagnostic lists (rank 0 prints the same ones for all). */
void mz_msg_rank(int rank, int quiet_warnings);

/* Several errors found in one pass (a scene), reported at once. */
#define MZ_DIAG_MAX 20 /* messages kept; the rest are counted */
typedef struct mz_diag {
    char **msgs;
    size_t count, cap;
    size_t dropped;
} mz_diag;

void diag_add(mz_diag *d, const char *fmt, ...) MZ_PRINTF(2, 3);
/* Print each message as "PREFIX: message" (prefix may be NULL), then how many were dropped. */
void diag_print(const mz_diag *d, const char *prefix);
void diag_free(mz_diag *d);

/* Growable string for messages and JSON text. */
typedef struct mz_str {
    char *s;
    size_t len, cap;
} mz_str;
void str_addf(mz_str *b, const char *fmt, ...) MZ_PRINTF(2, 3);
void str_free(mz_str *b);

/* malloc that never returns NULL: out of host memory ends the run with exit 1. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Whole file into a NUL-terminated buffer; NULL with errno set on failure. */
char *read_file(const char *path, size_t *len);
/* The same for input a user names: a regular file or a pipe of at most max bytes (errno EFBIG
 * beyond; ENODEV for a device such as /dev/zero, EISDIR for a directory). */
char *read_file_max(const char *path, size_t max, size_t *len);
/* What a failed read_file_max's errno means, for a message (a static buffer). */
const char *read_file_error(int err, size_t max);

#endif
