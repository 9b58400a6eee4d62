/* SPH on PoCL: the smoothing kernels, density against a host brute force, hydrostatics, the
 * collapsed variant, and mass conservation. */
#include "device/cl_prog.h"
#include "device/grid.h"
#include "solvers/sph/dfsph.h"
#include "solvers/sph/sph.h"
#include "test_util.h"
#include "test_world.h"

#include <math.h>

static double poly6(double r2, double h, int dim)
{
    double pi = acos(-1.0), q = h * h - r2;
    if (q <= 0)
        return 0;
    return (dim == 3 ? 315.0 / (64.0 * pi * pow(h, 9)) : 4.0 / (pi * pow(h, 8))) * q * q * q;
}

static double dist2(const float *a, const float *b, int dim)
{
    double s = 0;
    for (int k = 0; k < dim; k++)
        s += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
    return s;
}

/* Device densities against an all-pairs host sum, boundary particles included (their masses
 * recomputed on the host the same way: m_b = ρ0 / Σ_k W_bk). */
static void check_density_brute_force(world *w)
{
    const mz_scene *s = &w->scene;
    int dim = s->sim.dimensions;
    double h = scene_support_radius(s), m = build_particle_mass(s, &s->fluids[0]);
    float *bpos = NULL;
    int layers = (int)ceil(h / s->fluids[0].spacing - 0.5 - 1e-9);
    size_t nb = s->domain.boundary.type == MZ_BOUNDARY_PARTICLES
                    ? build_wall_particles(s, s->fluids[0].spacing, layers, &bpos)
                    : 0;
    nb = build_collider_particles(s, s->fluids[0].spacing, layers, &bpos, nb);
    world_read(w);
    double worst = 0;
    for (size_t i = 0; i < w->parts.n; i++) {
        double rho = 0;
        for (size_t j = 0; j < w->parts.n; j++)
            rho += m * poly6(dist2(&w->pos[4 * i], &w->pos[4 * j], dim), h, dim);
        for (size_t b = 0; b < nb; b++)
            rho += m * poly6(dist2(&w->pos[4 * i], &bpos[4 * b], dim), h, dim);
        double err = fabs(w->rho[i] - rho) / rho;
        worst = fmax(worst, err);
        if (err > 1e-4 && getenv("SPH_DEBUG"))
            printf("particle %u at (%g, %g, %g): density %g, brute force %g\n", w->id[i],
                     w->pos[4 * i], w->pos[4 * i + 1], w->pos[4 * i + 2], w->rho[i], rho);
        else if (err > 1e-4)
            fail_msg("particle %u at (%g, %g, %g): density %g, brute force %g", w->id[i],
                     w->pos[4 * i], w->pos[4 * i + 1], w->pos[4 * i + 2], w->rho[i], rho);
    }
    print_message("density vs brute force (%zu particles, %zu boundary): worst %.2g\n",
                  w->parts.n, nb, worst);
    free(bpos);
}

static const char *tank2d =
    "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 50, \"frames\": 1, \"dimensions\": 2,"
    "  \"adaptive\": true},"
    " \"domain\": {\"min\": [0,0,0], \"max\": [0.2,0.3,0], \"boundary\": {\"type\": \"particles\"}},"
    " \"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0,0,0], \"max\": [0.2,0.2,0]},"
    "   \"spacing\": 0.01, \"artificial_viscosity\": 0.05}],"
    " \"output\": {\"fields\": [\"position\", \"velocity\", \"density\", \"pressure\"]}}";

static void test_density_matches_brute_force(void **state)
{
    (void)state;
    world w;
    world_open(&w, tank2d, NULL, 0);
    check_density_brute_force(&w);
    world_close(&w);
    const char *sets3d[] = {"simulation.dimensions=3", "domain.max=[0.1,0.12,0.08]",
                            "fluids[0].box.max=[0.1,0.06,0.05]", "fluids[0].spacing=0.01"};
    world_open(&w, tank2d, sets3d, 4);
    check_density_brute_force(&w);
    world_close(&w);
}

/* Host reference of one WCSPH step: density, Tait pressure, every force term, symplectic Euler. */
typedef struct sph_ref {
    double h, m, rho0, B, c0, mu, alpha, hs, eps2, r0, D, spiky_c;
    int dim;
} sph_ref;

/* The spiky gradient with the solver's lattice renormalisation (checked on its own in
 * test_kernels). */
static void spiky_grad(const sph_ref *R, const double d[3], double r, double out[3])
{
    double hr = R->h - r, c = R->spiky_c;
    for (int k = 0; k < 3; k++)
        out[k] = c * hr * hr / r * d[k];
}

static double visc_lap(const sph_ref *R, double r)
{
    double pi = acos(-1.0);
    return (R->dim == 3 ? 45.0 / (pi * pow(R->h, 6)) : 40.0 / (pi * pow(R->h, 5))) * (R->h - r);
}

static double tait(const sph_ref *R, double rho)
{
    return R->B * (pow(fmax(rho, R->rho0) / R->rho0, 7) - 1);
}

/* S += m (−∇W factor) d d^T (2D: xx, xy, yy), as the density pass sums it for the gradient
 * correction. */
static void kgc_add(const sph_ref *R, double S[3], double m, const double d[3], double r)
{
    if (r <= 1e-6 * R->h || r >= R->h)
        return;
    double w = -m * R->spiky_c * (R->h - r) * (R->h - r) / r;
    S[0] += w * d[0] * d[0];
    S[1] += w * d[0] * d[1];
    S[2] += w * d[1] * d[1];
}

/* The gradient correction C = L⁻¹ (2D), L = S/ρ blended towards I as its smallest eigenvalue
 * falls from 0.85 to 0.65 or its largest rises from 1 to 1.1 (kernels/sph/sph_kernels.clh:
 * mz_kgc_from). */
static void kgc_from(const double S[3], double rho, bool on, double C[3])
{
    if (!on) { /* fluids[].gradient_correction false */
        C[0] = C[2] = 1;
        C[1] = 0;
        return;
    }
    double L[3] = {S[0] / rho, S[1] / rho, S[2] / rho};
    double mean = 0.5 * (L[0] + L[2]), dev = 0.5 * (L[0] - L[2]);
    double rad = sqrt(dev * dev + L[1] * L[1]), lmin = mean - rad, lmax = mean + rad;
    double t = fmin(fmax((lmin - 0.65) / 0.2, 0.0), 1.0) * fmin(fmax((1.1 - lmax) / 0.1, 0.0), 1.0);
    L[0] = t * L[0] + 1 - t;
    L[1] = t * L[1];
    L[2] = t * L[2] + 1 - t;
    double det = L[0] * L[2] - L[1] * L[1];
    C[0] = L[2] / det;
    C[1] = -L[1] / det;
    C[2] = L[0] / det;
}

/* out = ½(A + B) g (2D; B NULL: A g). */
static void kgc_apply(const double A[3], const double *B, const double g[3], double out[3])
{
    double M[3];
    for (int k = 0; k < 3; k++)
        M[k] = B ? 0.5 * (A[k] + B[k]) : A[k];
    out[0] = M[0] * g[0] + M[1] * g[1];
    out[1] = M[1] * g[0] + M[2] * g[1];
    out[2] = 0;
}

