/* Per-particle output fields: the names users write in output.fields and find in the H5MD file. */
#ifndef MZ_FIELDS_H
#define MZ_FIELDS_H

typedef enum mz_field {
    MZ_FIELD_POSITION,
    MZ_FIELD_VELOCITY,
    MZ_FIELD_DENSITY,
    MZ_FIELD_PRESSURE,
    MZ_FIELD_COUNT
} mz_field;

#define MZ_FIELD_BIT(f) (1u << (f))

typedef struct mz_field_info {
    const char *name;  /* /particles/all/<name> */
    int components;    /* 3: value [frames, N, 3]; 1: value [frames, N] */
    const char *unit;  /* H5MD unit attribute */
} mz_field_info;

extern const mz_field_info mz_field_infos[MZ_FIELD_COUNT];
/* NULL-terminated names, in enum order (the scene's output.fields vocabulary). */
extern const char *const mz_field_names[MZ_FIELD_COUNT + 1];

/* What a probe (probes[].fields) samples: Shepard-normalised kernel interpolation of the
 * particles' pressure, velocity and density, and the fluid fraction (the kernel sum of the
 * fluid's particles over its value on the fluid's rest lattice: 1 inside still water, 0.5 at a
 * flat free surface, 0 in air or inside a solid). */
typedef enum mz_probe_field {
    MZ_PROBE_PRESSURE,
    MZ_PROBE_VELOCITY,
    MZ_PROBE_DENSITY,
    MZ_PROBE_FRACTION,
    MZ_PROBE_FIELD_COUNT
} mz_probe_field;

#define MZ_PROBE_FIELD_BIT(f) (1u << (f))

/* Name, components and unit of each, as /observables/probes/<name>/<field> holds them. */
extern const mz_field_info mz_probe_field_infos[MZ_PROBE_FIELD_COUNT];
extern const char *const mz_probe_field_names[MZ_PROBE_FIELD_COUNT + 1];

#endif
