/* Kernel programs: sources embedded at build time (or read from --kernel-dir), `#include "x.clh"`
 * resolved on the host so both ways behave alike, build log printed on failure. */
#ifndef MZ_CL_PROG_H
#define MZ_CL_PROG_H
#include "device/cl_ctx.h"

typedef struct mz_kernel_source {
    const char *name; /* file name under kernels/ */
    const char *text;
} mz_kernel_source;

/* Generated from kernels/ by scripts/embed-kernels.sh; ends with { 0, 0 }. */
extern const mz_kernel_source mz_embedded_kernels[];

/* Options every program is built with (recorded in /parameters/build). No fast-math flags:
 * results must not depend on the compiler's whim. */
#define MZ_CL_BUILD_OPTIONS "-cl-std=CL1.2"

/* Read kernels from DIR instead of the embedded copies (development); NULL restores them. */
void cl_prog_set_kernel_dir(const char *dir);
const char *cl_prog_kernel_dir(void);

/* The full text of a kernel file with its includes expanded; NULL after reporting the error. */
char *cl_prog_source(const char *file);

/* Build FILE with MZ_CL_BUILD_OPTIONS plus DEFINES (may be NULL); exact: it asks for correctly
 * rounded division and square root (mz_cl.exact_divide decides). NULL after reporting why, with
 * the compiler's log on a build failure. */
cl_program cl_prog_build(mz_cl *cl, const char *file, const char *defines, bool exact);

/* A kernel from a program; NULL after reporting. */
cl_kernel cl_prog_kernel(cl_program p, const char *name);

#endif