/* kgc: "fluids[0].gradient_correction=true" or "=false": the host follows the scene. */
static void forces_match_host(const char *kgc)
{
    const char *sets[] = {"fluids[0].viscosity=0.5", "fluids[0].artificial_viscosity=0.3",
                          "simulation.adaptive=false", "simulation.substeps=400", kgc};
    world w;
    world_open(&w, tank2d, sets, 5);
    const mz_scene *s = &w.scene;
    int dim = 2;
    sph_ref R = {.h = scene_support_radius(s), .m = build_particle_mass(s, &s->fluids[0]),
                 .rho0 = 1000, .c0 = scene_speed_of_sound(s), .mu = 0.5, .alpha = 0.3,
                 .dim = dim, .r0 = s->fluids[0].spacing};
    R.B = R.rho0 * R.c0 * R.c0 / 7;
    R.hs = R.h / 2;
    R.eps2 = 0.01 * R.hs * R.hs;
    R.D = 0.01 * R.c0 * R.c0;
    R.spiky_c = sph_params_for(s).spiky_grad;
    /* Disturb the state on the device: positions by up to 0.3 spacing, velocities by 0.5 m/s. */
    size_t n = w.parts.n;
    world_read(&w);
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
            w.pos[4 * i + k] += (float)(0.6 * 0.01 * u);
            w.vel[4 * i + k] = (float)u;
        }
    for (size_t i = 0; i < n; i++)
        w.pos[4 * i + 1] = fmaxf(w.pos[4 * i + 1], 0.002f);
    assert_int_equal(clEnqueueWriteBuffer(cl.queue, w.sim.pos, CL_TRUE, 0, 16 * n, w.pos, 0,
                                          NULL, NULL), CL_SUCCESS);
    assert_int_equal(clEnqueueWriteBuffer(cl.queue, w.sim.vel, CL_TRUE, 0, 16 * n, w.vel, 0,
                                          NULL, NULL), CL_SUCCESS);
    /* The host keeps the disturbed state by id. */
    double (*x0)[3] = calloc(n, sizeof *x0), (*v0)[3] = calloc(n, sizeof *v0);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            x0[w.id[i]][k] = w.pos[4 * i + k];
            v0[w.id[i]][k] = w.vel[4 * i + k];
        }
    float *bpos = NULL;
    size_t nb = build_wall_particles(s, 0.01, (int)ceil(R.h / 0.01 - 0.5 - 1e-9), &bpos);
    double dt = scene_frame_dt(s) / 400;
    assert_int_equal(sim_substep(&w.sim, dt), 0);
    world_read(&w);
    double *rho = calloc(n, sizeof *rho), *p = calloc(n, sizeof *p), worst = 0;
    double (*C)[3] = calloc(n, sizeof *C);
    for (size_t i = 0; i < n; i++) {
        double S[3] = {0, 0, 0};
        for (size_t j = 0; j < n; j++) {
            double d[3] = {0, 0, 0}, d2 = 0;
            for (int k = 0; k < dim; k++) {
                d[k] = x0[i][k] - x0[j][k];
                d2 += d[k] * d[k];
            }
            rho[i] += R.m * poly6(d2, R.h, dim);
            kgc_add(&R, S, R.m, d, sqrt(d2));
        }
        for (size_t b = 0; b < nb; b++) {
            double d[3] = {0, 0, 0}, d2 = 0;
            for (int k = 0; k < dim; k++) {
                d[k] = x0[i][k] - bpos[4 * b + k];
                d2 += d[k] * d[k];
            }
            rho[i] += R.m * poly6(d2, R.h, dim);
            kgc_add(&R, S, R.m, d, sqrt(d2));
        }
        p[i] = tait(&R, rho[i]);
        kgc_from(S, rho[i], sph_params_for(s).kgc, C[i]);
    }
    for (size_t slot = 0; slot < n; slot++) {
        uint32_t i = w.id[slot];
        double a[3] = {0, -9.81, 0}, g[3] = {0, -9.81, 0}, gr[3], gc[3];
        for (size_t j = 0; j < n; j++) {
            double d[3] = {0, 0, 0}, vij[3] = {0, 0, 0}, r2 = 0;
            for (int k = 0; k < dim; k++) {
                d[k] = x0[i][k] - x0[j][k];
                vij[k] = v0[i][k] - v0[j][k];
                r2 += d[k] * d[k];
            }
            double r = sqrt(r2);
            if (j == i || r >= R.h || r <= 1e-6 * R.h)
                continue;
            spiky_grad(&R, d, r, gr);
            kgc_apply(C[i], C[j], gr, gc);
            double pres = p[i] / (rho[i] * rho[i]) + p[j] / (rho[j] * rho[j]);
            double visc = R.mu * visc_lap(&R, r) / (rho[i] * rho[j]);
            double vr = vij[0] * d[0] + vij[1] * d[1];
            double pi_ij = vr < 0 ? -R.alpha * R.c0 * (R.hs * vr / (r2 + R.eps2)) /
                                        (0.5 * (rho[i] + rho[j]))
                                  : 0;
            for (int k = 0; k < dim; k++)
                a[k] += -R.m * pres * gc[k] - R.m * pi_ij * gr[k] - R.m * visc * vij[k];
        }
        for (size_t b = 0; b < nb; b++) {
            double d[3] = {0, 0, 0}, r2 = 0;
            for (int k = 0; k < dim; k++) {
                d[k] = x0[i][k] - bpos[4 * b + k];
                r2 += d[k] * d[k];
            }
            double r = sqrt(r2);
            if (r >= R.h || r <= 1e-6 * R.h)
                continue;
            spiky_grad(&R, d, r, gr);
            kgc_apply(C[i], NULL, gr, gc);
            double pb = fmax(p[i] - rho[i] * (g[1] * d[1]), 0);
            double rep = 0;
            if (r < R.r0) {
                double q = R.r0 / r;
                rep = R.D * (pow(q, 12) - pow(q, 4)) / r2;
            }
            /* no-slip: both viscosities against the wall at rest, ρ_b = ρ_i */
            double visc = R.mu * visc_lap(&R, r) / (rho[i] * rho[i]);
            double vr = v0[i][0] * d[0] + v0[i][1] * d[1];
            double pi_ib = vr < 0 ? -R.alpha * R.c0 * (R.hs * vr / (r2 + R.eps2)) / rho[i] : 0;
            for (int k = 0; k < dim; k++)
                a[k] += -R.m * (p[i] + pb) / (rho[i] * rho[i]) * gc[k] - R.m * pi_ib * gr[k] +
                        rep * d[k] - R.m * visc * v0[i][k];
        }
        for (int k = 0; k < dim; k++) {
            double v_new = v0[i][k] + dt * a[k];
            double err = fabs(w.vel[4 * slot + k] - v_new) / (fabs(v_new) + 1e-3);
            worst = fmax(worst, err);
            if (err > 1e-3)
                fail_msg("particle %u axis %d: velocity %.7g, host %.7g (a = %g)", i, k,
                         w.vel[4 * slot + k], v_new, a[k]);
        }
    }
    print_message("one step vs host (%zu particles): worst relative velocity error %.2g\n", n,
                  worst);
    free(x0);
    free(v0);
    free(rho);
    free(p);
    free(C);
    free(bpos);
    world_close(&w);
}

