/* The files a run will write and read, checked before any compute: present, distinct, in
 * writable directories, and not another run's. */
#ifndef MZ_PATHS_H
#define MZ_PATHS_H
#include "scene/scene.h"

#include <stdbool.h>

typedef struct mz_run_paths {
    const char *out, *ckpt; /* what the run writes (the sidecar and CKPT.tmp follow from them) */
    const char *resume;     /* --resume: the checkpoint read, or NULL */
    const char *scene;      /* the scene file read, or NULL (a resume reads the checkpoint) */
    const mz_scene *s;      /* for the mesh files its bodies read */
} mz_run_paths;

/* 0; or an exit code after reporting: MZ_EXIT_USAGE for an empty path or two roles on one file
 * (-o the scene, the checkpoint the output, ...), MZ_EXIT_RUNTIME for a directory that is
 * missing or not writable, a checkpoint path holding another output's checkpoint, or a
 * checkpoint another run is writing. A CKPT.tmp left by a killed checkpoint write is removed
 * with a note. */
int paths_check(const mz_run_paths *p);

/* Before each checkpoint: the file at ckpt is absent or out's own (another run may have taken
 * the path since the start). 0, or an exit code after reporting. */
int paths_checkpoint_ours(const char *ckpt, const char *out);

#endif
