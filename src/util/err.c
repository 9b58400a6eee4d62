#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Under mpirun (dist/): the rank that errors name, and whether this rank's warnings are
 * dropped (every rank would print the same ones). -1: a single process. */
static int msg_rank = -1;
static int msg_quiet_warnings;

void mz_msg_rank(int rank, int quiet_warnings)
{
    msg_rank = rank;
    msg_quiet_warnings = quiet_warnings;
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
    if (msg_quiet_warnings && kind[0] == 'w')
        return;
    if (msg_rank >= 0 && kind[0] == 'e') /* warnings come from rank 0 alone */
        fprintf(stderr, "mizu: rank %d: %s: ", msg_rank, kind);
    else
        fprintf(stderr, "mizu: %s: ", kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void mz_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
}

void mz_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("warning", fmt, ap);
    va_end(ap);
}

static void str_vaddf(mz_str *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void str_addf(mz_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    str_vaddf(b, fmt, ap);
    va_end(ap);
}

void str_free(mz_str *b)
{
    free(b->s);
    *b = (mz_str){0};
}

void diag_add(mz_diag *d, const char *fmt, ...)
{
    if (d->count >= MZ_DIAG_MAX) {
        d->dropped++;
        return;
    }
    mz_str m = {0};
    va_list ap;
    va_start(ap, fmt);
    str_vaddf(&m, fmt, ap);
    va_end(ap);
    if (d->count == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 8;
        d->msgs = xrealloc(d->msgs, d->cap * sizeof *d->msgs);
    }
    d->msgs[d->count++] = m.s ? m.s : xstrdup("");
}

void diag_print(const mz_diag *d, const char *prefix)
{
    if (msg_quiet_warnings) /* the same scene errors as rank 0's */
        return;
    for (size_t i = 0; i < d->count; i++) {
        if (prefix)
            fprintf(stderr, "%s: %s\n", prefix, d->msgs[i]);
        else
            fprintf(stderr, "%s\n", d->msgs[i]);
    }
    if (d->dropped)
        fprintf(stderr, "%s%s... and %zu more errors\n", prefix ? prefix : "", prefix ? ": " : "",
                d->dropped);
}

void diag_free(mz_diag *d)
{
    for (size_t i = 0; i < d->count; i++)
        free(d->msgs[i]);
    free(d->msgs);
    *d = (mz_diag){0};
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "mizu: error: out of host memory (asked for %zu bytes)\n", n);
    exit(MZ_EXIT_RUNTIME);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

char *read_file(const char *path, size_t *len)
{
    return read_file_max(path, SIZE_MAX - 1, len);
}

char *read_file_max(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    /* A device (/dev/zero) never ends and a directory never starts: only files and pipes. */
    struct stat st;
    int err = fstat(fileno(f), &st) != 0                     ? errno
              : S_ISDIR(st.st_mode)                          ? EISDIR
              : !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) ? ENODEV
              : S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max ? EFBIG
                                                                           : 0;
    if (err) {
        fclose(f);
        errno = err;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max)
            break;
        if (n + 1 < cap)
            break;
        cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        buf = xrealloc(buf, cap);
    }
    int failed = ferror(f);
    int saved = errno;
    fclose(f);
    if (failed || n > max) {
        free(buf);
        errno = failed ? (saved ? saved : EIO) : EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

const char *read_file_error(int err, size_t max)
{
    static char msg[96];
    if (err == EFBIG)
        snprintf(msg, sizeof msg, "larger than the %zu MiB allowed", max >> 20);
    else if (err == ENODEV)
        snprintf(msg, sizeof msg, "not a regular file or a pipe");
    else
        snprintf(msg, sizeof msg, "%s", strerror(err));
    return msg;
}
