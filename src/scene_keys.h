/* The scene's key tables (src/scene_keys.c). */
#ifndef MZ_SCENE_KEYS_H
#define MZ_SCENE_KEYS_H
#include "schema.h"

extern const mz_schema mz_scene_schema;

#endif
