/* Progress on stderr: a live line on a terminal, one plain line per 10% otherwise (batch logs). */
#ifndef MZ_PROGRESS_H
#define MZ_PROGRESS_H
#include <stdbool.h>

typedef struct mz_progress {
    bool enabled, tty;
    long total;        /* frames */
    double t_start;    /* wall clock at start */
    double t_last;     /* last terminal redraw */
    int last_tenth;    /* last 10% mark printed */
    double particles;  /* for particle-steps/s */
} mz_progress;

void progress_start(mz_progress *p, bool enabled, long total_frames, double particles);
/* After frame `frame` of the total, at simulated time sim_time, with steps solver steps taken. */
void progress_update(mz_progress *p, long frame, double sim_time, long steps);
void progress_finish(mz_progress *p);

#endif
