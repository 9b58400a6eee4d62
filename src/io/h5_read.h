/* Reading HDF5 files mizu wrote, for the commands that look at them (mizu info, mizu compare)
 * and for io/ itself: opening without a lock and asking whether a path exists. */
#ifndef MZ_H5_READ_H
#define MZ_H5_READ_H
#include <hdf5.h>

#include <stdbool.h>

/* H5Pset_file_locking came with HDF5 1.10.7 and 1.12.1. */
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 11, 0)) || H5_VERSION_GE(1, 12, 1)
#define MZ_FILE_LOCKING_OFF(fapl) H5Pset_file_locking(fapl, 0, 1)
#else
#define MZ_FILE_LOCKING_OFF(fapl) 0
#endif

/* PATH opened read-only without HDF5's lock (a run may still be writing it): the file, or -1. */
hid_t h5_open_unlocked(const char *path);
/* Whether the absolute PATH names an object, checking each level (H5Lexists fails, rather than
 * saying no, when a parent is missing). */
bool h5_exists(hid_t file, const char *path);
/* The dimensions of open dataset d (rank at most 3): its rank, or -1. */
int h5_dims(hid_t d, hsize_t dims[3]);

#endif
