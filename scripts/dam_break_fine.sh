#!/bin/sh
# The 2D dam break at a finer resolution than CI runs (spacing a/100: 10,000 particles, a few
# minutes on two cores), both SPH solvers and FLIP (twice the substeps: the same cells per step),
# and the comparison plot against Martin & Moyce.
# usage: scripts/dam_break_fine.sh [OUTDIR]     (needs python3-matplotlib for the plot)
set -eu
out="${1:-/tmp/mizu-dam-break}"
mkdir -p "$out"
mizu="$(dirname "$0")/../build/mizu"
for solver in wcsph collapsed_sph; do
  "$mizu" run scenes/dam_break_2d.json --set "fluids[0].solver=$solver" \
      --set "fluids[0].spacing=0.001" -o "$out/$solver.h5"
done
"$mizu" run scenes/flip_dam_break_2d.json --set "fluids[0].spacing=0.001" \
    --set simulation.substeps=32 -o "$out/flip.h5"
/usr/bin/python3 "$(dirname "$0")/dam_break_plot.py" "$out/wcsph.h5" "$out/collapsed_sph.h5" \
    "$out/flip.h5" -o "$out/dam_break_front.png"
