#!/bin/sh
# Issue 19's 3D validation at two resolutions: Martin & Moyce's column in a flume as wide as the
# column, spacing a/20 (what CI runs: tests/solvers/test_sph.c, test_flip.c) and a/40, with
# WCSPH, collapsed SPH and FLIP; then the table of front errors (scripts/surge_front.py). The
# error must not grow with resolution. About 15 minutes on two cores (a/40 SPH: 32,000
# particles). usage: scripts/flume-3d.sh [OUTDIR]       (needs python3-h5py)
set -eu
out="${1:-/tmp/mizu-flume}"
mkdir -p "$out"
here="$(dirname "$0")"
mizu="$here/../build/mizu"
for solver in wcsph collapsed_sph; do
  "$mizu" run "$here/../scenes/dam_break_flume_3d.json" --set "fluids[0].solver=$solver" \
      -o "$out/${solver}_a20.h5" -q
  "$mizu" run "$here/../scenes/dam_break_flume_3d.json" --set "fluids[0].solver=$solver" \
      --set fluids[0].spacing=0.0025 -o "$out/${solver}_a40.h5" -q
done
"$mizu" run "$here/../scenes/flip_flume_3d.json" -o "$out/flip_a20.h5" -q
"$mizu" run "$here/../scenes/flip_flume_3d.json" --set fluids[0].spacing=0.0025 \
    -o "$out/flip_a40.h5" -q
/usr/bin/python3 "$here/surge_front.py" "$out"/*_a20.h5 "$out"/*_a40.h5
