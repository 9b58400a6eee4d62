/* Stops between two steps of a frame (issue 17): a run asked to stop (SIGTERM) is answered
 * within about a second even when one frame takes minutes, and its checkpoint is taken at the
 * step it stopped on.
 *
 * Steps are queued without waiting, so the host could run frames ahead of the device and a
 * stop seen by the host would wait for all of them. After each step pace_step keeps the
 * device at most two chunks of steps ahead: a marker closes every chunk, and the host waits
 * for the marker before it. A chunk is sized to take a tenth of a second or so (doubled or
 * halved as it is measured), so the device always has a chunk queued and the waits cost
 * nothing measurable. Without a stop_requested callback nothing is paced (tests, benchmarks). */
#ifndef MZ_PACE_H
#define MZ_PACE_H
#include "device/cl_ctx.h"

#include <stdbool.h>

typedef struct mz_pace {
    bool (*stop_requested)(void); /* NULL: never stop in the middle of a frame */
    cl_event marker;              /* closes the chunk before the one being queued */
    long chunk, queued;           /* steps per chunk; steps queued since the marker */
    double last;                  /* when the host last waited for a marker */
} mz_pace;

/* After each step: whether to stop there (the callback said so). */
bool pace_step(mz_pace *p, cl_command_queue q);
void pace_release(mz_pace *p);

#endif
