/* One writer per file: an exclusive lock held on an open file for as long as the descriptor is
 * open (flock: it belongs to the open file, so other descriptors of the same file, such as
 * HDF5's own, neither take nor drop it). Advisory: every mizu run takes it before writing. */
#ifndef MZ_FILELOCK_H
#define MZ_FILELOCK_H

/* Lock fd (open on path) without waiting. 0; or -1 after reporting that `what` at path is being
 * written by another process, named by its pid where the system says (Linux /proc/locks). */
int file_lock(int fd, const char *path, const char *what);

#endif
