#!/usr/bin/python3
"""Surge front of a mizu dam-break run against Martin & Moyce (1952), as a PNG.

usage: scripts/dam_break_plot.py OUT.h5 [OUT2.h5 ...] -o front.png
Needs h5py, numpy and matplotlib (Debian: python3-h5py python3-matplotlib). The column width a
and the spacing come from the effective scene stored in each file. The front is the largest x
of a particle with a neighbour within 1.5 spacings behind it (a lone droplet is not the front);
Z = x/a against T = t sqrt(g/a), as in the experiment.

It also prints, per run, how far the front is from the experiment: the mean and worst relative
error of Z at the experiment's times as run, the worst error after the best gate-release shift
dT in [-0.3, 0.3] (the experiment's t = 0 is uncertain; tests/test_world.h fits the same way),
and the front's late speed dZ/dT over T = 1.9 to 3.3 (experiment: 1.44)."""
import argparse, json, os, sys

import h5py
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "validation", "martin_moyce_1952_n2_1_front.csv")


def front(x, spacing):
    xs = np.sort(x[:, 0])[::-1]
    for k in range(len(xs) - 1):
        if xs[k] - xs[k + 1] < 1.5 * spacing:
            return xs[k]
    return xs[-1]


def run_curve(path):
    try:
        f = h5py.File(path, "r")
        scene = json.loads(f["parameters/scene/effective"][()])
    except (OSError, KeyError) as e:
        sys.exit("dam_break_plot: %s: not a mizu output (%s)" % (path, e))
    fluids = scene.get("fluids") or []
    if not fluids or "box" not in fluids[0] or "position" not in f.get("particles/all", {}):
        sys.exit("dam_break_plot: %s: no fluid column to follow (its scene has %s): the plot "
                 "wants a dam break, a fluid box in a tank" % (
                     path, "no fluids" if not fluids else "fluids[0] without a box, or no positions"))
    fluid = fluids[0]
    a = fluid["box"]["max"][0] - fluid["box"]["min"][0]
    g = -scene["simulation"]["gravity"][1]
    pos = f["particles/all/position/value"]
    t = f["particles/all/position/time"][:]
    z = np.array([front(pos[k], fluid["spacing"]) for k in range(len(t))]) / a
    label = "%s, %s, spacing a/%.0f" % (os.path.basename(path), fluid["solver"], a / fluid["spacing"])
    return t * np.sqrt(g / a), z, label


def at(T, Z, t):
    """Z interpolated at times t (linear between frames)."""
    return np.interp(t, T, Z)


def errors(T, Z, ref):
    te, ze = ref["T_dimless"], ref["Z_dimless"]
    err = at(T, Z, te) / ze - 1
    shifts = np.round(np.arange(-30, 31) * 0.01, 2)
    worst = [np.max(np.abs(at(T, Z, te + s) / ze - 1)) for s in shifts]
    k = int(np.argmin(worst))
    late = (te >= 1.9)
    slope = np.polyfit(te[late], at(T, Z, te[late]), 1)[0]
    ref_slope = np.polyfit(te[late], ze[late], 1)[0]
    return np.mean(err), np.max(np.abs(err)), shifts[k], worst[k], slope, ref_slope


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("-o", "--output", default="dam_break_front.png")
    args = ap.parse_args()
    with open(DATA) as f:
        rows = [l.strip().split(",") for l in f if l.strip() and not l.startswith("#")]
    ref = {name: np.array([float(r[i]) for r in rows[1:]]) for i, name in enumerate(rows[0])}
    plt.figure(figsize=(6, 4.5))
    plt.plot(ref["T_dimless"], ref["Z_dimless"], "ko", label="Martin & Moyce (1952), n$^2$ = 1")
    plt.fill_between(ref["T_dimless"], 0.9 * ref["Z_dimless"], 1.1 * ref["Z_dimless"],
                     color="0.85", label="±10%")
    print("%-40s %9s %9s %7s %9s %7s" % ("run", "mean err", "max err", "dT", "max err", "dZ/dT"))
    for path in args.runs:
        T, Z, label = run_curve(path)
        plt.plot(T, Z, "-", label=label)
        mean, worst, shift, shifted, slope, ref_slope = errors(T, Z, ref)
        print("%-40s %+8.1f%% %8.1f%% %+7.2f %8.1f%% %7.2f" % (
            label[:40], 100 * mean, 100 * worst, shift, 100 * shifted, slope))
    print("%-40s %9s %9s %7s %9s %7.2f" % ("Martin & Moyce (1952)", "", "", "", "", ref_slope))
    plt.xlabel("T = t √(g/a)")
    plt.ylabel("Z = x$_{front}$ / a")
    plt.xlim(0, ref["T_dimless"].max() * 1.05)
    plt.ylim(1, 6)
    plt.grid(alpha=0.3)
    plt.legend(fontsize=8)
    plt.title("Dam break: surge front")
    plt.tight_layout()
    plt.savefig(args.output, dpi=120)
    print("wrote", args.output)


if __name__ == "__main__":
    sys.exit(main())
