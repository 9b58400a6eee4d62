/* Reading HDF5 files mizu wrote, for the commands that look at them (mizu info, mizu compare)
 * and for io/ itself: opening without a lock and asking whether a path exists. */
#ifndef MZ_H5_READ_H
#define MZ_H5_READ_H
#include <hdf5.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* H5Pset_file_locking came with HDF5 1.10.7 and 1.12.1. */
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 11, 0)) || H5_VERSION_GE(1, 12, 1)
#define MZ_FILE_LOCKING_OFF(fapl) H5Pset_file_locking(fapl, 0, 1)
#else
#define MZ_FILE_LOCKING_OFF(fapl) 0
/* A scalar string dataset, or attribute NAME of object OBJ (fixed or variable length, ASCII or
 * UTF-8): malloc'd, or NULL when absent or not a string. */
char *h5_read_str(hid_t file, const char *name);
char *h5_read_str_attr(hid_t file, const char *obj, const char *name);
/* Record RECORD of a frame series' value dataset NAME ([records, n] or [records, n, comps]) as
 * floats: 0, or -1 when absent or of another shape. */
int h5_read_record(hid_t file, const char *name, hsize_t record, int comps, size_t n, float *out);
/* Element i of a 1-D dataset (a series' step or time) as a double: 1, or 0 when absent. */
int h5_read_element(hid_t file, const char *name, hsize_t i, double *v);
/* A whole integer dataset of COUNT elements (ids, phases, triangles) as uint32: 0 or -1. */
int h5_read_uints(hid_t file, const char *name, size_t count, uint32_t *out);

#endif

/* PATH opened read-only without HDF5's lock (a run may still be writing it): the file, or -1. */
hid_t h5_open_unlocked(const char *path);
/* Whether the absolute PATH names an object, checking each level (H5Lexists fails, rather than
 * saying no, when a parent is missing). */
bool h5_exists(hid_t file, const char *path);
/* The dimensions of open dataset d (rank at most 3): its rank, or -1. */
int h5_dims(hid_t d, hsize_t dims[3]);
/* The same for dataset NAME of file: its rank, or -1 when absent. */
int h5_dataset_dims(hid_t file, const char *name, hsize_t dims[3]);

/* A scalar string dataset, or attribute NAME of object OBJ (fixed or variable length, ASCII or
 * UTF-8): malloc'd, or NULL when absent or not a string. */
char *h5_read_str(hid_t file, const char *name);
char *h5_read_str_attr(hid_t file, const char *obj, const char *name);
/* Record RECORD of a frame series' value dataset NAME ([records, n] or [records, n, comps]) as
 * floats: 0, or -1 when absent or of another shape. */
int h5_read_record(hid_t file, const char *name, hsize_t record, int comps, size_t n, float *out);
/* Element i of a 1-D dataset (a series' step or time) as a double: 1, or 0 when absent. */
int h5_read_element(hid_t file, const char *name, hsize_t i, double *v);
/* A whole integer dataset of COUNT elements (ids, phases, triangles) as uint32: 0 or -1. */
int h5_read_uints(hid_t file, const char *name, size_t count, uint32_t *out);

#endif
