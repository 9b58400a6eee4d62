#!/bin/sh
# Turn the numbered pictures of `mizu render OUT.h5 --every N -o DIR` into an MP4 with ffmpeg.
#
#   scripts/frames-to-mp4.sh DIR [OUT.mp4] [FPS]
#
# OUT.mp4 defaults to DIR.mp4, FPS (pictures per second of video) to 30. H.264 in yuv420p, the
# form every player and browser opens; the width and height are kept (1280x720 by default:
# even, as yuv420p needs). Refuses to replace a file that is there already.
set -eu
dir=${1:?usage: scripts/frames-to-mp4.sh DIR [OUT.mp4] [FPS]}
out=${2:-${dir%/}.mp4}
fps=${3:-30}
command -v ffmpeg >/dev/null 2>&1 || {
  echo "frames-to-mp4: ffmpeg is not installed (Debian: apt-get install ffmpeg)" >&2; exit 1; }
ls "$dir"/frame_*.png >/dev/null 2>&1 || {
  echo "frames-to-mp4: no frame_*.png in $dir (make them with mizu render OUT.h5 --every N -o $dir)" >&2
  exit 1; }
[ ! -e "$out" ] || { echo "frames-to-mp4: $out exists: not replacing it" >&2; exit 1; }
# The pictures are numbered by frame record (with gaps of N): glob keeps their order.
ffmpeg -loglevel error -framerate "$fps" -pattern_type glob -i "$dir/frame_*.png" \
  -c:v libx264 -pix_fmt yuv420p -vf "pad=ceil(iw/2)*2:ceil(ih/2)*2" "$out"
echo "frames-to-mp4: $out"
