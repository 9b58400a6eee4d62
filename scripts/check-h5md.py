#!/usr/bin/python3
"""Read mizu outputs as an H5MD reader would, through pyh5md (PyPI) and h5py, and report what
a reader would trip on.

    scripts/check-h5md.py OUT.h5 [OUT.h5 ...]

Checks, for each file: the /h5md version and the author's and creator's names; every particles
group's box (dimension, boundary, edges with a unit); every time-dependent element through
pyh5md (value, step and time of one length, a unit on value and on time); the time-independent
elements (id, body, phase, the static walls' positions); the moving colliders' particles
(/particles/moving_boundary) as a series of one row a frame; the observables' series; that every string in the file is variable-length UTF-8
(fixed-length strings come back as bytes); and the sidecar's per-frame views (/xdmf) against the
frames. Prints one line per file; exit 1 when any fails.
Run by tests/cli/test_viewers.c where pyh5md is installed (scripts/install-viewers.sh).
"""
import sys

import h5py
import pyh5md


def strings_are_text(f, problems):
    def visit(name, obj):
        for key, val in obj.attrs.items():
            if isinstance(val, bytes) or (hasattr(val, "dtype") and val.dtype.kind == "S"):
                problems.append("attribute %s@%s is a fixed-length (bytes) string" % (name, key))
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "SO":
            info = h5py.check_string_dtype(obj.dtype)
            if info is None or info.length is not None or info.encoding != "utf-8":
                problems.append("dataset %s is not a variable-length UTF-8 string" % name)
    for key, val in f.attrs.items():
        visit("/", f)
        break
    f.visititems(visit)


def check_box(group, problems):
    box = group["box"]
    if box.attrs.get("dimension") != 3:
        problems.append("%s/box: dimension %r" % (group.name, box.attrs.get("dimension")))
    if list(box.attrs.get("boundary", [])) != ["none", "none", "none"]:
        problems.append("%s/box: boundary %r" % (group.name, box.attrs.get("boundary")))
    if "edges" in box and box["edges"].attrs.get("unit") != "m":
        problems.append("%s/box/edges: no unit m" % group.name)


def check_series(group, name, problems, frames):
    el = pyh5md.element(group, name)
    if not isinstance(el, pyh5md.TimeElement):
        return frames
    n = el.value.shape[0]
    if len(el.step[()]) != n or len(el.time[()]) != n:
        problems.append("%s/%s: %d values, %d steps, %d times" % (group.name, name, n,
                                                                  len(el.step[()]),
                                                                  len(el.time[()])))
    if not el.value.attrs.get("unit") and group.name.startswith("/particles"):
        problems.append("%s/%s/value has no unit" % (group.name, name))
    if el.time.attrs.get("unit") != "s":
        problems.append("%s/%s/time has no unit s" % (group.name, name))
    return n


def check_file(path):
    problems = []
    with pyh5md.File(path, "r") as f:
        if list(f["h5md"].attrs["version"]) != [1, 1]:
            problems.append("h5md version %r" % list(f["h5md"].attrs["version"]))
        for who in ("author", "creator"):
            if not isinstance(f["h5md/" + who].attrs.get("name"), str):
                problems.append("h5md/%s has no name string" % who)
        frames = None
        for gname in f["particles"]:
            group = f.particles_group(gname)
            check_box(group, problems)
            for name in group:
                if name == "box":
                    continue
                if isinstance(group[name], h5py.Dataset):
                    group[name][()]  # time-independent element: readable
                    continue
                n = check_series(group, name, problems, frames)
                if gname == "all" and name == "position":
                    frames = n
        moving = "particles/moving_boundary/position/value" in f
        if moving and f["particles/moving_boundary/position/value"].shape[0] != frames:
            problems.append("particles/moving_boundary/position: %d frames, "
                            "particles/all/position %r"
                            % (f["particles/moving_boundary/position/value"].shape[0], frames))
        if "particles/boundary/position" in f and \
                not isinstance(f["particles/boundary/position"], h5py.Dataset):
            problems.append("particles/boundary/position is not a table written once")
        if "observables" in f:
            def series(name, obj):
                if isinstance(obj, h5py.Group) and "value" in obj and "time" in obj:
                    check_series(obj.parent, obj.name.split("/")[-1], problems, frames)
            f["observables"].visititems(series)
        if "xdmf" in f and frames is not None:
            for field in f["xdmf"]:
                if len(f["xdmf"][field]) != frames:
                    problems.append("xdmf/%s: %d views for %d frames" % (field, len(f["xdmf"][field]),
                                                                        frames))
            views = [("position", "particles/all/position/value")]
            if moving:
                views.append(("moving_boundary", "particles/moving_boundary/position/value"))
            for view, series in views:
                last = f["xdmf/%s/%d" % (view, frames - 1)][()]
                if (last[0] != f[series][frames - 1]).any():
                    problems.append("xdmf/%s/%d is not frame %d" % (view, frames - 1, frames - 1))
        strings_are_text(f, problems)
    print("%s: %s" % (path, "; ".join(problems) if problems else "ok"))
    return not problems


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ok = True
    for path in sys.argv[1:]:
        try:
            ok &= check_file(path)
        except Exception as e:  # a reader's exception is what this looks for
            print("%s: %s: %s" % (path, type(e).__name__, e))
            ok = False
    sys.exit(0 if ok else 1)


main()
