#include "solvers/pace.h"

#include "util/clock.h"

/* A chunk's target wall time: long enough that the waits cost nothing, short enough that two
 * chunks queued are well under the two seconds a stop may take. */
#define CHUNK_MIN_S 0.05
#define CHUNK_MAX_S 0.2
#define CHUNK_MAX_STEPS (1L << 20)

bool pace_step(mz_pace *p, cl_command_queue q)
{
    if (!p->stop_requested)
        return false;
    if (p->chunk == 0) {
        p->chunk = 1;
        p->last = now_seconds();
    }
    if (++p->queued >= p->chunk) {
        if (p->marker) {
            /* The device is done with the chunk before; the one just queued keeps it busy. */
            clWaitForEvents(1, &p->marker);
            clReleaseEvent(p->marker);
            p->marker = NULL;
            double t = now_seconds(), took = t - p->last;
            p->last = t;
            if (took < CHUNK_MIN_S && p->chunk < CHUNK_MAX_STEPS)
                p->chunk *= 2;
            else if (took > CHUNK_MAX_S && p->chunk > 1)
                p->chunk /= 2;
        }
        if (clEnqueueMarkerWithWaitList(q, 0, NULL, &p->marker) != CL_SUCCESS)
            p->marker = NULL;
        clFlush(q);
        p->queued = 0;
    }
    return p->stop_requested();
}

void pace_release(mz_pace *p)
{
    if (p->marker)
        clReleaseEvent(p->marker);
    p->marker = NULL;
    p->chunk = p->queued = 0;
}
