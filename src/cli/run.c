/* `mizu run`: scene → particles → device → frames → HDF5, with progress and a summary.
 *
 * Output overlaps compute: a frame's readback is enqueued behind its substeps without blocking,
 * and while the device computes the next frame the host converts and writes this one. The
 * blow-up check of a frame (health.h) is queued with it and read one frame later.
 *
 * Batch jobs: --checkpoint-every writes the state every N frames (checkpoint.h); SIGINT or
 * SIGTERM stops at the next step, mid-frame if need be, with a checkpoint (signals.h); --resume continues
 * from a checkpoint into the same output file, cut back to the frames written when the
 * checkpoint was taken, and the frames that follow are bit-identical to an uninterrupted run
 * on the same device. */
#include "cli/run_ctx.h"
#include "cli/preview.h"

#include "build/build.h"
#include "cli/paths.h"
#include "cli/progress.h"
#include "cli/signals.h"
#include "cli/frames.h"
#include "device/cl_prog.h"
#include "dist/dist.h"
#include "dist/id_blocks.h"
#include "dist/slabs.h"
#include "io/checkpoint.h"
#include "io/h5_out.h"
#include "scene/bodies.h"
#include "scene/sizes.h"
#include "solvers/health.h"
#include "solvers/sim.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/hostmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* --profile: a stage's kernels by device time, where it launched more than one. */
static void print_stage_kernels(const mz_sim *sim, int stage, double total)
{
    int of[MZ_MAX_KERNEL_STATS], n = 0;
    for (int k = 0; k < sim->n_kernels; k++)
        if (sim->kernels[k].stage == stage && sim->kernels[k].t.launches) {
            int at = n++;
            for (; at > 0 && sim->kernels[of[at - 1]].t.seconds < sim->kernels[k].t.seconds; at--)
                of[at] = of[at - 1];
            of[at] = k;
        }
    for (int i = 0; n > 1 && i < n; i++) {
        const mz_kernel_stat *k = &sim->kernels[of[i]];
        fprintf(stderr, "      %-24s %9.3f ms %5.1f%%  %8lu launches\n", k->name,
                1e3 * k->t.seconds, total > 0 ? 100.0 * k->t.seconds / total : 0.0,
                k->t.launches);
    }
}

