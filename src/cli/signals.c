/* Signal handling (signals.h). The handler only sets flags, writes and exits: all of it
 * async-signal-safe. */
#include "cli/signals.h"

#include "dist/dist.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t first_signal, second_signal, in_write;
static volatile sig_atomic_t quiet; /* a rank other than 0 under mpirun: rank 0 says it */
static struct sigaction saved_int, saved_term;

static void say(const char *s)
{
    if (!quiet)
        (void)!write(STDERR_FILENO, s, strlen(s));
}

static void on_signal(int sig)
{
    if (!first_signal) {
        first_signal = sig;
        say("\nmizu: stopping at the next step (a checkpoint follows); signal again to abort at "
            "once\n");
        return;
    }
    second_signal = sig;
    if (!in_write) {
        say("mizu: aborted; the output keeps the frames written so far\n");
        _exit(128 + sig);
    }
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* writes and waits go on; the loop looks at the flag */
    first_signal = second_signal = in_write = 0;
    quiet = dist_rank() != 0;
    sigaction(SIGINT, &sa, &saved_int);
    sigaction(SIGTERM, &sa, &saved_term);
}

void signals_restore(void)
{
    sigaction(SIGINT, &saved_int, NULL);
    sigaction(SIGTERM, &saved_term, NULL);
}

int signals_pending(void) { return first_signal; }

void signals_writing(bool writing)
{
    in_write = writing;
    if (!writing && second_signal) {
        say("mizu: aborted; the output keeps the frames written so far\n");
        _exit(128 + second_signal);
    }
}

const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
