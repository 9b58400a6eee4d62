#include "device/kargs.h"

#include "util/err.h"

bool set_kernel_args(cl_kernel k, const char *name, size_t first, const mz_karg *args,
                     size_t count)
{
    for (size_t i = 0; i < count; i++) {
        cl_int s = clSetKernelArg(k, (cl_uint)(first + i), args[i].size, args[i].ptr);
        if (s != CL_SUCCESS) {
            mz_error("clSetKernelArg(%s, argument %zu) failed: %s (%d)", name, first + i,
                     cl_status_name(s), (int)s);
            return false;
        }
    }
    return true;
}
