/* Tests: a PNG read back as RGB through libpng's simplified API. */
#ifndef MZ_TEST_PNG_READ_H
#define MZ_TEST_PNG_READ_H
#include <png.h>

#include <stdlib.h>
#include <string.h>

typedef struct test_png {
    int w, h;
    unsigned char *rgb;
} test_png;

/* 0, or -1 when path is not a readable PNG. */
static inline int png_load(const char *path, test_png *p)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path))
        return -1;
    im.format = PNG_FORMAT_RGB;
    p->w = (int)im.width;
    p->h = (int)im.height;
    p->rgb = malloc(PNG_IMAGE_SIZE(im));
    if (!p->rgb || !png_image_finish_read(&im, NULL, p->rgb, 0, NULL)) {
        free(p->rgb);
        png_image_free(&im);
        return -1;
    }
    return 0;
}

static inline const unsigned char *png_px(const test_png *p, int x, int y)
{
    return p->rgb + 3 * ((size_t)y * (size_t)p->w + (size_t)x);
}

#endif