/* The smoothing kernels as the device evaluates them: W ≥ 0 and normalised (∫W dV = 1), the
 * spiky kernel rebuilt from its gradient normalised to 1/G (the lattice renormalisation), and on
 * a rest lattice ΣW·V = 1 and Σ∇W·V = 0 inside. 2D and 3D. */
static void check_kernels(const char *json, int dim)
{
    world w;
    world_open(&w, json, NULL, 0);
    sph_params P = sph_params_for(&w.scene);
    char defines[32];
    snprintf(defines, sizeof defines, "-DMZ_DIM=%d", dim);
    cl_program prog = cl_prog_build(&cl, "sph/sph.cl", defines, false);
    assert_non_null(prog);
    cl_kernel probe = cl_prog_kernel(prog, "sph_probe"), sums = cl_prog_kernel(prog, "sph_sums");
    enum { M = 4000 };
    static float r[M], out[4 * M];
    double h = P.h, pi = acos(-1.0), dr = h / M;
    for (int k = 0; k < M; k++)
        r[k] = (float)((k + 0.5) * dr);
    cl_mem rb = mz_cl_buffer(&cl, CL_MEM_READ_WRITE, sizeof r, r, "r");
    cl_mem ob = mz_cl_buffer(&cl, CL_MEM_READ_WRITE, sizeof out, NULL, "out");
    cl_uint m = M;
    assert_true(KARGS(probe, "sph_probe", A(m), A(P), A(rb), A(ob)));
    assert_true(mz_cl_run1d(&cl, probe, M, NULL, "probe"));
    assert_int_equal(clEnqueueReadBuffer(cl.queue, ob, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL),
                     CL_SUCCESS);
    double integral = 0, spiky = 0, tail = 0;
    for (int k = M - 1; k >= 0; k--) {
        double shell = dim == 3 ? 4 * pi * r[k] * r[k] : 2 * pi * r[k];
        assert_true(out[4 * k] >= 0 && out[4 * k + 1] >= 0 && out[4 * k + 2] >= 0);
        integral += out[4 * k] * shell * dr;
        tail += out[4 * k + 1] * dr; /* W_spiky(r) = ∫_r^h |∇W| */
        spiky += (tail - 0.5 * out[4 * k + 1] * dr) * shell * dr;
    }
    double g_sum = build_lattice_gradient_sum(w.scene.fluids[0].spacing, h, dim) * P.mass /
                   P.rest_density / pow(w.scene.fluids[0].spacing, dim);
    print_message("%dD: integral of W %.5f, of spiky %.5f (1/G = %.5f)\n", dim, integral, spiky,
                  1 / g_sum);
    assert_true(fabs(integral - 1) < 2e-3);
    assert_true(fabs(spiky * g_sum - 1) < 2e-3);

    /* Lattice sums through the grid, over particles at least h from the lattice's edges. */
    mz_grid g;
    const mz_scene *s = &w.scene;
    assert_int_equal(grid_create(&g, &cl, w.parts.n, h, dim, s->domain.min, s->domain.max,
                                 MZ_GRID_AUTO), 0);
    assert_int_equal(grid_build(&g, w.sim.pos), 0);
    cl_mem sb = mz_cl_buffer(&cl, CL_MEM_READ_WRITE, 16 * w.parts.n, NULL, "sums");
    assert_true(KARGS(sums, "sph_sums", A(w.sim.n_u), A(P), A(g.desc), A(g.cell_words),
                      A(g.cell_first), A(w.sim.pos), A(sb)));
    assert_true(mz_cl_run1d(&cl, sums, w.parts.n, NULL, "sums"));
    float *res = calloc(4 * w.parts.n, sizeof *res), *pos = calloc(4 * w.parts.n, sizeof *pos);
    assert_int_equal(clEnqueueReadBuffer(cl.queue, sb, CL_TRUE, 0, 16 * w.parts.n, res, 0, NULL,
                                         NULL), CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(cl.queue, w.sim.pos, CL_TRUE, 0, 16 * w.parts.n, pos, 0,
                                         NULL, NULL), CL_SUCCESS);
    const mz_box *box = &s->fluids[0].box;
    int inside = 0;
    for (size_t i = 0; i < w.parts.n; i++) {
        bool deep = true;
        for (int k = 0; k < dim; k++)
            deep &= pos[4 * i + k] > box->min[k] + h && pos[4 * i + k] < box->max[k] - h;
        if (!deep)
            continue;
        inside++;
        assert_true(fabs(res[4 * i + 3] - 1) < 1e-4);               /* Σ W V */
        for (int k = 0; k < dim; k++)
            assert_true(fabs(res[4 * i + k]) * h < 1e-4);           /* Σ ∇W V */
    }
    assert_true(inside > 0);
    free(res);
    free(pos);
    clReleaseMemObject(sb);
    clReleaseMemObject(rb);
    clReleaseMemObject(ob);
    clReleaseKernel(probe);
    clReleaseKernel(sums);
    clReleaseProgram(prog);
    grid_release(&g);
    world_close(&w);
}

static void test_kernels(void **state)
{
    (void)state;
    check_kernels(tank2d, 2);
    check_kernels("{\"mizu_scene\": 1, \"simulation\": {\"adaptive\": true},"
                  " \"domain\": {\"min\": [0,0,0], \"max\": [1,1,1]},"
                  " \"fluids\": [{\"solver\": \"wcsph\", \"box\": {\"min\": [0.2,0.2,0.2],"
                  " \"max\": [0.4,0.4,0.4]}, \"spacing\": 0.02}]}",
                  3);
}

/* Every frame: no NaN, nobody outside the domain, the particle count and masses unchanged
 * (masses live in the solver's constants: mass is conserved exactly by construction). */
static void check_frame(world *w, int frame)
{
    const mz_domain *d = &w->scene.domain;
    int dim = w->scene.sim.dimensions;
    for (size_t i = 0; i < w->parts.n; i++)
        for (int k = 0; k < dim; k++) {
            float x = w->pos[4 * i + k];
            if (!isfinite(x) || !isfinite(w->vel[4 * i + k]) || x < d->min[k] || x > d->max[k])
                fail_msg("frame %d: particle %u axis %d at %g (v %g)", frame, w->id[i], k, x,
                         w->vel[4 * i + k]);
        }
}

/* Water at rest (issues 4 and 18): after settling, with the pressure force's kernel gradient
 * correction, every particle deeper than two spacings below the free surface carries ρ0 g depth
 * within 3% (its pressure and depth averaged over the last 0.72 s, one period of the tank's
 * first sloshing mode; measured 2.1% at cfl 0.4, 2.8% at 0.2), each layer's mean within 1%
 * (measured 0.4–0.5%; 3.0–3.2% without the correction), and the mean density there is within
 * 1% of ρ0. The scene integrates the density by the continuity equation: with summation, a
 * truncated kernel gives particles near the surface ρ < ρ0 and no pressure (measured 62% short
 * at 2.3 spacings, 7.5% at 5). SPH_DEBUG=1 prints the profile row by row. */
