#include "cli/progress.h"

#include "util/clock.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

void progress_start(mz_progress *p, bool enabled, long total_frames, double particles)
{
    *p = (mz_progress){.enabled = enabled, .tty = isatty(2) == 1, .total = total_frames,
                       .t_start = now_seconds(), .particles = particles};
}

static void eta_text(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void progress_update(mz_progress *p, long frame, double sim_time, long steps)
{
    if (!p->enabled || p->total <= 0)
        return;
    double now = now_seconds(), elapsed = now - p->t_start;
    double rate = elapsed > 0 ? p->particles * (double)steps / elapsed : 0;
    char eta[32];
    eta_text(frame > 0 ? elapsed * (double)(p->total - frame) / (double)frame : 0, eta,
             sizeof eta);
    if (p->tty) {
        if (frame < p->total && now - p->t_last < 0.1)
            return;
        p->t_last = now;
        enum { WIDTH = 24 };
        char bar[WIDTH + 1];
        int filled = (int)(WIDTH * frame / p->total);
        for (int i = 0; i < WIDTH; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(stderr, "\r[%s] frame %ld/%ld  t=%.3f s  %.3g particle-steps/s  ETA %s \033[K",
                bar, frame, p->total, sim_time, rate, eta);
        fflush(stderr);
    } else {
        int tenth = (int)(10 * frame / p->total);
        if (tenth <= p->last_tenth)
            return;
        p->last_tenth = tenth;
        fprintf(stderr, "mizu: frame %ld/%ld (%d%%), t=%.3f s, %.3g particle-steps/s, ETA %s\n",
                frame, p->total, 10 * tenth, sim_time, rate, eta);
    }
}

void progress_finish(mz_progress *p)
{
    if (p->enabled && p->tty)
        fputc('\n', stderr);
}
