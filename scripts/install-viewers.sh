#!/bin/sh
# Install the readers the output is checked against (tests/cli/test_viewers.c, docs/testing.md):
# ParaView with its Python (pvbatch: the XDMF readers), pyh5md (PyPI) for /usr/bin/python3, and
# ffmpeg (scripts/frames-to-mp4.sh). Not needed to build or run mizu: the tests that use them
# are skipped with a message where they are missing. CI runs this before the test command.
set -eu
if [ "$(id -u)" -eq 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"
else echo "install-viewers: need root (or sudo)" >&2; exit 1
fi
PKGS="paraview python3-paraview python3-pip python3-h5py ffmpeg"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-viewers: installing$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
/usr/bin/python3 -c 'import pyh5md' 2>/dev/null ||
  $SUDO /usr/bin/python3 -m pip install -q --break-system-packages pyh5md
echo "install-viewers: done"