/* scenes/hydrostatic.json with the settings `sets` (NULL: as shipped): the pressure of every
 * particle deeper than two spacings, averaged over the last frames, within particle_tol of
 * ρ0 g depth, each layer's mean within row_tol, and their sum within 3%. */
static void hydrostatic(const char *const *sets, int n_sets, double particle_tol,
                        double row_tol)
{
    world w;
    world_open_file(&w, "scenes/hydrostatic.json", sets, n_sets);
    const mz_scene *s = &w.scene;
    double spacing = s->fluids[0].spacing;
    double rho0 = s->fluids[0].rest_density, g = -s->sim.gravity[1];
    size_t n = w.parts.n;
    enum { AVG = 36 };
    double *psum = calloc(n, sizeof *psum), *dsum = calloc(n, sizeof *dsum), rho_sum = 0;
    float *x = calloc(n, sizeof *x);
    long rho_cnt = 0;
    int frames = s->sim.frames;
    for (int f = 1; f <= frames; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(s)), 0);
        if (f % 10 && f <= frames - AVG)
            continue;
        world_read(&w);
        check_frame(&w, f);
        if (f <= frames - AVG)
            continue;
        /* The free surface: half a spacing above the top layer (a particle stands for the
         * lattice cell around it), the top layer being the particles within half a spacing of
         * the highest. */
        double high = 0, top = 0;
        long top_cnt = 0;
        for (size_t i = 0; i < n; i++)
            high = fmax(high, w.pos[4 * i + 1]);
        for (size_t i = 0; i < n; i++)
            if (w.pos[4 * i + 1] > high - 0.5 * spacing) {
                top += w.pos[4 * i + 1];
                top_cnt++;
            }
        double level = top / top_cnt + 0.5 * spacing;
        for (size_t i = 0; i < n; i++) {
            double depth = level - w.pos[4 * i + 1];
            psum[w.id[i]] += w.p[i];
            dsum[w.id[i]] += depth;
            x[w.id[i]] = w.pos[4 * i];
            if (depth > 2 * spacing) {
                rho_sum += w.rho[i];
                rho_cnt++;
            }
        }
    }
    enum { ROWS = 64 };
    double row_err[ROWS] = {0}, row_depth[ROWS] = {0}, worst = 0, p_total = 0, ref_total = 0;
    long row_cnt[ROWS] = {0}, checked = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double depth = dsum[i] / AVG, p = psum[i] / AVG, ref = rho0 * g * depth;
        if (depth <= 2 * spacing)
            continue;
        double err = p / ref - 1;
        worst = fmax(worst, fabs(err));
        checked++;
        int row = (int)(depth / spacing);
        if (row < ROWS) {
            row_err[row] += err;
            row_depth[row] += depth;
            row_cnt[row]++;
        }
        p_total += p;
        ref_total += ref;
        if (fabs(err) > particle_tol && bad++ < 10)
            print_error("particle %zu at x %.3f m, depth %.4f m: pressure %.1f Pa, rho0 g "
                        "depth %.1f Pa\n", i, x[i], depth, p, ref);
    }
    for (int r = 0; r < ROWS && getenv("SPH_DEBUG"); r++)
        if (row_cnt[r])
            printf("depth %.4f m (%.1f spacings): pressure %+.2f%% (mean of %ld)\n",
                   row_depth[r] / row_cnt[r], row_depth[r] / row_cnt[r] / spacing,
                   100 * row_err[r] / row_cnt[r], row_cnt[r]);
    double worst_row = 0;
    for (int r = 0; r < ROWS; r++)
        if (row_cnt[r])
            worst_row = fmax(worst_row, fabs(row_err[r] / row_cnt[r]));
    double rho_err = rho_sum / rho_cnt / rho0 - 1, total_err = p_total / ref_total - 1;
    print_message("hydrostatic (%s): %ld particles deeper than two spacings, pressure within "
                  "%.1f%% of rho0 g depth (layers' means within %.1f%%, their sum %+.2f%%); "
                  "mean density %+.2f%%\n", mz_solver_names[scene_solver(s)], checked,
                  100 * worst, 100 * worst_row, 100 * total_err, 100 * rho_err);
    assert_true(worst_row <= row_tol);
    assert_true(fabs(total_err) < 0.03);
    assert_true(checked > (long)n / 2);
    assert_int_equal(bad, 0);
    assert_true(fabs(rho_err) < 0.01);
    free(psum);
    free(dsum);
    free(x);
    world_close(&w);
}

/* The dam break's surge front against Martin & Moyce (1952): within 10% over the data. */
static void check_dam_break(const char *scene, const char *solver)
{
    char set[64];
    snprintf(set, sizeof set, "fluids[0].solver=%s", solver);
    const char *sets[] = {set};
    world w;
    world_open_file(&w, scene, sets, 1);
    const mz_scene *s = &w.scene;
    double a = s->fluids[0].box.max[0] - s->fluids[0].box.min[0], spacing = s->fluids[0].spacing;
    int frames = s->sim.frames;
    double *T = calloc((size_t)frames + 1, sizeof *T), *Z = calloc((size_t)frames + 1, sizeof *Z);
    float *xs = calloc(w.parts.n, sizeof *xs);
    for (int f = 0; f <= frames; f++) {
        if (f > 0)
            assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(s)), 0);
        world_read(&w);
        check_frame(&w, f);
        /* The front: the largest x with a neighbour within 1.5 spacings behind it (a lone
         * droplet ahead is not the front). */
        for (size_t i = 0; i < w.parts.n; i++)
            xs[i] = w.pos[4 * i];
        double front = 0;
        for (size_t i = 0; i < w.parts.n; i++) {
            if (xs[i] <= front)
                continue;
            for (size_t j = 0; j < w.parts.n; j++)
                if (j != i && xs[j] < xs[i] && xs[i] - xs[j] < 1.5 * spacing &&
                    fabs(w.pos[4 * j + 1] - w.pos[4 * i + 1]) < 1.5 * spacing) {
                    front = xs[i];
                    break;
                }
        }
        T[f] = w.sim.time * sqrt(9.81 / a);
        Z[f] = front / a;
    }
    double best, best_shift;
    int points = martin_moyce_fit(T, Z, frames, &best, &best_shift);
    print_message("dam break (%s, %s, %zu particles, %ld steps): front within %.1f%% of Martin "
                  "& Moyce at %d points with the time shift dT = %+.2f\n", scene, solver, w.parts.n,
                  w.sim.step, 100 * best, points, best_shift);
    assert_true(best <= 0.10);
    assert_true(points >= 15);
    free(T);
    free(Z);
    free(xs);
    world_close(&w);
}

static void test_forces_match_host(void **state)
{
    (void)state;
    forces_match_host("fluids[0].gradient_correction=false");
}

