/* The wall clock for timings, progress and pacing. */
#ifndef MZ_CLOCK_H
#define MZ_CLOCK_H

double now_seconds(void); /* monotonic, in seconds */

#endif
