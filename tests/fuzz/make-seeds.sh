#!/bin/sh
# Seed corpus and dictionary for a fuzz target, generated from the tree (nothing binary is
# committed): the example scenes, the test scenes, the kept fuzz regressions, and a few scenes
# with --set overrides in the harness's framing (JSON, NUL, override, NUL, ...).
# Usage: tests/fuzz/make-seeds.sh MIZU TARGET SEED_DIR DICT
set -eu
mizu="$1" target="$2" seeds="$3" dict="$4"
rm -rf "$seeds"
mkdir -p "$seeds"

if [ "$target" = fuzz_obj ]; then
  cp scenes/meshes/*.obj "$seeds"/
  for f in tests/data/fuzz/*.obj; do [ -e "$f" ] && cp "$f" "$seeds"/; done
  cp tests/fuzz/obj.dict "$dict"
  exit 0
fi

for f in scenes/*.json tests/data/*.json tests/data/fuzz/*.json; do
  [ -e "$f" ] && cp "$f" "$seeds/$(basename "$(dirname "$f")")_$(basename "$f")"
done
# the complete scenes shown in docs/scene.md (```json blocks that hold "mizu_scene")
awk -v dir="$seeds" '
  /^```json/ { n++; file = sprintf("%s/docs_scene_md_%02d.json", dir, n); keep = 1; next }
  /^```/ { keep = 0; next }
  keep { print > file }' docs/scene.md
for f in "$seeds"/docs_scene_md_*.json; do
  [ -e "$f" ] && { grep -q mizu_scene "$f" || rm -f "$f"; }
done
# scene, then overrides (each NUL-terminated)
with_sets() {
  out="$seeds/set_$1"; scene="$2"; shift 2
  { cat "$scene"; for s in "$@"; do printf '\000%s' "$s"; done; } > "$out"
}
with_sets minimal tests/data/good_minimal.json "fluids[0].spacing=0.1" \
  "simulation.gravity=[0,-1,0]" "output.compression=gzip" "domain.boundary.type=\"clamp\""
with_sets bad_index tests/data/good_minimal.json "fluids[3].spacing=1" "simulation.fps.=5"
with_sets new_key tests/data/good_minimal.json "colliders=[{\"sphere\":{\"center\":[0.5,0.5,0.5],\"radius\":0.1}}]"
with_sets frames scenes/falling_block.json "simulation.frames=10" "simulation.dimensions=2"
with_sets softbody scenes/softbody_drop.json "meshes[0].spacing=0.05" "meshes[0].kind=cloth"
with_sets cloth scenes/cloth_hang.json "cloths[0].grid.resolution=[4,3]" "cloths[0].pins=[\"edge_v1\"]"
with_sets rigid scenes/pbf_box_float.json "rigids[0].rotate=[0,0,30]" "fluids[0].spacing=0.05"

# Dictionary: every key as a JSON member name and as a --set path, every enum name, and JSON's
# own tokens. From `mizu keys`: unindented lines are paths, "one of ..." lists the names.
{
  printf 'nul="\\x00"\n'
  for t in '{' '}' '[' ']' ':' ',' '=' '.' 'true' 'false' 'null' '1e308' '-1e-308' '0.5' \
           '-0' '2147483647' '1e9' '[0, 0, 0]' '[1, 1, 1]'; do
    printf 'tok="%s"\n' "$t"
  done
  "$mizu" keys | awk '
    /^[^ ]/ {
      n = split($0, part, ".")
      printf "key=\"\\\"%s\\\"\"\n", part[n]
      p = $0; gsub(/\[\]/, "[0]", p)
      printf "set=\"%s=\"\n", p
    }
    /^    one of |^    array of "/ {
      line = $0
      while (match(line, /"[^"]*"/)) {
        printf "name=\"\\\"%s\\\"\"\n", substr(line, RSTART + 1, RLENGTH - 2)
        line = substr(line, RSTART + RLENGTH)
      }
    }'
} | sort -u > "$dict"
