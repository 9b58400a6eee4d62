/* The neighbour grid's launch profiling (grid.h: grid_collect_profile; grid_internal.h): each
 * launch's event is kept until the build's device time is summed. */
#include "device/grid.h"
#include "device/grid_internal.h"

#include "util/err.h"

#include <stdlib.h>

/* (grid_internal.h) */
cl_event *grid_next_event(mz_grid *g)
{
    if (!g->cl->profiling)
        return NULL;
    if (g->n_events == g->cap_events) {
        g->cap_events = g->cap_events ? 2 * g->cap_events : 64;
        g->events = xrealloc(g->events, g->cap_events * sizeof *g->events);
        g->event_kernels = xrealloc(g->event_kernels, g->cap_events * sizeof *g->event_kernels);
    }
    return &g->events[g->n_events];
}

/* (grid_internal.h) */
void grid_keep_event(mz_grid *g, cl_event *ev, const char *name)
{
    if (ev)
        g->event_kernels[g->n_events++] = name;
}

/* (grid_internal.h) */
void grid_release_events(mz_grid *g)
{
    for (size_t i = 0; i < g->n_events; i++)
        clReleaseEvent(g->events[i]);
    g->n_events = 0;
}

void grid_collect_profile(mz_grid *g)
{
    double ns = 0.0;
    size_t failed = 0;
    for (size_t i = 0; i < g->n_events; i++) {
        cl_ulong t0 = 0, t1 = 0;
        if (clGetEventProfilingInfo(g->events[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                    NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(g->events[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                                    NULL) == CL_SUCCESS)
            ns += (double)(t1 - t0);
        else
            failed++;
    }
    if (failed)
        mz_warn("neighbour grid: %zu of %zu launches had no profiling times", failed,
                g->n_events);
    if (g->n_events)
        g->last_build_ms = ns * 1e-6;
    grid_release_events(g);
}