static void test_forces_match_host_corrected(void **state)
{
    (void)state;
    forces_match_host("fluids[0].gradient_correction=true");
}

/* With the gradient correction (measured at the default cfl 0.2: particles within 2.8%, layers
 * 0.5%). Without it, the default, the whole profile reads high: particles within 5.5% (4.0% at
 * cfl 0.4), layers 3.0%, their sum +2.5%: checked within 7% and 5%. */
static void test_hydrostatic(void **state)
{
    (void)state;
    skip_if_quick();
    const char *sets[] = {"fluids[0].gradient_correction=true"};
    hydrostatic(sets, 1, 0.03, 0.01);
}

static void test_hydrostatic_uncorrected(void **state)
{
    (void)state;
    skip_if_quick();
    hydrostatic(NULL, 0, 0.07, 0.05);
}

/* DFSPH holds the tank by its pressure solve: summed densities, no speed of sound. Its
 * pressure field is the density solve's κρ averaged over each frame's steps (dfsph_advect): a
 * single step's depends on where its solve stopped (in this tank 4 iterations at one step, 40 at
 * the next, each at the average error's tolerance), and read so, the field put its layers within
 * 11.5-37.5% and their sum at -10% to +21% in runs whose gravity differed by 1 to 3e-6
 * (round-off only), so the test passed on one build's bits. The frame's mean, in 7 such runs:
 * the worst layer 9.9-19.2% (the top one, 2.6 spacings deep; the others within about 5%), the sum
 * -0.6% to +1.3%; with one least density iteration, as now, 10.2-19.6% and +0.7% to +1.7%
 * (docs/benchmarks.md, session 24): the layers' bound has little room left, all of it the top
 * layer's. Particles are rough (up to ±90% averaged over 36 frames). */
static void test_hydrostatic_dfsph(void **state)
{
    (void)state;
    skip_if_quick();
    const char *sets[] = {"fluids[0].solver=dfsph", "fluids[0].density_method=summation"};
    hydrostatic(sets, 2, 1.0, 0.2);
}

static void test_dam_break_wcsph(void **state)
{
    (void)state;
    skip_if_quick();
    check_dam_break("scenes/dam_break_2d.json", "wcsph");
}

static void test_dam_break_dfsph(void **state)
{
    (void)state;
    check_dam_break("scenes/dam_break_2d.json", "dfsph");
}

static void test_dam_break_collapsed(void **state)
{
    (void)state;
    skip_if_quick();
    check_dam_break("scenes/dam_break_2d.json", "collapsed_sph");
}

/* The experiment's water (viscosity, smooth-wall friction, a = 2.25 in). */
static void test_dam_break_water(void **state)
{
    (void)state;
    skip_if_quick();
    check_dam_break("scenes/dam_break_2d_water.json", "wcsph");
    check_dam_break("scenes/dam_break_2d_water.json", "collapsed_sph");
}

/* Water falling onto a ball and a step (scenes/obstacles_2d.json): the colliders' boundary
 * particles enter the density exactly as the brute force says, and no particle ever gets
 * inside a solid by more than half a spacing. */
static void test_colliders(void **state)
{
    (void)state;
    world w;
    world_open_file(&w, "scenes/obstacles_2d.json", NULL, 0);
    const mz_scene *s = &w.scene;
    check_density_brute_force(&w);
    double spacing = s->fluids[0].spacing, deepest = 0;
    for (int f = 1; f <= s->sim.frames; f++) {
        assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(s)), 0);
        world_read(&w);
        check_frame(&w, f);
        deepest = world_deepest_in_colliders(&w, f, deepest);
    }
    print_message("colliders: deepest %.2f spacings inside a solid over %d frames\n",
                  -deepest / spacing, s->sim.frames);
    world_close(&w);
}

/* The wall function (domain.boundary.friction "wall_function"): water over a floor with the
 * log-law profile u(y) = u_τ ln(E y u_τ/ν)/κ of one friction velocity u_τ. Over one frame, the
 * columns of particles away from the block's ends lose the momentum ρ0 u_τ² · spacing · dt
 * each (2D: per unit depth), whichever the spacing: the internal forces of a laterally uniform
 * flow cancel within a column. Not quite: the Tait pressure of float-rounded densities leaves
 * ~0.4 Pa of noise, so the free-slip floor's (no drag) is subtracted, and u_τ = 0.2 m/s makes
 * the stress (40 Pa) large against it. Both solvers, two spacings. */
static double wall_utau = 0.2, wall_nu = 1e-6;

static void log_law_profile(mz_particles *p)
{
    for (size_t i = 0; i < p->n; i++) {
        double y = p->pos[4 * i + 1]; /* the floor is at y = 0 */
        p->vel[4 * i] = (float)(wall_utau * log(9.8 * y * wall_utau / wall_nu) / 0.41);
    }
}

static double wall_shear(const char *solver, double spacing, const char *friction)
{
    char json[1024];
    double dt = 1e-5;
    snprintf(json, sizeof json,
             "{\"mizu_scene\": 1, \"simulation\": {\"fps\": %g, \"frames\": 1, \"dimensions\": 2,"
             " \"gravity\": [0, 0, 0]},"
             " \"domain\": {\"min\": [0,0,0], \"max\": [0.2,0.05,0],"
             "   \"boundary\": {\"type\": \"particles\", \"friction\": \"%s\"}},"
             " \"fluids\": [{\"solver\": \"%s\", \"box\": {\"min\": [0.06,0,0],"
             "   \"max\": [0.14,0.012,0]}, \"spacing\": %g, \"viscosity\": %g,"
             "   \"speed_of_sound\": 20}],"
             " \"output\": {\"fields\": [\"position\", \"velocity\"]}}",
             1 / dt, friction, solver, spacing, wall_nu * 1000);
    world w;
    world_open_edit(&w, json, "test.json", NULL, 0, log_law_profile);
    size_t n = w.parts.n;
    world_read(&w);
    float *v0 = malloc(16 * n);
    memcpy(v0, w.vel, 16 * n);
    uint32_t *id0 = malloc(4 * n);
    memcpy(id0, w.id, 4 * n);
    double *dv = calloc(n, sizeof *dv), *x = calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) {
        dv[id0[i]] -= v0[4 * i];
        x[id0[i]] = w.pos[4 * i];
    }
    assert_int_equal(sim_advance_frame(&w.sim, dt), 0);
    world_read(&w);
    for (size_t i = 0; i < n; i++)
        dv[w.id[i]] += w.vel[4 * i];
    /* columns 0.09 to 0.11 m: further than 3 h from the ends */
    double m = build_particle_mass(&w.scene, &w.scene.fluids[0]), sum = 0;
    int columns = 0;
    for (double cx = 0.09 + 0.5 * spacing; cx < 0.11; cx += spacing, columns++)
        for (size_t i = 0; i < n; i++)
            if (fabs(x[i] - cx) < 0.25 * spacing)
                sum += m * dv[i] / dt;
    double shear = -sum / (columns * spacing); /* Pa */
    free(v0);
    free(id0);
    free(dv);
    free(x);
    world_close(&w);
    return shear;
}

