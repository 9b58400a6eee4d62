/* mizu: command line. Exit codes: 0 ok, 1 runtime failure, 2 usage or scene error (compare:
 * 0 match, 1 differs, 2 not comparable). */
#include "cli/compare.h"
#include "cli/info.h"
#include "cli/render.h"
#include "cli/run.h"
#include "dist/dist.h"
#include "device/cl_ctx.h"
#include "device/cl_prog.h"
#include "io/h5_out.h"
#include "scene/scene.h"
#include "util/err.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: mizu run SCENE.json [-o OUT.h5] [--frames N | --until SECONDS] [--every N]\n"
    "                           [--fields F,...] [--device cpu|gpu|P:D] [--preview]\n"
    "                           [--set PATH=VALUE]... [--quiet] [--profile] [--kernel-dir DIR]\n"
    "                           [--checkpoint-every N] [--checkpoint CKPT.h5]\n"
    "       mizu run --resume CKPT.h5 [-o OUT.h5] [--frames N | --until SECONDS] [--device ...]\n"
    "                                 [--checkpoint-every N]\n"
    "       mizu check SCENE.json [--frames N | --until SECONDS] [--every N] [--fields F,...]\n"
    "                             [--set PATH=VALUE]... [--preview]\n"
    "       mizu devices\n"
    "       mizu info OUT.h5\n"
    "       mizu compare A.h5 B.h5 [--fields F,...] [--rtol R] [--atol A] [--frames K[:L]]\n"
    "                              [--json]\n"
    "       mizu render OUT.h5 [--frame K | --every N] [-o FILE.png | -o DIR] [--field F]\n"
    "                          [--view auto|front|side|top|iso] [--size WxH] [--range LO:HI]\n"
    "       mizu keys\n"
    "       mizu --help | --version\n";

static const char help_text[] =
    "\n"
    "mizu runs particle physics on OpenCL devices (any CPU through PoCL, GPUs through their\n"
    "driver) and writes every frame to HDF5 (H5MD layout) with an XDMF file for ParaView.\n"
    "\n"
    "commands:\n"
    "  run SCENE       simulate and write the frames\n"
    "  check SCENE     validate the scene; print particle counts and the memory estimate\n"
    "  devices         list OpenCL platforms and devices with their P:D numbers\n"
    "  info OUT.h5     summarise an output file\n"
    "  compare A B     whether two output files hold the same frames (CI regression runs)\n"
    "  render OUT.h5   draw frames to PNG: the last one, --frame K, or --every N into a folder\n"
    "  keys            list every scene key with its type, default, unit and meaning\n"
    "\n"
    "options for run and check:\n"
    "  -o, --output OUT.h5   output file (default: output.path, else SCENE's name with .h5)\n"
    "  -n, --frames N        simulate N frames (overrides simulation.frames and .duration)\n"
    "      --until SECONDS   simulate until this time (simulation.duration): the frames that\n"
    "                        reach it at the scene's fps\n"
    "      --every N         write every N-th frame (output.every)\n"
    "      --fields F,...    the fields to write, e.g. position,velocity (output.fields)\n"
    "  -d, --device SPEC     cpu, gpu, or P:D from `mizu devices`; default $MIZU_DEVICE,\n"
    "                        then the first GPU, then the first CPU\n"
    "  -s, --set PATH=VALUE  override a scene key, e.g. --set fluids[0].spacing=0.02\n"
    "  -q, --quiet           no progress and no summary (errors still print)\n"
    "  -p, --profile         add device time per solver stage to the summary\n"
    "      --kernel-dir DIR  read kernel sources from DIR instead of the built-in copies\n"
    "      --preview         draw the set-up (t = 0, coloured by kind) to OUT.preview.png\n"
    "                        before any compute\n"
    "\n"
    "batch runs (run only):\n"
    "      --checkpoint-every N   write the whole state every N frames (atomically replaced)\n"
    "      --checkpoint CKPT.h5   where (default: OUT.ckpt.h5 beside the output)\n"
    "      --resume CKPT.h5       go on from a checkpoint: the scene comes from it, the output\n"
    "                             is cut back to the checkpoint's frames and continued; the\n"
    "                             frames are bit-identical to an uninterrupted run on the same\n"
    "                             device. --frames N extends the run.\n"
    "options for compare (default: every field both files hold, all frames, identical bits):\n"
    "      --fields F,...     compare these fields only (position, velocity, ...)\n"
    "      --rtol R, --atol A a value a matches b when |a - b| <= A + R |b|\n"
    "      --frames K[:L]     frame records K..L (both included, from 0), or K to the end\n"
    "      --json             the results as one JSON object\n"
    "\n"
    "SIGINT/SIGTERM stop after the current frame with a checkpoint (exit 128+signal); a second\n"
    "signal aborts at once, keeping the frames written. A blow-up (NaN, Inf, or a speed beyond\n"
    "simulation.max_speed) stops the run with exit 1, naming the particle.\n"
    "\n"
    "exit status: 0 success, 1 runtime failure (device, I/O, blow-up, too big for the device),\n"
    "2 usage or scene error, 128+N stopped by signal N. compare: 0 match, 1 differs, 2 not\n"
    "comparable (or a usage error).\n"
    "See mizu(1) and docs/scene.md.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mizu: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return MZ_EXIT_USAGE;
}

