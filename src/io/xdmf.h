/* The XDMF 2 sidecar of an output file (OUT.xdmf beside OUT.h5), for ParaView and VisIt.
 *
 * One temporal collection of frames. Without triangles or wall particles each frame is a
 * uniform grid of N Polyvertex points (geometry: the frame's view /xdmf/position/<frame>, see
 * h5_views.c) with the written fields, body and phase as node attributes. Otherwise each frame
 * is a spatial collection: "particles" (the points, as above), "surfaces" (TopologyType
 * Triangle on the same geometry, connectivity /connectivity/triangles, the same attributes) when
 * there are triangles, "boundary" (the points of /particles/boundary/position, the same every
 * frame) when there are wall particles that stay put, and "moving_boundary" (the frame's view
 * /xdmf/moving_boundary/<frame> of /particles/moving_boundary/position) when colliders move.
 *
 * Appending a frame rewrites only the closing tags, O(1) a frame, and the file is well-formed
 * XML after every call. Disk space for each append is reserved before writing, so a full disk
 * fails the append cleanly and the file keeps every frame before. */
#ifndef MZ_XDMF_H
#define MZ_XDMF_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct mz_xdmf mz_xdmf;

/* The sidecar's path for an output path: "out.h5" -> "out.xdmf" (the last dot of the basename,
 * leading dots aside, as Python's os.path.splitext). Caller frees. */
char *xdmf_path_for(const char *h5_path);

/* Create or truncate xdmf_path and write the empty collection. The sidecar names the HDF5 file
 * by h5_path's basename, so the two must stay in one directory. n particles, fields a
 * MZ_FIELD_BIT mask (position is always there), n_triangles 0: no surfaces, n_boundary 0: no
 * static wall particles (/particles/boundary/position, a grid when present), n_moving 0: no
 * moving ones (a grid of the frame's view when present). NULL after reporting why (mz_error),
 * leaving no file behind. */
mz_xdmf *xdmf_create(const char *xdmf_path, const char *h5_path, size_t n, unsigned fields,
                     size_t n_triangles, size_t n_boundary, size_t n_moving);

/* Append frame `frame` (its row in the HDF5 series, which must already be on disk) with its step
 * and time. 0, or -1 after reporting (the frames before stay). */
int xdmf_append_frame(mz_xdmf *x, long frame, long step, double time);

/* Close and free x (NULL: nothing). discard: also remove the file, quietly (a failed creation
 * of the output). 0, or -1 after reporting a failed close. */
int xdmf_close(mz_xdmf *x, int discard);

/* Take disk space for len bytes at offset of fd before writing them, so that a full disk fails
 * before anything is half written. 0, or an errno. Filesystems that cannot reserve
 * (EINVAL/EOPNOTSUPP) count as success: then the write itself has to tell. Shared with
 * h5_file.c. */
int xdmf_reserve_space(int fd, off_t offset, off_t len);

#endif
