/* A frame's fields put in id order on the device, as the output file's rows: one process on a
 * GPU reads back rows ready to write instead of device-ordered arrays and their ids, so the
 * writer does no reordering and the copy carries 3 floats a vector, not 4 and an id. The rows
 * live in one device buffer (every written field's, one after another), made only where the
 * device has room for it (frame_rows_fits). */
#ifndef MZ_FRAME_ROWS_H
#define MZ_FRAME_ROWS_H
#include "solvers/sim.h"

typedef struct mz_frame_rows {
    cl_program program;
    cl_kernel vec3, scalar;
    cl_mem rows;
    size_t first[MZ_FIELD_COUNT]; /* floats into rows where each written field's rows start */
    size_t n;                     /* rows of each field */
} mz_frame_rows;

/* Bytes of the rows of n particles' fields (an MZ_FIELD_BIT mask). */
size_t frame_rows_bytes(unsigned fields, size_t n);
/* Make the kernels and the buffer for sim's n (> 0) particles. 0, or -1 after reporting. */
int frame_rows_init(mz_frame_rows *r, mz_sim *sim, unsigned fields);
/* Queue sim's fields into the rows, after `wait` (an event, or NULL). false after reporting. */
bool frame_rows_enqueue(mz_frame_rows *r, mz_sim *sim, unsigned fields, cl_event wait);
void frame_rows_free(mz_frame_rows *r);

#endif
