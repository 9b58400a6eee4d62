#!/bin/sh
# Install what mizu needs to build, run and test on Debian 12 (or Ubuntu), skipping what is there.
# Runs as root, or through sudo when it is available.
set -eu
PKGS="make gcc pkg-config ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
      libcjson-dev libhdf5-dev hdf5-tools libpng-dev libcmocka-dev python3-h5py python3-numpy
      python3-matplotlib openmpi-bin libopenmpi-dev libhdf5-openmpi-dev"
# For `make sanitize`, `make fuzz` and `make valgrind` (docs/testing.md): clang with its sanitizer
# and libFuzzer runtimes (Debian 12 packs them in libclang-rt-dev), llvm-symbolizer (in llvm:
# sanitizer stacks with file and line) and valgrind. A distribution that names them otherwise
# gets a warning instead of a failed install.
TOOLS="clang libclang-rt-dev llvm valgrind"
missing=""
for p in $PKGS $TOOLS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all dependencies present"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"
else echo "install-deps: need root (or sudo) to install:$missing" >&2; exit 1
fi
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
for p in $TOOLS; do
  case " $missing " in *" $p "*) ;; *) continue ;; esac
  apt-cache show "$p" >/dev/null 2>&1 && continue
  echo "install-deps: warning: no package $p here (needed by make sanitize, fuzz, valgrind)" >&2
  missing="$(echo " $missing " | sed "s/ $p / /")"
done
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
