/* Reading helpers (h5_read.h). */
#include "io/h5_read.h"

#include <stdio.h>

hid_t h5_open_unlocked(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), file = -1;
    if (fapl >= 0 && MZ_FILE_LOCKING_OFF(fapl) >= 0)
        file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    return file;
}

int h5_dims(hid_t d, hsize_t dims[3])
{
    hid_t s = d < 0 ? -1 : H5Dget_space(d);
    int rank = s < 0 ? -1 : H5Sget_simple_extent_ndims(s);
    if (rank < 0 || rank > 3 || H5Sget_simple_extent_dims(s, dims, NULL) < 0)
        rank = -1;
    if (s >= 0)
        H5Sclose(s);
    return rank;
}

bool h5_exists(hid_t file, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        bool ok = H5Lexists(file, buf, H5P_DEFAULT) > 0;
        *p = c;
        if (!ok)
            return false;
        if (c == '\0')
            return true;
    }
}
