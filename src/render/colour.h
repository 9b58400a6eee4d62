/* Inside render/: colours. Field values through viridis (perceptually uniform, readable in
 * grey and by most colour-blind readers); bodies by kind when no field colours them. */
#ifndef MZ_COLOUR_H
#define MZ_COLOUR_H
#include "render/canvas.h"

#include <stdint.h>

/* viridis at t in [0, 1] (clamped); NaN gets magenta, which viridis never shows. */
mz_rgb colour_map(double t);
/* The colour of a particle of phase p (MZ_PHASE_*) when colouring by kind. */
mz_rgb colour_phase(uint32_t p);
const char *colour_phase_name(uint32_t p);
enum { COLOUR_PHASES = 4 };

#endif
