#include "scene/fields.h"

const mz_field_info mz_field_infos[MZ_FIELD_COUNT] = {
    [MZ_FIELD_POSITION] = {"position", 3, "m"},
    [MZ_FIELD_VELOCITY] = {"velocity", 3, "m s-1"},
    [MZ_FIELD_DENSITY] = {"density", 1, "kg m-3"},
    [MZ_FIELD_PRESSURE] = {"pressure", 1, "Pa"},
};

const char *const mz_field_names[MZ_FIELD_COUNT + 1] = {"position", "velocity", "density",
                                                        "pressure", 0};

const mz_field_info mz_probe_field_infos[MZ_PROBE_FIELD_COUNT] = {
    [MZ_PROBE_PRESSURE] = {"pressure", 1, "Pa"},
    [MZ_PROBE_VELOCITY] = {"velocity", 3, "m s-1"},
    [MZ_PROBE_DENSITY] = {"density", 1, "kg m-3"},
    [MZ_PROBE_FRACTION] = {"fraction", 1, ""},
};

const char *const mz_probe_field_names[MZ_PROBE_FIELD_COUNT + 1] = {"pressure", "velocity",
                                                                    "density", "fraction", 0};
