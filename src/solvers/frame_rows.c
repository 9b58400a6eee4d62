/* A frame's fields in id order on the device (frame_rows.h; kernels/common/frame_rows.cl). */
#include "solvers/frame_rows.h"

#include "device/kargs.h"
#include "util/err.h"

#include <string.h>

size_t frame_rows_bytes(unsigned fields, size_t n)
{
    size_t per = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (fields & MZ_FIELD_BIT(f))
            per += 4 * (size_t)mz_field_infos[f].components;
    return per * n;
}

int frame_rows_init(mz_frame_rows *r, mz_sim *sim, unsigned fields)
{
    memset(r, 0, sizeof *r);
    static const char *const names[] = {"rows_vec3", "rows_scalar", NULL};
    cl_kernel *const kernels[] = {&r->vec3, &r->scalar};
    r->program = sim_build_kernels(sim, "common/frame_rows.cl", names, kernels);
    r->n = sim->n;
    size_t at = 0;
    for (int f = 0; f < MZ_FIELD_COUNT; f++)
        if (fields & MZ_FIELD_BIT(f)) {
            r->first[f] = at;
            at += (size_t)mz_field_infos[f].components * r->n;
        }
    r->rows = mz_cl_buffer(sim->cl, CL_MEM_READ_WRITE, frame_rows_bytes(fields, r->n), NULL,
                           "clCreateBuffer(frame rows)");
    return r->program && r->rows ? 0 : -1;
}

bool frame_rows_enqueue(mz_frame_rows *r, mz_sim *sim, unsigned fields, cl_event wait)
{
    cl_uint n = (cl_uint)r->n;
    bool ok = true;
    for (int f = 0; ok && f < MZ_FIELD_COUNT; f++) {
        if (!(fields & MZ_FIELD_BIT(f)))
            continue;
        bool vec = mz_field_infos[f].components == 3;
        cl_kernel k = vec ? r->vec3 : r->scalar;
        cl_ulong first = r->first[f];
        ok = KARGS(k, vec ? "rows_vec3" : "rows_scalar", A(n), A(sim->id), A(*sim->field[f]),
                   A(first), A(r->rows));
        size_t global = mz_cl_global(sim->cl, r->n);
        size_t *local = sim->cl->wg ? &sim->cl->wg : NULL;
        /* The first launch waits for the rows' last copy out (on another queue). */
        ok = ok && cl_ok(clEnqueueNDRangeKernel(sim->cl->queue, k, 1, NULL, &global, local,
                                                wait ? 1 : 0, wait ? &wait : NULL, NULL),
                         "clEnqueueNDRangeKernel(frame rows)");
        wait = NULL;
    }
    return ok;
}

void frame_rows_free(mz_frame_rows *r)
{
    mz_cl_release_kernels((cl_kernel[]){r->vec3, r->scalar}, 2);
    if (r->rows)
        clReleaseMemObject(r->rows);
    if (r->program)
        clReleaseProgram(r->program);
    memset(r, 0, sizeof *r);
}
