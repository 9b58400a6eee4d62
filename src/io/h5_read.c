/* Reading helpers (h5_read.h). */
#include "io/h5_read.h"

#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>

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

int h5_dataset_dims(hid_t file, const char *name, hsize_t dims[3])
{
    if (!h5_exists(file, name))
        return -1;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    int rank = h5_dims(d, dims);
    if (d >= 0)
        H5Dclose(d);
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
        if (ok && c != '\0') { /* the path goes on: only through a group (else HDF5 complains) */
            hid_t o = H5Oopen(file, buf, H5P_DEFAULT);
            ok = o >= 0 && H5Iget_type(o) == H5I_GROUP;
            if (o >= 0)
                H5Oclose(o);
        }
        *p = c;
        if (!ok)
            return false;
        if (c == '\0')
            return true;
    }
}

/* A scalar string attribute or dataset (fixed or variable length): malloc'd, or NULL. */
static char *read_string(hid_t id, int is_attr)
{
    hid_t ft = is_attr ? H5Aget_type(id) : H5Dget_type(id);
    hid_t sp = is_attr ? H5Aget_space(id) : H5Dget_space(id);
    hid_t mt = H5Tcopy(H5T_C_S1);
    char *s = NULL;
    if (ft < 0 || sp < 0 || mt < 0 || H5Tget_class(ft) != H5T_STRING ||
        H5Sget_simple_extent_npoints(sp) != 1)
        goto done;
    if (H5Tis_variable_str(ft) > 0) {
        char *v = NULL;
        if (H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Tset_cset(mt, H5Tget_cset(ft)) >= 0 &&
            (is_attr ? H5Aread(id, mt, &v) : H5Dread(id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v)) >=
                0 &&
            v) {
            s = xstrdup(v);
            H5free_memory(v);
        }
    } else {
        size_t size = H5Tget_size(ft) + 1; /* room for a NUL that a space-padded one lacks */
        s = xcalloc(size, 1);
        /* HDF5 converts between string sizes but not between ASCII and UTF-8. */
        if (H5Tset_size(mt, size) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 ||
            (is_attr ? H5Aread(id, mt, s) : H5Dread(id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, s)) <
                0) {
            free(s);
            s = NULL;
        }
    }
done:
    if (ft >= 0)
        H5Tclose(ft);
    if (sp >= 0)
        H5Sclose(sp);
    if (mt >= 0)
        H5Tclose(mt);
    return s;
}

char *h5_read_str(hid_t file, const char *name)
{
    if (!h5_exists(file, name))
        return NULL;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    char *s = d < 0 ? NULL : read_string(d, 0);
    if (d >= 0)
        H5Dclose(d);
    return s;
}

char *h5_read_str_attr(hid_t file, const char *obj, const char *name)
{
    if (!h5_exists(file, obj) || H5Aexists_by_name(file, obj, name, H5P_DEFAULT) <= 0)
        return NULL;
    hid_t a = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    char *s = a < 0 ? NULL : read_string(a, 1);
    if (a >= 0)
        H5Aclose(a);
    return s;
}

int h5_read_record(hid_t file, const char *name, hsize_t record, int comps, size_t n, float *out)
{
    hid_t d = h5_exists(file, name) ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
    hsize_t dims[3];
    int rank = h5_dims(d, dims);
    hid_t fs = -1, ms = -1;
    bool ok = rank == (comps > 1 ? 3 : 2) && record < dims[0] && dims[1] == n &&
              (comps == 1 || dims[2] == (hsize_t)comps);
    if (ok) {
        hsize_t start[3] = {record, 0, 0}, count[3] = {1, n, (hsize_t)comps};
        fs = H5Dget_space(d);
        ms = H5Screate_simple(rank, count, NULL);
        ok = fs >= 0 && ms >= 0 &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, out) >= 0;
    }
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    return ok ? 0 : -1;
}

int h5_read_uints(hid_t file, const char *name, size_t count, uint32_t *out)
{
    hid_t d = h5_exists(file, name) ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
    hid_t s = d < 0 ? -1 : H5Dget_space(d);
    bool ok = s >= 0 && (size_t)H5Sget_simple_extent_npoints(s) == count &&
              H5Dread(d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
    if (s >= 0)
        H5Sclose(s);
    if (d >= 0)
        H5Dclose(d);
    return ok ? 0 : -1;
}

int h5_read_element(hid_t file, const char *name, hsize_t i, double *v)
{
    hid_t d = h5_exists(file, name) ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
    hid_t fs = d < 0 ? -1 : H5Dget_space(d);
    hsize_t one = 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    int ok = fs >= 0 && ms >= 0 && H5Sselect_elements(fs, H5S_SELECT_SET, 1, &i) >= 0 &&
             H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, v) >= 0;
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    return ok;
}
