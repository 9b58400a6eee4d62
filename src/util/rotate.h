/* util/: v turned about an axis, for the host's poses of turning solids and frames. */
#ifndef MZ_UTIL_ROTATE_H
#define MZ_UTIL_ROTATE_H

/* v turned by angle (rad) about the unit axis k, right-handed (Rodrigues). */
void rotate_about(const double k[3], double angle, const double v[3], double out[3]);

#endif