static void test_wall_function(void **state)
{
    (void)state;
    double want = 1000 * wall_utau * wall_utau;
    const char *solvers[] = {"wcsph", "collapsed_sph"};
    for (int s = 0; s < 2; s++)
        for (double spacing = 0.001; spacing > 0.0004; spacing /= 2) {
            double slip = wall_shear(solvers[s], spacing, "free_slip");
            double got = wall_shear(solvers[s], spacing, "wall_function") - slip;
            print_message("wall function (%s, spacing %g m): floor shear %.3f Pa (free slip "
                          "%+.3f Pa subtracted), rho0 u_tau^2 %.1f Pa (%+.2f%%)\n", solvers[s],
                          spacing, got, slip, want, 100 * (got / want - 1));
            assert_true(fabs(got / want - 1) < 0.01);
            assert_true(fabs(slip) < 0.05 * want);
        }
}

/* Issue 19: Martin & Moyce's column in a 3D flume as wide as the column
 * (scenes/dam_break_flume_3d.json, spacing a/20, wall particles) with each SPH solver: the
 * surge front (99.5th percentile of x) within 5% on average with a release shift of at most
 * 0.1. */
static void flume_3d(const char *solver)
{
    char set[64];
    snprintf(set, sizeof set, "fluids[0].solver=%s", solver);
    const char *sets[1] = {set};
    world w;
    world_open_file(&w, "scenes/dam_break_flume_3d.json", sets, 1);
    double mean, shift;
    int points = flume_front_error(&w, 0.1, &mean, &shift);
    print_message("3D flume (%s, %zu particles): front within %.1f%% of Martin & Moyce on "
                  "average at %d points with dT = %+.3f\n", solver, w.parts.n, 100 * mean,
                  points, shift);
    assert_true(points >= 15);
    assert_true(mean < 0.05);
    world_close(&w);
}

static void test_flume_3d(void **state)
{
    (void)state;
    skip_if_quick();
    flume_3d("wcsph");
    flume_3d("collapsed_sph");
}

static void test_flume_3d_dfsph(void **state)
{
    (void)state;
    flume_3d("dfsph");
}

/* DFSPH's neighbour lists, made too short for the flume's neighbourhoods (32 at rest), grow at
 * the next step and the run stays bit-identical to one whose lists never ran short. */
/* WCSPH's neighbour lists: a run with them, one whose lists are cut to 5 entries (the forces
 * walk the grid for particles they cannot hold, and they grow at the end of the first frame) and
 * one without, each with a CPU's choices (lists in rows, the passes in eight lanes,
 * sph_lanes.clh), with a GPU's (the continuity summed over the lists after the walk, by a
 * kernel of its own, one particle at a time, the fluid's lists masked, in rows) and with those
 * but entry lists in columns (MIZU_LIST_LAYOUT=columns), which MIZU_LIST_LAYOUT,
 * MIZU_LIST_SUMS, MIZU_LIST_FORMAT and MIZU_SPH_LANES choose: all nine give the same bits,
 * three frames of the 2D dam break with wall particles, summed and continuity density. */
static void test_wcsph_lists(void **state)
{
    (void)state;
    static const char *const methods[] = {"summation", "continuity"};
    static const char *const choices[] = {"a CPU's choices", "a GPU's choices",
                                          "a GPU's choices, entries in columns"};
    enum { RUNS = 9 };
    for (int m = 0; m < 2; m++) {
        char method[64];
        snprintf(method, sizeof method, "fluids[0].density_method=%s", methods[m]);
        const char *sets[] = {method, "domain.boundary.type=particles"};
        world w[RUNS];
        const mz_cl device = cl;
        for (int k = 0; k < RUNS; k++) {
            setenv("MIZU_SPH_LISTS", k % 3 == 2 ? "0" : "1", 1);
            cl.list_rows = k < 6;
            cl.lanes = k < 3;
            cl.list_sums = k >= 3;
            cl.list_masks = k >= 3 && k < 6;
            world_open_file(&w[k], "scenes/dam_break_2d.json", sets, 2);
        }
        unsetenv("MIZU_SPH_LISTS");
        cl.list_rows = device.list_rows;
        cl.list_sums = device.list_sums;
        cl.list_masks = device.list_masks;
        cl.lanes = device.lanes;
        unsigned cap, windows;
        long grown;
        for (int k = 1; k < RUNS; k += 3) {
            assert_int_equal(sph_set_list_cap(&w[k].sim, 5), 0);
            assert_int_equal(sph_list_stats(&w[k + 1].sim, &cap, &windows, &grown), -1);
        }
        for (int f = 0; f < 3; f++)
            for (int k = 0; k < RUNS; k++)
                assert_int_equal(sim_advance_frame(&w[k].sim, scene_frame_dt(&w[k].scene)), 0);
        for (int k = 1; k < RUNS; k += 3) {
            assert_int_equal(sph_list_stats(&w[k].sim, &cap, &windows, &grown), 0);
            print_message("WCSPH lists (%s density, %s): cut to 5, grown %ld times "
                          "to %u (windows %u); bits as without lists, and as the other choices, "
                          "after %ld steps\n", methods[m], choices[k / 3], grown, cap, windows,
                          w[k].sim.step);
            /* (a masked run's wall list never ran short here, nor its fluid list: a 2D row
             * of 12 slots fits one window; test_wcsph_mask_windows makes one short) */
            assert_true(k / 3 == 1 || (grown >= 1 && cap >= 12));
            assert_int_equal(windows, k / 3 == 1);
        }
        for (int k = 0; k < RUNS; k++)
            world_read(&w[k]);
        for (int k = 0; k < RUNS; k++) {
            const world *ref = &w[0];
            assert_int_equal(w[k].sim.step, ref->sim.step);
            assert_memory_equal(ref->pos, w[k].pos, 4 * sizeof(float) * ref->parts.n);
            assert_memory_equal(ref->vel, w[k].vel, 4 * sizeof(float) * ref->parts.n);
            assert_memory_equal(ref->rho, w[k].rho, sizeof(float) * ref->parts.n);
        }
        for (int k = 0; k < RUNS; k++)
            world_close(&w[k]);
    }
}

/* Masked lists whose rows outgrow their windows: the 3D dam break with the neighbourhood of an
 * engineering code (h = 3.46 spacings, ~124 slots a row of the walk), its masked lists cut to
 * one window of 64 slots a row, grow at the first frame's end (the forces walk the grid for the
 * particles whose rows did not fit) and give the same bits as entry lists and as no lists, two
 * frames. */
