/* The domain's frame (domain.motion): a run whose whole domain moves is done in the domain's
 * own frame, where its walls and colliders stand still and every particle feels, besides
 * gravity, the frame's acceleration: for a law that translates it by s(t) along n, −s̈ n; for
 * one that turns it by θ(t) about the unit axis k through c, gravity turned by −θ into the
 * frame's axes and, at r = x − c, the Euler −θ̈ k × r, centrifugal −θ̇² k × (k × r) and
 * Coriolis −2 θ̇ k × v terms (kernels/common/frame.clh). The law is a function of time alone,
 * so a resumed run feels the same frame. */
#include "solvers/sim.h"
#include "util/rotate.h"

#include <math.h>

bool sim_frame_spins(const mz_scene *s)
{
    return s->domain.has_motion && s->domain.motion.type == MZ_MOTION_ROTATION;
}

mz_frame_arg sim_frame(const mz_scene *s, double t)
{
    double g[3] = {s->sim.gravity[0], s->sim.gravity[1], s->sim.gravity[2]};
    double w[3] = {0, 0, 0}, dw[3] = {0, 0, 0}, c[3] = {0, 0, 0};
    if (s->domain.has_motion) {
        const mz_motion *m = &s->domain.motion;
        double x[3];
        motion_eval(m, t, x);
        if (m->type == MZ_MOTION_TRANSLATION) {
            for (int a = 0; a < 3; a++)
                g[a] -= x[2] * m->unit[a];
        } else {
            double world[3] = {g[0], g[1], g[2]};
            rotate_about(m->unit, -x[0], world, g);
            for (int a = 0; a < 3; a++) {
                w[a] = x[1] * m->unit[a];
                dw[a] = x[2] * m->unit[a];
                c[a] = m->center[a];
            }
        }
    }
    if (s->sim.dimensions == 2)
        g[2] = 0;
    return (mz_frame_arg){sim_float4(g), sim_float4(w), sim_float4(dw), sim_float4(c)};
}
