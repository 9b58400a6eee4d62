/* `mizu run --preview` and `mizu check --preview`: the scene's set-up drawn before any compute. */
#ifndef MZ_PREVIEW_H
#define MZ_PREVIEW_H
#include <stdio.h>

struct mz_scene;
/* The preview's path for output OUT ("out.h5" -> "out.preview.png"), malloc'd. */
char *preview_path(const char *out);
/* Build the scene's particles on the host and draw them, coloured by kind, into path.
 * Says where on msg (NULL: nothing). 0, or -1 after a message. */
int preview_write(const struct mz_scene *s, const char *path, FILE *msg);

#endif