static void test_wcsph_mask_windows(void **state)
{
    (void)state;
    const char *sets[] = {"domain.boundary.type=penalty", "fluids[0].support_radius=0.0173",
                          "simulation.fps=1000"};
    const mz_cl device = cl;
    world w[3];
    for (int k = 0; k < 3; k++) {
        setenv("MIZU_SPH_LISTS", k == 2 ? "0" : "1", 1);
        cl.list_masks = k == 1;
        world_open_file(&w[k], "scenes/dam_break_3d.json", sets, 3);
    }
    unsetenv("MIZU_SPH_LISTS");
    cl.list_masks = device.list_masks;
    unsigned cap, windows;
    long grown;
    assert_int_equal(sph_set_list_cap(&w[1].sim, 64), 0);
    assert_int_equal(sph_list_stats(&w[1].sim, &cap, &windows, &grown), 0);
    assert_int_equal(windows, 1);
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 3; k++)
            assert_int_equal(sim_advance_frame(&w[k].sim, scene_frame_dt(&w[k].scene)), 0);
    assert_int_equal(sph_list_stats(&w[1].sim, &cap, &windows, &grown), 0);
    print_message("masked lists cut to one window a row: grown %ld times to %u windows; bits as "
                  "entry lists and no lists after %ld steps\n", grown, windows, w[1].sim.step);
    assert_true(grown >= 1 && windows >= 2);
    for (int k = 0; k < 3; k++)
        world_read(&w[k]);
    for (int k = 1; k < 3; k++) {
        assert_int_equal(w[k].sim.step, w[0].sim.step);
        assert_memory_equal(w[0].pos, w[k].pos, 4 * sizeof(float) * w[0].parts.n);
        assert_memory_equal(w[0].vel, w[k].vel, 4 * sizeof(float) * w[0].parts.n);
        assert_memory_equal(w[0].rho, w[k].rho, sizeof(float) * w[0].parts.n);
    }
    for (int k = 0; k < 3; k++)
        world_close(&w[k]);
}

/* The density pass a cell at a time (CPU devices, sph_lanes.clh: mz_cell_poly6_sums) against the
 * one-particle walk it replaces: the same disturbed state (positions moved by up to 0.3 spacing)
 * stepped once by each gives the same densities to the bit, with and without lists, in 3D and
 * 2D with wall particles; and whole runs of DFSPH and collapsed SPH in lanes and without,
 * three frames of each scene. */
static void test_density_by_cells(void **state)
{
    (void)state;
    static const char *const scenes[] = {"scenes/dam_break_3d.json", "scenes/dam_break_2d.json"};
    const char *sets[] = {"domain.boundary.type=particles"};
    const mz_cl device = cl;
    for (int sc = 0; sc < 2; sc++)
        for (int lists = 0; lists < 2; lists++) {
            world w[2];
            float *rho[2];
            setenv("MIZU_SPH_LISTS", lists ? "1" : "0", 1);
            for (int k = 0; k < 2; k++) {
                cl.lanes = k == 1;
                world_open_file(&w[k], scenes[sc], sets, 1);
                size_t n = w[k].parts.n;
                world_read(&w[k]);
                uint64_t x = 12345;
                double h = w[k].scene.fluids[0].spacing;
                for (size_t i = 0; i < n; i++)
                    for (int c = 0; c < w[k].scene.sim.dimensions; c++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
                        w[k].pos[4 * i + c] += (float)(0.6 * h * u);
                    }
                assert_int_equal(clEnqueueWriteBuffer(cl.queue, w[k].sim.pos, CL_TRUE, 0, 16 * n,
                                                      w[k].pos, 0, NULL, NULL), CL_SUCCESS);
                assert_int_equal(sim_substep(&w[k].sim, scene_frame_dt(&w[k].scene) / 100), 0);
                world_read(&w[k]);
                rho[k] = calloc(n, sizeof **rho);
                for (size_t i = 0; i < n; i++)
                    rho[k][w[k].id[i]] = w[k].rho[i];
            }
            cl.lanes = device.lanes;
            size_t n = w[0].parts.n, differ = 0;
            for (size_t i = 0; i < n; i++)
                differ += memcmp(&rho[0][i], &rho[1][i], sizeof(float)) != 0;
            print_message("density by cells (%s, lists %s): %zu particles, %zu densities differ "
                          "from the one-particle walk's\n", scenes[sc], lists ? "on" : "off", n,
                          differ);
            assert_int_equal(differ, 0);
            assert_true(rho[0][0] > 0.0f && rho[0][0] != 1000.0f);
            for (int k = 0; k < 2; k++) {
                free(rho[k]);
                world_close(&w[k]);
            }
        }
    unsetenv("MIZU_SPH_LISTS");
    /* DFSPH (its density pass by cells, its solves' and viscosity's list passes in particle
     * lanes) and collapsed SPH (its one pass by cells): whole runs give the same bits. DFSPH
     * also with its solves reading the density pass's gradients (MIZU_DFSPH_GRADS), in lanes
     * and one particle at a time (a GPU's way), against computing them. The first run, one
     * particle at a time computing its gradients, is the one whose density pass makes the
     * divergence solve's warm error pass (a negated rate there fails this) and whose forces
     * pass its deciding error passes (a rate 0.1% off there fails this). */
    static const char *const solvers[] = {"fluids[0].solver=dfsph",
                                          "fluids[0].solver=collapsed_sph"};
    for (int sc = 0; sc < 4; sc++) {
        /* DFSPH's divergence solve held to 1% of its tolerance: passes whose error decides go
         * on to apply their stiffnesses, so that those passes' sums count in the bits */
        const char *dsets[] = {solvers[sc / 2], "domain.boundary.type=particles",
                               "fluids[0].divergence_tolerance=0.00001"};
        world w[3];
        int runs = sc < 2 ? 3 : 2;
        for (int k = 0; k < runs; k++) {
            cl.lanes = k == 1;
            setenv("MIZU_DFSPH_GRADS", k > 0 ? "1" : "0", 1);
            world_open_file(&w[k], scenes[sc % 2], dsets, sc < 2 ? 3 : 2);
            for (int f = 0; f < 3; f++)
                assert_int_equal(sim_advance_frame(&w[k].sim, scene_frame_dt(&w[k].scene)), 0);
            world_read(&w[k]);
        }
        cl.lanes = device.lanes;
        unsetenv("MIZU_DFSPH_GRADS");
        size_t n = w[0].parts.n;
        print_message("%s by cells (%s): %ld steps, bits as the one-particle walk's%s\n",
                      solvers[sc / 2], scenes[sc % 2], w[0].sim.step,
                      runs > 2 ? ", with kept gradients too" : "");
        for (int k = 1; k < runs; k++) {
            assert_int_equal(w[0].sim.step, w[k].sim.step);
            assert_memory_equal(w[0].pos, w[k].pos, 4 * sizeof(float) * n);
            assert_memory_equal(w[0].vel, w[k].vel, 4 * sizeof(float) * n);
            assert_memory_equal(w[0].rho, w[k].rho, sizeof(float) * n);
        }
        for (int k = 0; k < runs; k++)
            world_close(&w[k]);
    }
}

