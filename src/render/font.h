/* Inside render/: the one bitmap font of captions and labels (font_glyphs.c, generated). */
#ifndef MZ_FONT_H
#define MZ_FONT_H
#include <stdint.h>

#define MZ_FONT_W 8
#define MZ_FONT_H_PX 17

/* Printable ASCII (32..126), each glyph width × height coverage values 0..255. */
typedef struct mz_font {
    int width, height, baseline;
    uint8_t coverage[95][MZ_FONT_W * MZ_FONT_H_PX];
} mz_font;

extern const mz_font mz_font_mono;

#endif
