#!/usr/bin/python3
"""A wave flume's gauges against linear wavemaker theory (Biesel), from a mizu output.

usage: scripts/wave_flume.py OUT.h5 [--piston NAME] [--depth H]
Needs h5py and numpy (Debian: python3-h5py).

Reads the run's scene from the file (/parameters/scene/effective): the piston (the collider
named NAME, default the first with a translation motion: its sine amplitude A and period T),
the still water depth h (default: the top of the first fluid's box). Linear theory: the
dispersion relation w^2 = g k tanh(kh) and the piston's transfer function
H/S = 2 (cosh 2kh - 1) / (sinh 2kh + 2kh), S = 2A. For each gauge at x it takes the periods
after the ramp and the wave's arrival (t > x/cg + ramp + T) and before the far wall's
reflection comes back (t < (2L - x)/cg, L the flume's length), and prints the mean crest-to-
trough height per period against H. Evanescent modes have died out beyond about two depths."""
import argparse, json, sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--piston", help="the wave maker's collider name")
    ap.add_argument("--depth", type=float, help="still water depth (m)")
    a = ap.parse_args()
    with h5py.File(a.output, "r") as f:
        raw = f["/parameters/scene/effective"][()]
        scene = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        movers = [c for c in scene.get("colliders", []) if "motion" in c
                  and c["motion"]["type"] == "translation" and "table" not in c["motion"]]
        if a.piston:
            movers = [c for c in movers if c.get("name") == a.piston]
        if not movers:
            sys.exit(f"{a.output}: no collider with a sine translation"
                     + (f" named {a.piston}" if a.piston else ""))
        m = movers[0]["motion"]
        A, T, ramp = m["amplitude"], m["period"], m.get("ramp", 0)
        h = a.depth or scene["fluids"][0]["box"]["max"][1] - scene["domain"]["min"][1]
        L = scene["domain"]["max"][0] - scene["domain"]["min"][0]
        g = np.linalg.norm(scene["simulation"].get("gravity", [0, -9.81, 0]))
        w = 2 * np.pi / T
        k = w * w / g
        for _ in range(200):
            k = w * w / (g * np.tanh(k * h))
        kh = k * h
        S = 2 * abs(A)
        H = S * 2 * (np.cosh(2 * kh) - 1) / (np.sinh(2 * kh) + 2 * kh)
        cg = 0.5 * w / k * (1 + 2 * kh / np.sinh(2 * kh))
        print(f"piston {movers[0].get('name')}: stroke {S:g} m, period {T:g} s; depth {h:g} m: "
              f"kh = {kh:.3f}, wavelength {2 * np.pi / k:.3f} m, group speed {cg:.3f} m/s; "
              f"Biesel H = {H:.4f} m")
        gauges = f.get("observables/gauges")
        if gauges is None:
            sys.exit(f"{a.output}: no gauges")
        for name in gauges:
            t, v = gauges[name]["time"][:], gauges[name]["value"][:]
            x = gauges[name].attrs["start"][0]
            t0, t1 = x / cg + ramp + T, min((2 * L - x) / cg, t[-1] if len(t) else 0)
            start, heights = t0, []
            while t0 + T <= t1:
                s = (t >= t0) & (t < t0 + T)
                if s.any():
                    heights.append(v[s].max() - v[s].min())
                t0 += T
            if not heights:
                print(f"gauge {name} at x = {x:g} m: no whole period between the settled wave's "
                      f"arrival ({start:.2f} s) and the reflection's return or the run's end "
                      f"({t1:.2f} s)")
                continue
            Hm = float(np.mean(heights))
            print(f"gauge {name} at x = {x:g} m: H = {Hm:.4f} m over {len(heights)} periods, "
                  f"{100 * (Hm / H - 1):+.1f}% against Biesel")


if __name__ == "__main__":
    main()