static void test_dfsph_lists_grow(void **state)
{
    (void)state;
    const char *sets[] = {"fluids[0].solver=dfsph"};
    world a, b;
    world_open_file(&a, "scenes/dam_break_flume_3d.json", sets, 1);
    world_open_file(&b, "scenes/dam_break_flume_3d.json", sets, 1);
    assert_int_equal(dfsph_set_list_cap(&b.sim, 5), 0);
    for (int f = 0; f < 3; f++) {
        assert_int_equal(sim_advance_frame(&a.sim, scene_frame_dt(&a.scene)), 0);
        assert_int_equal(sim_advance_frame(&b.sim, scene_frame_dt(&b.scene)), 0);
    }
    mz_dfsph_stats sa, sb;
    assert_int_equal(dfsph_stats(&a.sim, &sa), 0);
    assert_int_equal(dfsph_stats(&b.sim, &sb), 0);
    print_message("DFSPH lists: %u entries a particle from the start (grown %ld times); cut to 5, "
                  "grown %ld times to %u\n", sa.list_cap, sa.lists_grown, sb.lists_grown,
                  sb.list_cap);
    assert_int_equal(sa.lists_grown, 0);
    assert_true(sb.lists_grown >= 1);
    assert_true(sb.list_cap >= 32);
    assert_int_equal(sa.steps, sb.steps);
    world_read(&a);
    world_read(&b);
    assert_memory_equal(a.pos, b.pos, 4 * sizeof(float) * a.parts.n);
    assert_memory_equal(a.vel, b.vel, 4 * sizeof(float) * a.parts.n);
    world_close(&a);
    world_close(&b);
}

static bool stop_every_step(void) { return true; }

/* DFSPH's first step as the start's ramp sets it, sqrt(tol · spacing / |g|) (dfsph.c). */
static double dfsph_first_step(const mz_scene *s)
{
    const double *gv = s->sim.gravity;
    double g = sqrt(gv[0] * gv[0] + gv[1] * gv[1] + gv[2] * gv[2]);
    return sqrt(s->fluids[0].density_tolerance * s->fluids[0].spacing / g);
}

/* DFSPH's first steps: the first at most sqrt(tol · spacing / |g|), each after it at most 1.1
 * times the bound before (dfsph.c, start_ramp), where the CFL alone would take the acceleration
 * bound cfl sqrt(h/|g|), 12 times longer here: from that a 10^7-particle column's first solves
 * ran out of iterations and threw its foot apart (docs/scene.md, DFSPH, the start's ramp). */
static void test_dfsph_start_ramp(void **state)
{
    (void)state;
    const char *sets[] = {"fluids[0].solver=dfsph"};
    world a;
    world_open_file(&a, "scenes/dam_break_flume_3d.json", sets, 1);
    const double *gv = a.scene.sim.gravity;
    double g = sqrt(gv[0] * gv[0] + gv[1] * gv[1] + gv[2] * gv[2]);
    double dt0 = dfsph_first_step(&a.scene);
    double cfl_first = scene_cfl(&a.scene) * sqrt(scene_support_radius(&a.scene) / g);
    assert_true(dt0 < cfl_first / 4); /* the ramp, not the CFL, sets the first steps */
    a.sim.pace.stop_requested = stop_every_step; /* back from each step */
    double t = 0, bound = dt0, dt = 0;
    for (int k = 0; k < 8; k++) { /* 5.8 ms: inside the first frame */
        assert_int_equal(sim_advance_frame(&a.sim, scene_frame_dt(&a.scene)), 1);
        dt = a.sim.time - t;
        t = a.sim.time;
        assert_true(dt <= bound * (1 + 1e-6)); /* g in float on the device side */
        if (k == 0)
            assert_true(fabs(dt - dt0) <= 1e-6 * dt0);
        bound *= 1.1;
    }
    mz_dfsph_stats st;
    assert_int_equal(dfsph_stats(&a.sim, &st), 0);
    print_message("DFSPH's start: first step %.4g ms (the CFL's would be %.4g ms), the 8th %.4g "
                  "ms; %ld steps set by the ramp\n", 1e3 * dt0, 1e3 * cfl_first, 1e3 * dt,
                  st.by_start);
    assert_int_equal(st.by_start, 8);
    world_close(&a);
}

/* The solves' step cap near a frame's end: water 215 spacings deep at rest (3D, 10 x 10 between
 * walls), its first frame (10 ms), whose last steps' density solves run out of iterations. A
 * heavy step caps the next at 0.9 of the step the solver wanted (dfsph.c, solves_control);
 * from the step taken, which the frame's end had cut to half of what was left, the cap followed
 * the frame's end down by halves (0.153 ms in this frame; in a 20 x 20 column 0.0048 ms, where
 * the solves' 1/dt velocities threw the column to the top of its tank: docs/benchmarks.md,
 * session 25). So no step of the frame is shorter than half the first (the start's ramp's). */
static void test_dfsph_frame_end_cap(void **state)
{
    (void)state;
    const char *json =
        "{\"mizu_scene\": 1, \"simulation\": {\"fps\": 100, \"frames\": 1},"
        " \"domain\": {\"min\": [0, 0, 0], \"max\": [0.044, 1.2, 0.044],"
        " \"boundary\": {\"type\": \"particles\"}},"
        " \"fluids\": [{\"solver\": \"dfsph\", \"box\": {\"min\": [0, 0, 0],"
        " \"max\": [0.044, 0.946, 0.044]}, \"spacing\": 0.0044,"
        " \"artificial_viscosity\": 0.05}]}";
    world w;
    world_open(&w, json, NULL, 0);
    double dt0 = dfsph_first_step(&w.scene);
    assert_int_equal(sim_advance_frame(&w.sim, scene_frame_dt(&w.scene)), 0);
    mz_dfsph_stats st;
    assert_int_equal(dfsph_stats(&w.sim, &st), 0);
    print_message("deep column (dfsph, %zu particles, 215 layers), first frame: %ld steps of "
                  "%.4g to %.4g ms, %ld solves capped (the first step %.4g ms)\n", w.parts.n,
                  st.steps, 1e3 * w.sim.dt_min, 1e3 * w.sim.dt_max, st.capped, 1e3 * dt0);
    assert_true(st.capped >= 1); /* the heavy solves the cap answers */
    assert_true(w.sim.dt_min >= 0.5 * dt0);
    world_close(&w);
}

int main(void)
{
    test_filter_from_env("SPH_TEST"); /* e.g. SPH_TEST='*dfsph*' */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_density_matches_brute_force),
        cmocka_unit_test(test_forces_match_host),
        cmocka_unit_test(test_forces_match_host_corrected),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_hydrostatic),
        cmocka_unit_test(test_hydrostatic_uncorrected),
        cmocka_unit_test(test_dam_break_wcsph),
        cmocka_unit_test(test_dam_break_collapsed),
        cmocka_unit_test(test_dam_break_dfsph),
        cmocka_unit_test(test_hydrostatic_dfsph),
        cmocka_unit_test(test_dam_break_water),
        cmocka_unit_test(test_flume_3d),
        cmocka_unit_test(test_flume_3d_dfsph),
        cmocka_unit_test(test_dfsph_lists_grow),
        cmocka_unit_test(test_dfsph_start_ramp),
        cmocka_unit_test(test_dfsph_frame_end_cap),
        cmocka_unit_test(test_wcsph_lists),
        cmocka_unit_test(test_wcsph_mask_windows),
        cmocka_unit_test(test_density_by_cells),
        cmocka_unit_test(test_colliders),
        cmocka_unit_test(test_wall_function),
    };
    return cmocka_run_group_tests_name("sph", tests, open_device, close_device);
}
