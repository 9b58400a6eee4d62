/* Output files read back through the HDF5 C API, for the tests that run the mizu binary. */
#ifndef MZ_TEST_FILES_H
#define MZ_TEST_FILES_H
#include "test_util.h"

#include <hdf5.h>
#include <sys/stat.h>

static inline bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Dataset path of file f as raw bytes (native type), malloc'd; *bytes set. NULL if missing
 * (also when a group on the path is a dataset: /particles/boundary/position/value, the table
 * /particles/boundary/position being one). */
static inline unsigned char *read_all(hid_t f, const char *path, size_t *bytes)
{
    htri_t there = -1;
    H5E_BEGIN_TRY { there = H5Lexists(f, path, H5P_DEFAULT); }
    H5E_END_TRY;
    if (there <= 0)
        return NULL;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT), s = H5Dget_space(d), t = H5Dget_type(d);
    hid_t nt = H5Tget_native_type(t, H5T_DIR_ASCEND);
    *bytes = (size_t)H5Sget_simple_extent_npoints(s) * H5Tget_size(nt);
    unsigned char *buf = malloc(*bytes + 1);
    assert_true(H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Tclose(nt);
    H5Tclose(t);
    H5Sclose(s);
    H5Dclose(d);
    return buf;
}

static inline long run_attr(hid_t f, const char *name)
{
    long long v = -1;
    hid_t a = H5Aopen_by_name(f, "/parameters/run", name, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    H5Aread(a, H5T_NATIVE_LLONG, &v);
    H5Aclose(a);
    return (long)v;
}

/* The first frame series (particle fields, steps, times, rigid poses, moving boundary particles)
 * that differs between the open outputs a and b, or that only one of them has; NULL when every
 * one matches. *compared counts the series both have. */
static inline const char *frames_differ(hid_t a, hid_t b, int *compared)
{
    static const char *const sets[] = {
        "/particles/all/position/value", "/particles/all/velocity/value",
        "/particles/all/density/value",  "/particles/all/pressure/value",
        "/particles/all/position/step",  "/particles/all/position/time",
        "/observables/rigid/center_of_mass/value", "/observables/rigid/orientation/value",
        "/particles/moving_boundary/position/value"};
    *compared = 0;
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        size_t na = 0, nb = 0;
        unsigned char *x = read_all(a, sets[i], &na), *y = read_all(b, sets[i], &nb);
        bool differ = (x || y) && (!x || !y || na != nb || memcmp(x, y, na) != 0);
        *compared += x && y;
        free(x);
        free(y);
        if (differ)
            return sets[i];
    }
    return NULL;
}

/* Every frame series of two outputs byte for byte, and the second complete with `frames` rows. */
static inline void assert_same_frames(const char *a_path, const char *b_path, long frames)
{
    hid_t a = H5Fopen(a_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t b = H5Fopen(b_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(run_attr(b, "complete"), 1);
    assert_int_equal(run_attr(b, "frames_written"), frames);
    int compared;
    const char *differs = frames_differ(a, b, &compared);
    if (differs)
        fail_msg("%s: %s differs from the uninterrupted run's", b_path, differs);
    assert_true(compared >= 4);
    H5Fclose(a);
    H5Fclose(b);
}

#endif
