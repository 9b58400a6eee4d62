/* libFuzzer harness for the scene loader and --set overrides (`make fuzz`; docs/testing.md).
 * The input framing and the checks are in scene_input.h, shared with the regression test that
 * replays tests/data/fuzz/. "obj" paths resolve against $MIZU_FUZZ_SCENE_DIR, else scenes/. */
#include "fuzz/scene_input.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *dir;
    if (!dir) {
        dir = getenv("MIZU_FUZZ_SCENE_DIR");
        dir = dir && *dir ? dir : "scenes";
    }
    if (fuzz_scene_input(data, size, dir) < 0)
        abort(); /* an invariant broke: libFuzzer keeps the input as a crash */
    return 0;
}
