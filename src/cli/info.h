/* `mizu info OUT.h5`: a human summary of an output file. */
#ifndef MZ_INFO_H
#define MZ_INFO_H
#include <stdio.h>

/* Print what PATH holds (creator, build, scene, particles, frames, fields, whether the run
 * completed, the last frame's bounding box, file size) to OUT. 0, or 1 after reporting why
 * the file cannot be read (missing, not HDF5, not a mizu output file). */
int info_print(const char *path, FILE *out);

#endif
