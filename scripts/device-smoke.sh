#!/bin/bash
# The checks and timings recorded in docs/gpu.md, for one device: run from the repository root
# with mizu on PATH (on the lent GPU machine: after `source .gpu/env.sh`).
# Usage: scripts/device-smoke.sh DEVICE OUTDIR      (DEVICE: gpu, cpu or P:D)
set -u -o pipefail
dev="$1"; out="$2"
mkdir -p "$out"
scene=scenes/falling_block.json
echo "== mizu devices"; mizu devices
echo "== default scene on $dev"
mizu run "$scene" --device "$dev" --profile -o "$out/a.h5" || exit 1
mizu run "$scene" --device "$dev" -q -o "$out/b.h5" || exit 1
if cmp -s "$out/a.h5" "$out/b.h5"; then echo "two runs: bit-identical files"; else echo "two runs: FILES DIFFER"; fi
mizu info "$out/a.h5"
for spacing in 0.004 0.002; do
  echo "== throughput: spacing $spacing, 240 frames x 4 substeps, output every 60th frame"
  mizu run "$scene" --device "$dev" --profile --set "fluids[0].spacing=$spacing" \
       --set output.every=60 --frames 240 -o "$out/big.h5" 2>&1 | grep -v '^mizu: frame'
  rm -f "$out/big.h5" "$out/big.xdmf"
done
