#!/usr/bin/python3
"""Issue 19's measure of a dam-break run against Martin & Moyce (1952): the surge front is the
99.5th percentile of the particles' x (a few droplets ahead do not count), Z = x/a against
T = t sqrt(g/a); the error is the mean of |Z/Z_exp - 1| over the experiment's points inside the
run, at the release shift |dT| <= 0.1 that fits best. tests/test_world.h (martin_moyce_mean)
computes the same in the tests.

usage: scripts/surge_front.py [-a A] OUT.h5 [OUT.h5 ...]      (a: the column's width, 0.1 m)
Needs h5py and numpy (Debian: python3-h5py)."""
import argparse
import os

import h5py
import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                    "validation", "martin_moyce_1952_n2_1_front.csv")


def error(path, a, max_shift=0.1):
    ref = np.loadtxt(DATA, delimiter=",", comments="#", skiprows=5)
    with h5py.File(path, "r") as f:
        x = f["particles/all/position/value"]
        t = f["particles/all/position/time"][()]
        Z = np.array([np.percentile(x[k][:, 0], 99.5) for k in range(len(t))]) / a
    T = t * np.sqrt(9.81 / a)
    best = (np.inf, 0.0, 0)
    for shift in np.arange(-max_shift, max_shift + 1e-9, 0.005):
        Te = ref[:, 0] - shift
        ok = (Te >= T[0]) & (Te <= T[-1])
        if ok.sum() >= 5:
            e = np.mean(np.abs(np.interp(Te[ok], T, Z) / ref[ok, 1] - 1))
            if e < best[0]:
                best = (e, shift, int(ok.sum()))
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-a", type=float, default=0.1)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for path in args.files:
        e, shift, n = error(path, args.a)
        print("%-40s mean error %5.1f%%  shift %+.3f  (%d points)" % (os.path.basename(path),
                                                                     100 * e, shift, n))


main()
