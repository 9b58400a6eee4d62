#!/bin/sh
# The 2D dam break with water's viscosity and wall friction (scenes/dam_break_2d_water.json,
# a = 0.05715 m) at the CI spacing a/50 and finer,
# a/100 and a/200 (40,000 particles, about 5 minutes on two cores), WCSPH and collapsed SPH,
# plus FLIP at a/100 of its own scene (twice the substeps: the same cells per step); then the
# table of front errors against Martin & Moyce and the comparison plot.
# usage: scripts/dam_break_fine.sh [OUTDIR]     (needs python3-h5py and python3-matplotlib)
set -eu
out="${1:-/tmp/mizu-dam-break}"
mkdir -p "$out"
here="$(dirname "$0")"
mizu="$here/../build/mizu"
scene="$here/../scenes/dam_break_2d_water.json"
a=0.05715
run() { # solver, spacing divisor
  "$mizu" run "$scene" --set "fluids[0].solver=$1" \
      --set "fluids[0].spacing=$(awk "BEGIN { print $a / $2 }")" -o "$out/$1_a$2.h5"
}
run wcsph 50
run wcsph 100
run wcsph 200
run collapsed_sph 50
run collapsed_sph 100
# the no-slip scene (artificial viscosity's drag against the walls) at a/50 and a/100
for n in 50 100; do
  "$mizu" run "$here/../scenes/dam_break_2d.json" --set "fluids[0].spacing=$(awk "BEGIN { print 0.1 / $n }")" \
      -o "$out/no_slip_a$n.h5"
done
"$mizu" run "$here/../scenes/flip_dam_break_2d.json" --set "fluids[0].spacing=0.001" \
    --set simulation.substeps=32 -o "$out/flip.h5"
/usr/bin/python3 "$here/dam_break_plot.py" "$out"/wcsph_a50.h5 "$out"/wcsph_a100.h5 \
    "$out"/wcsph_a200.h5 "$out"/collapsed_sph_a50.h5 "$out"/collapsed_sph_a100.h5 \
    "$out"/no_slip_a50.h5 "$out"/no_slip_a100.h5 "$out/flip.h5" -o "$out/dam_break_front.png"
