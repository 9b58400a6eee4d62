/* realpath is X/Open */
#define _XOPEN_SOURCE 700

#include "cli/paths.h"

#include "io/checkpoint.h"
#include "io/h5_out.h"
#include "scene/bodies.h"
#include "util/err.h"
#include "util/filelock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One file the run touches: its role for messages, the path as given, the directory it is in. */
typedef struct role {
    const char *what;
    char *path;
    char *dir;   /* the real path of its directory; NULL when that does not exist */
    char *canon; /* dir + "/" + the file's name */
    int dir_errno; /* why dir is NULL */
    bool writes;
} role;

static void role_set(role *r, const char *what, const char *path, bool writes)
{
    r->what = what;
    r->path = xstrdup(path);
    r->writes = writes;
    char *copy = xstrdup(path), *slash = strrchr(copy, '/');
    const char *name = slash ? slash + 1 : copy;
    if (slash)
        slash[slash == copy] = '\0'; /* "/x" keeps "/" */
    char real[PATH_MAX];
    r->dir = realpath(slash ? copy : ".", real) ? xstrdup(real) : NULL;
    r->dir_errno = r->dir ? 0 : errno;
    mz_str c = {0};
    str_addf(&c, "%s/%s", r->dir ? r->dir : (slash ? copy : "."), name);
    r->canon = c.s;
    free(copy);
}

static void role_free(role *r)
{
    free(r->path);
    free(r->dir);
    free(r->canon);
}

/* The same file: the same name in the same real directory, or one inode under two names. */
static bool same_file(const role *a, const role *b)
{
    struct stat x, y;
    if (!strcmp(a->canon, b->canon))
        return true;
    return stat(a->path, &x) == 0 && stat(b->path, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

static int check_roles(role *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if ((r[i].writes || r[j].writes) && same_file(&r[i], &r[j])) {
                mz_error("%s %s and %s %s are the same file: each needs its own path",
                         r[i].what, r[i].path, r[j].what, r[j].path);
                return MZ_EXIT_USAGE;
            }
    for (size_t i = 0; i < n; i++) {
        if (!r[i].writes)
            continue;
        if (!r[i].dir) {
            mz_error("cannot write %s %s: its directory: %s", r[i].what, r[i].path,
                     strerror(r[i].dir_errno));
            return MZ_EXIT_RUNTIME;
        }
        if (access(r[i].dir, W_OK) != 0) {
            mz_error("cannot write %s %s: %s: %s", r[i].what, r[i].path, r[i].dir,
                     strerror(errno));
            return MZ_EXIT_RUNTIME;
        }
    }
    return 0;
}

/* An existing checkpoint at ckpt may be replaced only when it is this output's (a rerun, or
 * this run's own). */
static int check_old_checkpoint(const role *ckpt, const role *out, const char *resume)
{
    struct stat st;
    if (stat(ckpt->path, &st) != 0 || (resume && !strcmp(resume, ckpt->path)))
        return 0;
    char *owner = NULL;
    int rc = 0;
    if (!checkpoint_peek(ckpt->path, &owner)) {
        mz_error("checkpoint path %s exists and is not a mizu checkpoint: not replacing it "
                 "(give --checkpoint another path)", ckpt->path);
        rc = MZ_EXIT_RUNTIME;
    } else {
        role theirs;
        role_set(&theirs, "output", owner, false);
        if (!same_file(&theirs, out)) {
            mz_error("checkpoint path %s holds the checkpoint of another output (%s): not "
                     "replacing it (give --checkpoint another path, or remove it)",
                     ckpt->path, owner);
            rc = MZ_EXIT_RUNTIME;
        }
        role_free(&theirs);
    }
    free(owner);
    return rc;
}

/* CKPT.tmp: another run writing it now (refused), or left by a killed write (removed). */
static int check_stale_tmp(const char *tmp)
{
    int fd = open(tmp, O_RDWR);
    if (fd < 0)
        return 0;
    int rc = file_lock(fd, tmp, "checkpoint");
    close(fd);
    if (rc != 0)
        return MZ_EXIT_RUNTIME;
    if (remove(tmp) == 0)
        fprintf(stderr, "mizu: note: removed %s, left by a checkpoint write that was stopped\n",
                tmp);
    return 0;
}

int paths_check(const mz_run_paths *p)
{
    if (!p->out[0] || !p->ckpt[0]) {
        mz_error("%s: the path is empty", !p->out[0] ? "-o" : "--checkpoint");
        return MZ_EXIT_USAGE;
    }
    char *xdmf = h5_out_xdmf_path(p->out);
    mz_str tmp = {0};
    str_addf(&tmp, "%s.tmp", p->ckpt);
    size_t nb = bodies_count(p->s), n = 0;
    role *r = xcalloc(6 + nb, sizeof *r);
    role_set(&r[n++], "the output", p->out, true);
    role_set(&r[n++], "the output's sidecar", xdmf, true);
    role_set(&r[n++], "the checkpoint", p->ckpt, true);
    role_set(&r[n++], "the checkpoint's temporary file", tmp.s, true);
    if (p->scene)
        role_set(&r[n++], "the scene", p->scene, false);
    for (size_t k = 0; k < nb; k++) {
        const mz_body *b = bodies_get(p->s, k);
        if (!b->obj)
            continue;
        char *file = bodies_obj_file(p->s, b);
        role_set(&r[n++], "a mesh", file, false);
        free(file);
    }
    int rc = check_roles(r, n);
    if (rc == 0)
        rc = check_old_checkpoint(&r[2], &r[0], p->resume);
    if (rc == 0)
        rc = check_stale_tmp(tmp.s);
    for (size_t i = 0; i < n; i++)
        role_free(&r[i]);
    free(r);
    free(xdmf);
    str_free(&tmp);
    return rc;
}

int paths_checkpoint_ours(const char *ckpt, const char *out)
{
    role c, o;
    role_set(&c, "the checkpoint", ckpt, true);
    role_set(&o, "the output", out, true);
    int rc = check_old_checkpoint(&c, &o, NULL);
    role_free(&c);
    role_free(&o);
    return rc;
}
