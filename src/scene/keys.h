/* The scene's key tables (src/scene/keys.c). */
#ifndef MZ_SCENE_KEYS_H
#define MZ_SCENE_KEYS_H
#include "scene/schema.h"

extern const mz_schema mz_scene_schema;

#endif
