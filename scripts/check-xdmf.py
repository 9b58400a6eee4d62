"""Open a mizu sidecar with each of ParaView's XDMF readers and check what they load.

    pvbatch scripts/check-xdmf.py OUT.xdmf POINTS FRAMES ARRAY,ARRAY,...

POINTS: the points a frame holds in all (particles, plus the cloth surfaces' copy of them, plus
wall particles); FRAMES: the time steps; ARRAYS: the point arrays every reader must show. Each of
XDMFReader (legacy), Xdmf3ReaderS, Xdmf3ReaderT and whatever OpenDataFile picks is asked for
the last time step. Prints one line per reader; exit 1 when any loads something else.
Run by tests/cli/test_viewers.c where ParaView (Debian's paraview and python3-paraview) is
installed; needs no h5py (ParaView's HDF5 and h5py's do not load into one process).
"""
import os
import sys

from paraview import simple


def check(name, reader, points, frames, arrays):
    times = reader.TimestepValues
    times = list(times) if hasattr(times, "__len__") else [times]
    reader.UpdatePipeline(times[-1] if times else 0.0)
    got = reader.GetDataInformation().GetNumberOfPoints()
    names = set(reader.PointData.keys())
    problems = []
    if got != points:
        problems.append("%d points, not %d" % (got, points))
    if len(times) != frames:
        problems.append("%d time steps, not %d" % (len(times), frames))
    missing = sorted(set(arrays) - names)
    if missing:
        problems.append("no array %s (has %s)" % (", ".join(missing), ", ".join(sorted(names))))
    print("%-14s %s" % (name, "; ".join(problems) if problems else
                        "ok: %d points, %d time steps, arrays %s" % (got, len(times),
                                                                      ", ".join(sorted(names)))))
    return not problems


def main():
    path = os.path.abspath(sys.argv[1])  # Xdmf3 resolves the .h5 against the sidecar's folder
    points, frames = int(sys.argv[2]), int(sys.argv[3])
    arrays = [a for a in sys.argv[4].split(",") if a] if len(sys.argv) > 4 else []
    ok = check("XDMFReader", simple.XDMFReader(FileNames=[path]), points, frames, arrays)
    ok &= check("Xdmf3ReaderS", simple.Xdmf3ReaderS(FileName=[path]), points, frames, arrays)
    ok &= check("Xdmf3ReaderT", simple.Xdmf3ReaderT(FileName=[path]), points, frames, arrays)
    opened = simple.OpenDataFile(path)
    ok &= check("OpenDataFile:" + opened.GetXMLName(), opened, points, frames, arrays)
    sys.exit(0 if ok else 1)


main()