enum {
    OPT_KERNEL_DIR = 1000, OPT_CHECKPOINT_EVERY, OPT_CHECKPOINT, OPT_RESUME,
    OPT_FIELDS, OPT_RTOL, OPT_ATOL, OPT_JSON, OPT_UNTIL, OPT_EVERY, OPT_PREVIEW
};

/* A whole number in [lo, hi] from an option's value, or -1. */
static long whole_number(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *end || end == s || v < lo || v > hi ? -1 : v;
}

static int scene_command(const char *cmd, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"frames", required_argument, 0, 'n'},
        {"device", required_argument, 0, 'd'}, {"set", required_argument, 0, 's'},
        {"quiet", no_argument, 0, 'q'},        {"profile", no_argument, 0, 'p'},
        {"kernel-dir", required_argument, 0, OPT_KERNEL_DIR},
        {"checkpoint-every", required_argument, 0, OPT_CHECKPOINT_EVERY},
        {"checkpoint", required_argument, 0, OPT_CHECKPOINT},
        {"resume", required_argument, 0, OPT_RESUME},
        {"until", required_argument, 0, OPT_UNTIL},
        {"every", required_argument, 0, OPT_EVERY},
        {"fields", required_argument, 0, OPT_FIELDS},
        {"preview", no_argument, 0, OPT_PREVIEW},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    mz_run_opts o = {0};
    const char **sets = xcalloc((size_t)argc, sizeof *sets);
    int rc = -1;
    int c;
    optind = 1;
    opterr = 0;
    while (rc < 0 && (c = getopt_long(argc, argv, ":o:n:d:s:qph", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_path = optarg; break;
        case 'd': o.device = optarg; break;
        case 's': sets[o.n_overrides++] = optarg; break;
        case 'q': o.quiet = true; break;
        case 'p': o.profile = true; break;
        case OPT_KERNEL_DIR: cl_prog_set_kernel_dir(optarg); break;
        case 'h': fputs(usage_text, stdout); fputs(help_text, stdout); rc = 0; break;
        case 'n':
            if ((o.frames = whole_number(optarg, 1, 1000000000L)) < 0)
                rc = usage_error("--frames wants a whole number >= 1 (got '%s')", optarg);
            break;
        case OPT_CHECKPOINT_EVERY:
            if ((o.checkpoint_every = whole_number(optarg, 1, 1000000000L)) < 0)
                rc = usage_error("--checkpoint-every wants a whole number of frames >= 1 (got "
                                 "'%s')", optarg);
            break;
        case OPT_UNTIL: {
            char *end;
            o.until = strtod(optarg, &end);
            if (*end || end == optarg || !isfinite(o.until) || o.until <= 0)
                rc = usage_error("--until wants a time in seconds > 0 (got '%s')", optarg);
            break;
        }
        case OPT_EVERY:
            if ((o.every = whole_number(optarg, 1, 1000000000L)) < 0)
                rc = usage_error("--every wants a whole number of frames >= 1 (got '%s')", optarg);
            break;
        case OPT_FIELDS: o.fields = optarg; break;
        case OPT_PREVIEW: o.preview = true; break;
        case OPT_CHECKPOINT: o.checkpoint_path = optarg; break;
        case OPT_RESUME: o.resume_path = optarg; break;
        case ':': rc = usage_error("option %s needs a value", argv[optind - 1]); break;
        default: rc = usage_error("unknown option %s", argv[optind - 1]); break;
        }
    }
    bool run = !strcmp(cmd, "run");
    if (rc < 0 && !run && (o.checkpoint_every || o.checkpoint_path || o.resume_path))
        rc = usage_error("%s", "--checkpoint-every, --checkpoint and --resume are for mizu run");
    if (rc < 0 && o.frames > 0 && o.until > 0)
        rc = usage_error("%s", "--frames and --until both say when to stop: give one");
    if (rc < 0 && o.resume_path && o.preview)
        rc = usage_error("%s", "--preview draws a new run's set-up: a resumed run has none");
    if (rc < 0 && o.resume_path && (o.every || o.fields))
        rc = usage_error("%s", "--every and --fields would change a resumed run's output: they "
                               "are for a new run");
    if (rc < 0 && o.resume_path) {
        if (optind != argc)
            rc = usage_error("--resume takes the scene from the checkpoint; drop '%s'",
                             argv[optind]);
        else if (o.n_overrides)
            rc = usage_error("%s", "--set cannot change the scene of a resumed run");
        else {
            o.scene_path = o.resume_path;
            rc = cmd_run(&o);
        }
    }
    if (rc < 0) {
        if (optind != argc - 1)
            rc = usage_error(optind >= argc ? "%s needs a scene file" : "%s takes one scene file",
                             cmd);
        else {
            o.scene_path = argv[optind];
            o.overrides = sets;
            rc = run ? cmd_run(&o) : cmd_check(&o);
        }
    }
    free(sets);
    return rc;
}