static void print_summary(const run_ctx *r, long frames_written, double setup_s, double run_s)
{
    const mz_sim *sim = &r->sim;
    double psteps = (double)r->parts.n_total * (double)(sim->step - r->ck.step);
    fprintf(stderr, "mizu: done: %zu particles, %d frames, %ld steps of %.4g", r->parts.n_total,
            r->scene.sim.frames, sim->step, 1e3 * sim->dt_min);
    if (sim->dt_max > sim->dt_min * (1 + 1e-9))
        fprintf(stderr, " to %.4g", 1e3 * sim->dt_max);
    fprintf(stderr, " ms, %.4g s simulated", sim->time);
    if (r->resumed)
        fprintf(stderr, " (resumed after frame %ld)", r->ck.frame);
    fprintf(stderr, "\n  wall %.3f s (setup %.3f s, frames %.3f s), %.4g particle-steps/s\n",
            setup_s + run_s, setup_s, run_s, run_s > 0 ? psteps / run_s : 0.0);
    struct stat st;
    double mb = stat(r->path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;
    char *xdmf = h5_out_xdmf_path(r->path);
    fprintf(stderr, "  output %s (%ld frames, %.1f MB) and %s; writing took %.3f s (%.1f%% of "
                    "the frame loop)",
            r->path, frames_written, mb, xdmf, r->frames.write_s,
            run_s > 0 ? 100.0 * r->frames.write_s / run_s : 0.0);
    if (dist_active()) /* which way the frames went (h5_out_collective) */
        fprintf(stderr, r->collective
                            ? ", every rank writing its id block (collective, parallel HDF5)"
                            : ", rank 0 writing every id block");
    fprintf(stderr, "\n");
    free(xdmf);
    if (r->checkpoints > 0)
        fprintf(stderr, "  %ld checkpoints written to %s\n", r->checkpoints, r->ckpt_path);
    if (sim->solver->report)
        sim->solver->report(sim, stderr);
    if (sim->obs)
        fprintf(stderr, "  %zu probes, %zu gauges, %zu forces on solids, %zu moving colliders%s: "
                        "%ld samples taken, in /observables\n",
                sim->obs->n_probes, sim->obs->n_gauges, sim->obs->n_loads,
                scene_moving_count(sim->scene),
                sim->scene->domain.has_motion ? ", the domain's pose" : "", sim->obs->samples);
    if (dist_active() && sim->slabs)
        fprintf(stderr, "  %d ranks (%s); slabs repartitioned %llu times; rank 0 sent %llu "
                        "particle records in %llu exchanges taking %.3f s (%.3f s of it in MPI) and "
                        "%.3f s sharing halo values, its buffers grew %llu times (room for %zu "
                        "particles)\n",
                dist_size(), r->devices, (unsigned long long)sim->slabs->repartitions,
                (unsigned long long)sim->slabs->sent, (unsigned long long)sim->slabs->exchanges,
                sim->slabs->exchange_s, sim->slabs->mpi_s, sim->slabs->share_s,
                (unsigned long long)sim->slabs->grows, sim->cap);
    if (r->o->profile) {
        double total = 0;
        for (int i = 0; sim->solver->stages[i]; i++)
            total += sim->stages[i].seconds;
        total += sim->stages[MZ_STAGE_OBSERVE].seconds;
        fprintf(stderr, "  device time per stage (OpenCL events), %.3f s in all:\n", total);
        for (int i = 0; sim->solver->stages[i]; i++) {
            fprintf(stderr, "    %-12s %9.3f ms %5.1f%%  %8lu launches  %8.2f ns/particle-step\n",
                    sim->solver->stages[i], 1e3 * sim->stages[i].seconds,
                    total > 0 ? 100.0 * sim->stages[i].seconds / total : 0.0,
                    sim->stages[i].launches,
                    psteps > 0 ? 1e9 * sim->stages[i].seconds / psteps : 0.0);
            print_stage_kernels(sim, i, total);
        }
        const mz_stage_stat *ob = &sim->stages[MZ_STAGE_OBSERVE];
        if (ob->launches) {
            fprintf(stderr, "    %-12s %9.3f ms %5.1f%%  %8lu launches\n", "observers",
                    1e3 * ob->seconds, total > 0 ? 100.0 * ob->seconds / total : 0.0,
                    ob->launches);
            print_stage_kernels(sim, MZ_STAGE_OBSERVE, total);
        }
    }
}

/* The scene: from the file, or for --resume from the checkpoint's record (the scene text and
 * overrides the first run used, and --frames if given to extend the run). */
static int load_run_scene(run_ctx *r)
{
    const mz_run_opts *o = r->o;
    if (!o->resume_path)
        return run_load_scene(o, &r->scene);
    if (checkpoint_read(o->resume_path, &r->ck) != 0)
        return MZ_EXIT_RUNTIME;
    r->resumed = true;
    mz_run_opts ro = *o;
    ro.scene_path = r->ck.scene_path;
    ro.scene_text = r->ck.scene_given;
    ro.overrides = (const char *const *)r->ck.overrides;
    ro.n_overrides = r->ck.n_overrides;
    return run_load_scene(&ro, &r->scene);
}


/* The signal that stops the run: this process's, or under mpirun the one any rank has (every
 * rank asks at the same step, so all stop after the same one). */
static int agreed_signal;

static int pending_signal(void)
{
    agreed_signal = dist_max_int(signals_pending());
    return agreed_signal;
}

static bool stop_requested(void) { return pending_signal() != 0; }

/* Device, memory check, particles, solver, blow-up check, state from a checkpoint, output.
 * 0, or an exit code after reporting. */
static int set_up(run_ctx *r)
{
    const mz_run_opts *o = r->o;
    int opened = mz_cl_open(&r->cl, o->device, o->profile);
    /* Every rank learns whether all have a device, and rank 0 which they are. */
    int worst = dist_max_int(opened == -2 ? 2 : opened != 0 ? 1 : 0);
    if (worst != 0) {
        if (opened == 0 && dist_rank() == 0)
            mz_error("another rank could not open its device (its message says why)");
        return worst == 2 ? MZ_EXIT_USAGE : MZ_EXIT_RUNTIME;
    }
    /* PoCL compiles a kernel anew for every work-group size it picks, and it picks them from the
     * global size: a distributed run's counts change every step, so it gets a fixed size. */
    if (dist_active() && r->cl.wg == 0)
        r->cl.wg = 64;
    r->devices = dist_gather_strings(r->cl.device_name);
    if (dist_active() && dist_rank() == 0 && !run_devices_match(r->devices)) {
        mz_error("the ranks opened different kinds of device (%s): their outputs would differ "
                 "from one rank's; give every rank the same kind (--device)", r->devices);
        worst = 1;
    }
    if (dist_active() && dist_max_int(worst) != 0)
        return MZ_EXIT_RUNTIME;
    if (r->resumed && strcmp(r->ck.device, r->cl.device_name) != 0)
        mz_warn("the checkpoint was written on \"%s\" and this run is on \"%s\": the frames "
                "that follow are bit-identical to an uninterrupted run only on the same device",
                r->ck.device, r->cl.device_name);
    r->run_id = r->resumed ? xstrdup(r->ck.run_id) : run_new_id(r);
    /* Before any allocation: a scene too big for the device or the host is refused, not
     * half-built. */
    /* Under mpirun each rank builds and holds only its share: the slabs are planned first. */
    size_t n = scene_particle_count(&r->scene);
    if (dist_active()) {
        if (dist_max_int(sim_plan_slabs(&r->scene, &r->plan) != 0))
            return MZ_EXIT_RUNTIME;
        n = r->plan.cap;
    }
    if (dist_max_int(sim_check_fits(&r->cl, &r->scene, n) != 0 ||
                     run_check_host_memory(&r->cl, &r->scene, n) != 0))
        return MZ_EXIT_RUNTIME;
    if (dist_active())
        slabs_plan_build(&r->plan, &r->scene, &r->parts);
    else
        build_particles(&r->scene, &r->parts);
    int made = sim_create_share(&r->sim, &r->cl, &r->scene, &r->parts,
                                dist_active() ? &r->plan : NULL) != 0 ||
               health_init(&r->health, &r->sim, health_speed_bound(&r->scene, &r->parts)) != 0;
    if (dist_max_int(made))
        return MZ_EXIT_RUNTIME;
    particles_free_uploaded(&r->parts); /* the device has them */
    const char *mem_env = getenv("MIZU_DEVICE_MEMORY");
    if (mem_env && strcmp(mem_env, "1") == 0) /* beside the buffers cl_ctx.c lists */
        fprintf(stderr, "mizu: device memory: estimate %zu bytes for %zu particles; %zu held\n",
                sim_device_bytes(&r->scene, n), n, mz_cl_memory().live);
    if (r->resumed && checkpoint_restore(o->resume_path, &r->ck, &r->sim) != 0)
        return MZ_EXIT_RUNTIME;
    r->fields = r->scene.output.fields;
    /* Under mpirun the ranks go on writing it together (parallel HDF5), agreed. */
    if (dist_max_int(run_open_output(r) != 0) || h5_out_collective(&r->out, r->path, &r->scene) != 0)
        return MZ_EXIT_RUNTIME;
    r->collective = h5_out_is_collective(r->out);
    if (frames_start(&r->frames, &r->cl, &r->sim, r->fields, r->parts.n_total, r->out) != 0)
        return MZ_EXIT_RUNTIME;
    r->sim.pace.stop_requested = stop_requested;
    run_warn_disk_space(r, r->resumed ? r->ck.frame + 1 : 0);
    return 0;
}

/* Every frame queued so far checked and written. 0; 1 when the last frame blew up (its
 * readback is dropped, the frames before stay); -1 when writing failed. */
static int drain(run_ctx *r)
{
    if (health_result(&r->health, &r->sim) != 0) {
        for (int b = 0; b < 2; b++)
            frames_drop(&r->frames, b);
        return 1;
    }
    for (int b = 0; b < 2; b++)
        if (r->frames.slot[b].pending && frames_finish(&r->frames, b) != 0)
            return -1;
    return frames_wait(&r->frames);
}

static const char *drain_failure(int d)
{
    return d > 0 ? "the simulation blew up" : "writing the output failed";
}

static int save_checkpoint(run_ctx *r, long frame)
{
    const mz_scene *s = &r->scene;
    /* Under mpirun rank 0 writes the file (it holds the output); every rank sends its part. */
    mz_ckpt info = {.frame = frame, .frames_written = r->out ? h5_out_frames(r->out) : 0,
                    .run_id = r->run_id, .scene_path = s->path, .scene_given = s->given_json,
                    .output_path = r->path, .overrides = s->overrides,
                    .n_overrides = s->n_overrides};
    /* The overrides already hold --frames: a resumed run keeps the frame count unless it is
     * given --frames again. A checkpoint that cannot be written does not stop a healthy run:
     * the one before stays whole, and the run goes on. */
    int ours = dist_rank() == 0 ? paths_checkpoint_ours(r->ckpt_path, r->path) : 0;
    if (dist_max_int(ours != 0) || checkpoint_write(r->ckpt_path, &r->sim, &info) != 0) {
        mz_warn("no checkpoint after frame %ld (the run goes on; %s keeps the last one written)",
                frame, r->ckpt_path);
        r->ckpt_failed = frame;
        return -1;
    }
    r->ckpt_failed = -1;
    r->checkpoints++;
    return 0;
}

typedef enum loop_end { LOOP_DONE, LOOP_FAILED, LOOP_BLOWN_UP, LOOP_SIGNALLED } loop_end;

/* The frames after `first - 1`. *why says what stopped a failed loop. */
static loop_end frame_loop(run_ctx *r, long first, long *last_frame, const char **why)
{
    const mz_scene *s = &r->scene;
    long frames = s->sim.frames, every = s->output.every, ck_every = r->o->checkpoint_every;
    double frame_dt = scene_frame_dt(s);
    mz_progress prog;
    progress_start(&prog, !r->o->quiet && dist_rank() == 0, frames, (double)r->parts.n_total);
    loop_end end = LOOP_DONE;
    *last_frame = first - 1;
    for (long f = first; f <= frames; f++) {
        int cur = (int)(f & 1), prev = 1 - cur; /* frame slots: this one, the one before */
        long before = r->sim.step; /* the end of frame f - 1 */
        int advanced = f > 0 ? sim_advance_frame(&r->sim, frame_dt) : 0;
        if (advanced < 0) {
            /* The frame before is whole (its readback was queued before the failing step): keep
             * it, unless it blew up too. */
            *why = "the simulation failed";
            end = drain(r) > 0 ? LOOP_BLOWN_UP : LOOP_FAILED;
            break;
        }
        if (advanced > 0) {
            /* Signalled between two steps of frame f: the frames before are written, and the
             * checkpoint holds the state at this step (the frame's progress with it). */
            int d = drain(r);
            if (d == 0 && frames_write_samples(&r->frames, &r->sim, r->sim.step) != 0)
                d = -1;
            if (d != 0) {
                *why = drain_failure(d);
                end = d > 0 ? LOOP_BLOWN_UP : LOOP_FAILED;
                break;
            }
            save_checkpoint(r, f - 1);
            end = LOOP_SIGNALLED;
            break;
        }
        /* The check of the frame before waits only for that frame, not for this one. */
        if (health_result(&r->health, &r->sim) != 0) {
            frames_drop(&r->frames, prev);
            *why = "the simulation blew up";
            end = LOOP_BLOWN_UP;
            break;
        }
        /* cur held frame f - 2, which the writer may still be writing */
        if (frames_wait(&r->frames) != 0) {
            *why = "writing the output failed";
            end = LOOP_FAILED;
            break;
        }
        if (!health_enqueue(&r->health, &r->sim, f) ||
            (f % every == 0 &&
             !frames_enqueue(&r->frames, &r->sim, cur, (double)f / s->sim.fps))) {
            *why = "a device failure";
            end = LOOP_FAILED;
            break;
        }
        /* The probes' samples up to frame f - 1, checked with it, go with that frame. */
        if (frames_take_samples(&r->frames, &r->sim, prev, before) != 0) {
            *why = "a device failure";
            end = LOOP_FAILED;
            break;
        }
        if (r->frames.slot[prev].pending && frames_finish(&r->frames, prev) != 0) {
            *why = "writing the output failed";
            end = LOOP_FAILED;
            break;
        }
        if (r->o->profile) {
            clFinish(r->cl.queue);
            sim_collect_profile(&r->sim);
        }
        *last_frame = f;
        progress_update(&prog, f, r->sim.time, r->sim.step);
        bool signalled = pending_signal() != 0;
        /* A run that checkpoints also does at its last frame, so that --resume --frames can
         * extend it. */
        if (signalled || (ck_every > 0 && f > 0 && (f % ck_every == 0 || f == frames))) {
            int d = drain(r);
            if (d == 0 && frames_write_samples(&r->frames, &r->sim, r->sim.step) != 0)
                d = -1;
            if (d != 0) {
                *why = drain_failure(d);
                end = d > 0 ? LOOP_BLOWN_UP : LOOP_FAILED;
                break;
            }
            save_checkpoint(r, f);
            if (signalled) {
                end = LOOP_SIGNALLED;
                break;
            }
        }
    }
    int d = end == LOOP_DONE ? drain(r) : 0;
    if (d == 0 && end == LOOP_DONE && frames_write_samples(&r->frames, &r->sim, r->sim.step) != 0)
        d = -1;
    if (d != 0) {
        *why = drain_failure(d);
        end = d > 0 ? LOOP_BLOWN_UP : LOOP_FAILED;
    }
    /* Whatever ended the loop, the writer finishes the frames it was given before the file is
     * closed. */
    if (frames_wait(&r->frames) != 0 && (end == LOOP_DONE || end == LOOP_SIGNALLED)) {
        *why = "writing the output failed";
        end = LOOP_FAILED;
    }
    if (end == LOOP_DONE && !cl_ok(clFinish(r->cl.queue), "clFinish")) {
        *why = "a device failure";
        end = LOOP_FAILED;
    }
    progress_finish(&prog);
    return end;
}

static void release_run(run_ctx *r)
{
    frames_release(&r->frames); /* the writer first: it may be writing to r->out */
    slabs_plan_release(&r->plan);
    if (r->out)
        h5_out_close(r->out, false, "aborted");
    free(r->moving_rest); /* the output's, closed now */
    health_release(&r->health);
    sim_release(&r->sim);
    particles_free(&r->parts);
    mz_cl_close(&r->cl);
    free(r->path);
    free(r->ckpt_path);
    free(r->run_id);
    free(r->devices);
    checkpoint_free(&r->ck);
    scene_free(&r->scene);
}

/* Close the output after the loop and say what happened; the exit code. */
static int finish_run(run_ctx *r, loop_end end, long last_frame, const char *why)
{
    long written = h5_out_frames(r->out);
    char status[256];
    signals_writing(true);
    if (end == LOOP_SIGNALLED) {
        int sig = agreed_signal;
        bool saved = r->ckpt_failed != last_frame;
        /* "after frame 26", or for a stop between two steps "in frame 27 (step 300 of it)" */
        char when[96];
        if (r->sim.frame_steps > 0)
            snprintf(when, sizeof when, "in frame %ld (step %ld of it)", last_frame + 1,
                     r->sim.frame_steps);
        else
            snprintf(when, sizeof when, "after frame %ld", last_frame);
        snprintf(status, sizeof status, "stopped by %s %s; %s %s", signal_name(sig), when,
                 saved ? "resume with: mizu run --resume" : "no checkpoint written to",
                 r->ckpt_path);
        int rc = h5_out_close(r->out, false, status);
        r->out = NULL;
        signals_writing(false);
        if (saved)
            fprintf(stderr, "mizu: stopped by %s %s of %d; %s holds %ld frames and the state is "
                    "in %s\n  resume with: mizu run --resume %s\n",
                    signal_name(sig), when, r->scene.sim.frames, r->path, written,
                    r->ckpt_path, r->ckpt_path);
        else
            fprintf(stderr, "mizu: stopped by %s %s of %d; %s holds %ld frames; the state could "
                    "not be saved (%s holds the last checkpoint, if any)\n",
                    signal_name(sig), when, r->scene.sim.frames, r->path, written,
                    r->ckpt_path);
        return rc == 0 ? 128 + sig : MZ_EXIT_RUNTIME;
    }
    if (end != LOOP_DONE) {
        snprintf(status, sizeof status, "stopped at frame %ld: %s", written, why);
        h5_out_close(r->out, false, status);
        r->out = NULL;
        signals_writing(false);
        mz_error("run stopped; %s holds the %ld frames written before the failure (marked "
                 "incomplete)",
                 r->path, written);
        return MZ_EXIT_RUNTIME;
    }
    int close_rc = h5_out_close(r->out, true, "finished");
    r->out = NULL;
    signals_writing(false);
    return close_rc == 0 ? MZ_EXIT_OK : MZ_EXIT_RUNTIME;
}

int run_preview(const mz_run_opts *o, const mz_scene *s, const char *out, FILE *msg)
{
    char *path = preview_path(out);
    int rc = preview_write(s, path, o->quiet ? NULL : msg) == 0 ? MZ_EXIT_OK : MZ_EXIT_RUNTIME;
    free(path);
    return rc;
}

int cmd_run(const mz_run_opts *o)
{
    double t_start = now_seconds();
    run_ctx r = {.o = o, .ckpt_failed = -1};
    int rc = load_run_scene(&r);
    if (rc != 0) {
        release_run(&r);
        return rc;
    }
    if (dist_active() && (rc = run_refuse_distributed(&r.scene)) != 0) {
        release_run(&r);
        return rc;
    }
    r.path = o->out_path || !r.resumed ? run_output_path(o, &r.scene) : xstrdup(r.ck.output_path);
    r.ckpt_path = o->checkpoint_path ? xstrdup(o->checkpoint_path)
                  : o->resume_path   ? xstrdup(o->resume_path)
                                     : checkpoint_default_path(r.path);
    mz_run_paths paths = {.out = r.path, .ckpt = r.ckpt_path, .resume = o->resume_path,
                          .scene = r.resumed ? NULL : o->scene_path, .s = &r.scene};
    rc = dist_rank() == 0 ? paths_check(&paths) : 0; /* rank 0 alone touches the files */
    if (rc == 0 && r.resumed) /* needs no device: refused before one is opened */
        rc = run_check_resume(&r);
    if (rc == 0 && o->preview && dist_rank() == 0)
        rc = run_preview(o, &r.scene, r.path, stderr);
    rc = dist_max_int(rc);
    if (rc != 0) {
        release_run(&r);
        return rc;
    }
    signals_install();
    rc = set_up(&r);
    if (rc == 0) {
        long first = r.resumed ? r.ck.frame + 1 : 0, last = first - 1;
        const char *why = NULL;
        double t_loop = now_seconds();
        loop_end end = frame_loop(&r, first, &last, &why);
        double t_end = now_seconds();
        long written = r.out ? h5_out_frames(r.out) : 0;
        rc = dist_rank() == 0 ? finish_run(&r, end, last, why) : 0;
        if (dist_rank() != 0 && r.out) { /* collective: the record is rank 0's */
            h5_out_close(r.out, false, NULL);
            r.out = NULL;
        }
        dist_bcast(&rc, sizeof rc); /* rank 0 closed the file: its exit code is every rank's */
        if (rc == MZ_EXIT_OK && !o->quiet && dist_rank() == 0)
            print_summary(&r, written, t_loop - t_start, t_end - t_loop);
    }
    release_run(&r);
    signals_restore();
    return rc;
}
