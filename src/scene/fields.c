#include "scene/fields.h"

const mz_field_info mz_field_infos[MZ_FIELD_COUNT] = {
    [MZ_FIELD_POSITION] = {"position", 3, "m"},
    [MZ_FIELD_VELOCITY] = {"velocity", 3, "m s-1"},
    [MZ_FIELD_DENSITY] = {"density", 1, "kg m-3"},
    [MZ_FIELD_PRESSURE] = {"pressure", 1, "Pa"},
};

const char *const mz_field_names[MZ_FIELD_COUNT + 1] = {"position", "velocity", "density",
                                                        "pressure", 0};