/* A tolerance: a finite number >= 0, or -1. */
static double tolerance(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    return *end || end == s || !isfinite(v) || v < 0 ? -1 : v;
}

/* compare's --frames K, K:L or K: (K to the end) into o->first, o->last; -1 when malformed. */
static int frame_records(const char *s, mz_compare_opts *o)
{
    const char *colon = strchr(s, ':');
    char first[32];
    if (!colon)
        return (o->first = o->last = whole_number(s, 0, 1000000000L)) < 0 ? -1 : 0;
    if ((size_t)(colon - s) >= sizeof first)
        return -1;
    memcpy(first, s, (size_t)(colon - s));
    first[colon - s] = '\0';
    o->first = whole_number(first, 0, 1000000000L);
    o->last = colon[1] ? whole_number(colon + 1, 0, 1000000000L) : -1;
    return o->first < 0 || (colon[1] && (o->last < 0 || o->last < o->first)) ? -1 : 0;
}

static int compare_command(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"fields", required_argument, 0, OPT_FIELDS}, {"rtol", required_argument, 0, OPT_RTOL},
        {"atol", required_argument, 0, OPT_ATOL},     {"frames", required_argument, 0, 'n'},
        {"json", no_argument, 0, OPT_JSON},           {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    mz_compare_opts o = {.last = -1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_FIELDS: o.fields = optarg; break;
        case OPT_JSON: o.json = true; break;
        case 'h': fputs(usage_text, stdout); fputs(help_text, stdout); return MZ_EXIT_OK;
        case OPT_RTOL:
        case OPT_ATOL: {
            double v = tolerance(optarg);
            if (v < 0)
                return usage_error(c == OPT_RTOL ? "--rtol wants a number >= 0 (got '%s')"
                                                 : "--atol wants a number >= 0 (got '%s')",
                                   optarg);
            *(c == OPT_RTOL ? &o.rtol : &o.atol) = v;
            o.tolerance = true; /* the other stays 0 */
            break;
        }
        case 'n':
            if (frame_records(optarg, &o) < 0)
                return usage_error("--frames wants K, K:L (K <= L) or K: with K and L frame "
                                   "numbers from 0 (got '%s')", optarg);
            break;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return usage_error("%s", "compare takes two output files");
    o.path[0] = argv[optind];
    o.path[1] = argv[optind + 1];
    return compare_files(&o, stdout);
}

static int command(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "no command given");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        fputs(help_text, stdout);
        return MZ_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("mizu %s (%s)\n", MIZU_VERSION, MIZU_GIT_REV);
        return MZ_EXIT_OK;
    }
    if (!strcmp(cmd, "run") || !strcmp(cmd, "check"))
        return scene_command(cmd, argc - 1, argv + 1);
    if (!strcmp(cmd, "devices"))
        return mz_cl_list(stdout) > 0 ? MZ_EXIT_OK : MZ_EXIT_RUNTIME;
    if (!strcmp(cmd, "keys")) {
        scene_print_keys(stdout);
        return MZ_EXIT_OK;
    }
    if (!strcmp(cmd, "info")) {
        if (argc != 3)
            return usage_error("%s", "info takes one output file");
        return info_print(argv[2], stdout);
    }
    if (!strcmp(cmd, "compare"))
        return compare_command(argc - 1, argv + 1);
    if (!strcmp(cmd, "render"))
        return render_command(argc - 1, argv + 1);
    return usage_error("unknown command '%s'", cmd);
}

/* Under mpirun every rank runs the command: `run` is one simulation over all of them; other
 * commands run on rank 0 alone, the others take its exit code. */
int main(int argc, char **argv)
{
    h5_out_no_exit_handler();
    if (dist_init(&argc, &argv) != 0)
        return MZ_EXIT_RUNTIME;
    mz_cl_set_gpu_offset(dist_local_rank());
    int rc;
    if (!dist_active() || (argc >= 2 && !strcmp(argv[1], "run")))
        rc = command(argc, argv);
    else
        rc = dist_rank() == 0 ? command(argc, argv) : 0;
    if (dist_active() && !(argc >= 2 && !strcmp(argv[1], "run")))
        dist_bcast(&rc, sizeof rc);
    dist_finalize();
    return rc;
}
