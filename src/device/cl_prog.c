#include "device/cl_prog.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *kernel_dir;

void cl_prog_set_kernel_dir(const char *dir) { kernel_dir = dir; }
const char *cl_prog_kernel_dir(void) { return kernel_dir; }

static char *load_one(const char *name)
{
    if (kernel_dir) {
        mz_str path = {0};
        str_addf(&path, "%s/%s", kernel_dir, name);
        char *text = read_file(path.s, NULL);
        if (!text)
            mz_error("cannot read kernel source %s: %s", path.s, strerror(errno));
        str_free(&path);
        return text;
    }
    for (const mz_kernel_source *k = mz_embedded_kernels; k->name; k++)
        if (!strcmp(k->name, name))
            return xstrdup(k->text);
    mz_error("no embedded kernel source named %s", name);
    return NULL;
}

/* Expand lines of the form  #include "name.clh"  (each file once), depth-first. */
static bool expand(const char *name, mz_str *out, char ***seen, size_t *nseen, int depth)
{
    for (size_t i = 0; i < *nseen; i++)
        if (!strcmp((*seen)[i], name))
            return true;
    if (depth > 16) {
        mz_error("kernel includes nested too deeply at %s", name);
        return false;
    }
    *seen = xrealloc(*seen, (*nseen + 1) * sizeof **seen);
    (*seen)[(*nseen)++] = xstrdup(name);
    char *text = load_one(name);
    if (!text)
        return false;
    bool ok = true;
    char *line = text;
    while (ok && *line) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char inc[256];
        if (sscanf(line, " #include \"%255[^\"]\"", inc) == 1) {
            str_addf(out, "/* begin %s */\n", inc);
            ok = expand(inc, out, seen, nseen, depth + 1);
            str_addf(out, "/* end %s */\n", inc);
        } else {
            str_addf(out, "%.*s\n", (int)len, line);
        }
        line = end ? end + 1 : line + len;
    }
    free(text);
    return ok;
}

char *cl_prog_source(const char *file)
{
    mz_str out = {0};
    char **seen = NULL;
    size_t nseen = 0;
    bool ok = expand(file, &out, &seen, &nseen, 0);
    for (size_t i = 0; i < nseen; i++)
        free(seen[i]);
    free(seen);
    if (!ok) {
        str_free(&out);
        return NULL;
    }
    return out.s;
}

cl_program cl_prog_build(mz_cl *cl, const char *file, const char *defines, bool exact)
{
    char *src = cl_prog_source(file);
    if (!src)
        return NULL;
    cl_int s;
    const char *text = src;
    cl_program p = clCreateProgramWithSource(cl->ctx, 1, &text, NULL, &s);
    free(src);
    mz_str what = {0};
    str_addf(&what, "clCreateProgramWithSource(%s)", file);
    bool created = cl_ok(s, what.s);
    str_free(&what);
    if (!created)
        return NULL;
    mz_str opts = {0};
    bool rounded = cl->divide_rounded && (cl->exact_divide == 1 || (cl->exact_divide < 0 && exact));
    str_addf(&opts,
             "%s%s -DMZ_LANES=%d -DMZ_LIST_ROWS=%d -DMZ_LIST_SUMS=%d -DMZ_ROWS_FIRST=%d %s",
             MZ_CL_BUILD_OPTIONS, rounded ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             cl->lanes, cl->list_rows, cl->list_sums, cl->rows_first, defines ? defines : "");
    s = clBuildProgram(p, 1, &cl->device, opts.s, NULL, NULL);
    if (s != CL_SUCCESS) {
        size_t n = 0;
        clGetProgramBuildInfo(p, cl->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
        char *log = xcalloc(n + 1, 1);
        clGetProgramBuildInfo(p, cl->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
        mz_error("building kernels/%s (options: %s) failed: %s (%d)\n%s", file, opts.s,
                 cl_status_name(s), (int)s, log);
        free(log);
        clReleaseProgram(p);
        p = NULL;
    }
    str_free(&opts);
    return p;
}

cl_kernel cl_prog_kernel(cl_program p, const char *name)
{
    cl_int s;
    cl_kernel k = clCreateKernel(p, name, &s);
    mz_str what = {0};
    str_addf(&what, "clCreateKernel(%s)", name);
    bool ok = cl_ok(s, what.s);
    str_free(&what);
    return ok ? k : NULL;
}
