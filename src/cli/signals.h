/* SIGINT and SIGTERM for batch runs. The first asks the run to stop at the next step, in the
 * middle of a frame if need be (it then writes a checkpoint and closes the output); a second ends the process at
 * once with 128 + signal, except while a frame or the run record is being written to the
 * output: then right after that write, so that the file stays readable. */
#ifndef MZ_SIGNALS_H
#define MZ_SIGNALS_H
#include <stdbool.h>

void signals_install(void);
void signals_restore(void);
/* The first signal received (SIGINT or SIGTERM), or 0. */
int signals_pending(void);
/* Around output writes: a second signal waits for the write to finish. */
void signals_writing(bool writing);
/* "SIGTERM" for SIGTERM. */
const char *signal_name(int sig);

#endif
