#!/usr/bin/python3
"""Time series of a mizu run's probes, gauges and forces on solids, as PNGs.

usage: scripts/plot_observables.py OUT.h5 [-o DIR] [--probes NAME,...] [--gauges NAME,...]
Needs h5py, numpy and matplotlib (Debian: python3-h5py python3-matplotlib).

Writes DIR/probes_<field>.png for each field the probes sampled (pressure, density, fraction:
one line per probe; velocity: its magnitude), DIR/gauges.png (each gauge's level) and
DIR/forces.png (each collider's and wall's force, x and y, and z in 3D: colliders[].forces,
domain.boundary.forces), against time in seconds, and prints one line per series: its samples
and its range. DIR defaults to the output's directory. A file with none of them is refused with
a clear message."""
import argparse, os, sys

import h5py
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

UNITS = {"pressure": "Pa", "density": "kg/m³", "velocity": "m/s", "fraction": ""}


def series(group):
    """(time, value) of an H5MD time series group."""
    return group["time"][:], group["value"][:]


def pick(output, group, wanted, what):
    """The names asked for (comma-separated; None: all) that the group has, or exit naming
    those it lacks."""
    names = wanted.split(",") if wanted else list(group)
    missing = [n for n in names if n not in group]
    if missing:
        sys.exit(f"{output}: no {what} named {', '.join(missing)} (it has {', '.join(group)})")
    return names


def plot(path, title, ylabel, lines):
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    for name, t, v in lines:
        ax.plot(t, v, lw=1, label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(lines) <= 12:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", help="a mizu output (.h5)")
    ap.add_argument("-o", "--dir", help="where the PNGs go (default: beside the output)")
    ap.add_argument("--probes", help="comma-separated probe names (default: all)")
    ap.add_argument("--gauges", help="comma-separated gauge names (default: all)")
    a = ap.parse_args()
    out_dir = a.dir or os.path.dirname(os.path.abspath(a.output))
    os.makedirs(out_dir, exist_ok=True)
    with h5py.File(a.output, "r") as f:
        probes = f.get("observables/probes")
        gauges = f.get("observables/gauges")
        solids = [(k, f[f"observables/{k}"]) for k in ("colliders", "walls")
                  if f"observables/{k}" in f]
        if probes is None and gauges is None and not solids:
            sys.exit(f"{a.output}: no probes, gauges or forces to plot (the scene had no "
                     "probes[], gauges[] or forces)")
        stem = os.path.splitext(os.path.basename(a.output))[0]
        if probes is not None:
            names = pick(a.output, probes, a.probes, "probe")
            for field, unit in UNITS.items():
                lines = []
                for n in names:
                    if field not in probes[n]:
                        continue
                    t, v = series(probes[n][field])
                    if field == "velocity":
                        v = np.linalg.norm(v, axis=1)
                    lines.append((n, t, v))
                    rng = f"{v.min():.6g} .. {v.max():.6g}" if len(v) else "empty"
                    print(f"probe {n} {field}: {len(v)} samples, {rng} {unit}")
                if lines:
                    label = f"{field} ({unit})" if unit else field
                    if field == "velocity":
                        label = f"|velocity| ({unit})"
                    plot(os.path.join(out_dir, f"{stem}_probes_{field}.png"),
                         f"{stem}: probes, {field}", label, lines)
        if gauges is not None:
            names = pick(a.output, gauges, a.gauges, "gauge")
            lines = []
            for n in names:
                t, v = series(gauges[n])
                lines.append((n, t, v))
                rng = f"{v.min():.6g} .. {v.max():.6g}" if len(v) else "empty"
                print(f"gauge {n}: {len(v)} samples, level {rng} m")
            plot(os.path.join(out_dir, f"{stem}_gauges.png"), f"{stem}: gauges",
                 "level (m)", lines)
        lines = []
        for kind, group in solids:
            for n in group:
                t, v = series(group[n]["force"])
                for axis in range(v.shape[1] if v.ndim == 2 else 0):
                    if axis == 2 and not np.any(v[:, 2]):
                        continue  # 2D
                    lines.append((f"{n} F{'xyz'[axis]}", t, v[:, axis]))
                rng = (f"|F| {np.linalg.norm(v, axis=1).min():.6g} .. "
                       f"{np.linalg.norm(v, axis=1).max():.6g}" if len(v) else "empty")
                print(f"{kind[:-1]} {n} force: {len(v)} samples, {rng} N")
        if lines:
            plot(os.path.join(out_dir, f"{stem}_forces.png"), f"{stem}: forces on solids",
                 "force (N; N/m in 2D)", lines)


if __name__ == "__main__":
    main()
