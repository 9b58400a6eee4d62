/* The commands that take a scene: `mizu run` (the frame loop) and `mizu check`. */
#ifndef MZ_RUN_H
#define MZ_RUN_H
#include <stdbool.h>
#include <stddef.h>

typedef struct mz_run_opts {
    const char *scene_path;
    const char *out_path;   /* -o; NULL: output.path, then the scene's name with .h5 */
    long frames;            /* --frames; 0: the scene's simulation.frames */
    const char *device;     /* --device; NULL: $MIZU_DEVICE, first GPU, first CPU */
    const char *const *overrides; /* --set PATH=VALUE, in order */
    size_t n_overrides;
    bool quiet, profile;
} mz_run_opts;

/* Each returns the process exit code: 0, 1 (runtime failure) or 2 (usage or scene error). */
int cmd_run(const mz_run_opts *o);
int cmd_check(const mz_run_opts *o);

#endif
