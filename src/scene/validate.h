/* Inside scene/: the checks that span keys, run by scene_load on a scene whose keys each read
 * cleanly (parse.c). */
#ifndef MZ_VALIDATE_H
#define MZ_VALIDATE_H
#include "scene/scene.h"

/* Every problem into *d with its JSON path; the scene's bodies are prepared (bodies_prepare)
 * when the rest is sound, and output.fields gets position. */
void scene_validate(mz_scene *s, mz_diag *d);

/* probes[] and gauges[] (observers.c), given the particle fields the solver produces
 * (MZ_FIELD_BIT): empty probe field lists become every field it has. */
void validate_observers(mz_scene *s, unsigned produced, mz_diag *d);

/* colliders[].motion (motion.c): solvers that move colliders, directions, axes, centres (the
 * collider's centre[c] when left out), tables read, laws that start at 0. */
void validate_motion(mz_scene *s, const double centre[][3], mz_diag *d);
/* The motion tables' rows (scene_free). */
void scene_motion_free(mz_scene *s);

#endif
