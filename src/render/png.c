/* PNG files through libpng: written beside the target and renamed over it, tagged with a
 * Software text chunk so that mizu later knows which PNGs it may replace. */
#include "render/render.h"
#include "util/err.h"

#include <png.h>

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOFTWARE "mizu " MIZU_VERSION

/* Whether the PNG at path carries mizu's Software text (read up to the image data). */
static bool written_by_mizu(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char sig[8];
    if (!f)
        return false;
    volatile bool ours = false;
    png_structp png = NULL;
    png_infop info = NULL;
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8))
        goto done;
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png)))
        goto done;
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    png_textp text;
    int n = 0;
    png_get_text(png, info, &text, &n);
    for (int k = 0; k < n; k++)
        if (!strcmp(text[k].key, "Software") && !strncmp(text[k].text, "mizu ", 5))
            ours = true;
done:
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    fclose(f);
    return ours;
}

static int write_to(FILE *f, const mz_image *img, const char *title)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    /* Level 3 with libpng's adaptive filters: a tenth of level 6's time on these pictures
     * (flat background, smooth shading) for files a few percent larger. */
    png_set_compression_level(png, 3);
    png_text text[2] = {{.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Software",
                         .text = SOFTWARE},
                        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Title",
                         .text = (char *)(title ? title : "")}};
    png_set_text(png, info, text, title && *title ? 2 : 1);
    png_write_info(png, info);
    for (int y = 0; y < img->height; y++)
        png_write_row(png, img->rgb + (size_t)y * (size_t)img->width * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int render_write_png(const char *path, const mz_image *img, const char *title)
{
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode) || !written_by_mizu(path)) {
            mz_error("%s exists and is not a picture mizu wrote: not replacing it (remove it or "
                     "choose another name)", path);
            return -1;
        }
    } else if (errno != ENOENT) {
        mz_error("cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    size_t len = strlen(path);
    char *tmp = xmalloc(len + 16);
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        mz_error("cannot write %s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    mode_t mask = umask(0); /* mkstemp made it 0600: give it what a created file gets */
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        mz_error("cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    FILE *f = fdopen(fd, "wb");
    int rc = f ? write_to(f, img, title) : -1;
    if (f && fflush(f) != 0)
        rc = -1;
    int saved = errno;
    if (f ? fclose(f) != 0 : close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1, saved = errno;
    if (rc != 0) {
        mz_error("cannot write %s: %s", path, saved ? strerror(saved) : "libpng failed");
        unlink(tmp);
    }
    free(tmp);
    return rc;
}
