/* `mizu render OUT.h5`: pictures of an output file's frames (render/ draws, this reads). */
#ifndef MZ_CLI_RENDER_H
#define MZ_CLI_RENDER_H

/* argv[0] is "render". Returns the exit code. */
int render_command(int argc, char **argv);

#endif
