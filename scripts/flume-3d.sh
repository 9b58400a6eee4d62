#!/bin/sh
# Issue 19's 3D validation at several resolutions: Martin & Moyce's column in a flume as wide as
# the column, with every fluid solver (wcsph, collapsed_sph, dfsph from
# scenes/dam_break_flume_3d.json; pbf from scenes/pbf_flume_3d.json; flip, FLIP and APIC
# transfers, from scenes/flip_flume_3d.json), then the table of front errors
# (scripts/surge_front.py). Spacing a/20 is what CI runs (tests/solvers/test_sph.c, test_pbf.c,
# test_flip.c); the error must not grow with resolution.
#
# usage: scripts/flume-3d.sh [OUTDIR]          (needs Python with h5py and numpy: PYTHON, default /usr/bin/python3)
#   RESOLUTIONS="20 40"   column widths a per spacing to run (a/20: 4,000 particles, a/40:
#                         32,000, a/80: 256,000; on two CPU cores a/40 takes about 15 minutes)
#   SOLVERS="wcsph collapsed_sph dfsph pbf flip apic"
#   MIZU_DEVICE=gpu       passed to mizu run --device
# FLIP's steps shrink with its cells (8 substeps a frame at a/20, twice that per halving); the
# position-based solver keeps the scene's substeps (its error law is per substep, not per cell).
set -eu
out="${1:-/tmp/mizu-flume}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
mizu="${MIZU:-$here/../build/mizu}"
scenes="$here/../scenes"
device=""
[ -n "${MIZU_DEVICE:-}" ] && device="--device $MIZU_DEVICE"
files=""
for r in ${RESOLUTIONS:-20 40}; do
  spacing=$(awk "BEGIN { print 0.1 / $r }")
  substeps=$(awk "BEGIN { print 8 * $r / 20 }")
  for solver in ${SOLVERS:-wcsph collapsed_sph dfsph pbf flip apic}; do
    case "$solver" in
      wcsph|collapsed_sph|dfsph)
        set -- "$scenes/dam_break_flume_3d.json" --set "fluids[0].solver=\"$solver\"" ;;
      pbf) set -- "$scenes/pbf_flume_3d.json" ;;
      flip) set -- "$scenes/flip_flume_3d.json" --set "simulation.substeps=$substeps" ;;
      apic) set -- "$scenes/flip_flume_3d.json" --set "simulation.substeps=$substeps" \
                --set 'fluids[0].transfer="apic"' ;;
      *) echo "flume-3d.sh: unknown solver $solver" >&2; exit 2 ;;
    esac
    f="$out/${solver}_a$r.h5"
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$mizu" run "$@" --set "fluids[0].spacing=$spacing" $device -o "$f" -q
    echo "$solver a/$r: $(( $(date +%s) - start )) s" >&2
    files="$files $f"
  done
done
# shellcheck disable=SC2086
"${PYTHON:-/usr/bin/python3}" "$here/surge_front.py" $files
