#!/bin/sh
# Run test programs, and the mizu binary they start, under valgrind memcheck (`make valgrind`).
# Each program gets a wrapper script in a scratch directory; scripts/run-tests.sh then runs the
# wrappers as it runs the plain tests (MIZU_BIN pointing at the mizu wrapper). A memory error or
# a definite leak (the indirect ones hang off it) makes the program exit 99, which fails its
# test; valgrind's reports go to one log per process (not to stderr, which tests compare), and
# the logs with errors are printed at the end. tests/sanitize/valgrind.supp says what is
# suppressed inside the OpenCL stack, and why.
# Usage: tests/sanitize/valgrind-tests.sh MIZU TEST...
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
command -v valgrind >/dev/null || { echo "valgrind-tests: valgrind is not installed" >&2; exit 1; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
mizu="$(abs "$1")"
wrap="$(mktemp -d "${TMPDIR:-/tmp}/mizu-valgrind-XXXXXX")"
trap 'rm -rf "$wrap"' EXIT
mkdir "$wrap/logs"

# PoCL compiles kernels for the host CPU (its kernel library variant follows the CPU's features),
# and LLVM then uses AVX encodings valgrind 3.19 cannot decode (VMOVQ xmm, xmm as VEX 0xD6 stops
# sph_forces with SIGILL). So for these runs PoCL takes its SSE4.1 kernel library (target CPU
# penryn: no AVX), with a kernel cache of its own next to the binary. Compiling a kernel under
# valgrind takes minutes, so the suite first runs natively with the same settings to fill that
# cache. hwloc's x86 backend refuses valgrind with a message on stderr, which tests compare:
# it is left out (hwloc reads the topology from /sys instead).
export POCL_KERNELLIB_NAME=sse41
export POCL_CACHE_DIR="$(dirname "$mizu")/pocl-cache-valgrind"
export HWLOC_COMPONENTS=-x86
mkdir -p "$POCL_CACHE_DIR"
echo "valgrind-tests: filling PoCL's kernel cache ($POCL_CACHE_DIR) with a native run"
"$here/../../scripts/run-tests.sh" "$@" > "$wrap/native.log" 2>&1 ||
  { echo "valgrind-tests: the native run failed too:"; grep -E "FAILED|^tests:" "$wrap/native.log"; }
# The tests' own time limits assume native speed; valgrind runs 20-50 times slower.
export MIZU_TEST_SLOW=1

vg="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
--show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30 \
--suppressions=$here/valgrind.supp ${VALGRIND_FLAGS:-}"
for prog in "$@"; do
  name="$(basename "$prog")"
  printf '#!/bin/sh\nexec %s --log-file=%s/logs/%s.%%p.log %s "$@"\n' \
    "$vg" "$wrap" "$name" "$(abs "$prog")" > "$wrap/$name"
  chmod +x "$wrap/$name"
done
shift
tests=""
for t in "$@"; do tests="$tests $wrap/$(basename "$t")"; done
rc=0
# shellcheck disable=SC2086
"$here/../../scripts/run-tests.sh" "$wrap/$(basename "$mizu")" $tests || rc=$?
bad=0
for log in "$wrap"/logs/*.log; do
  grep -q "ERROR SUMMARY: [1-9]" "$log" || continue
  bad=$((bad + 1))
  echo "== valgrind: $(basename "$log" .log)"
  cat "$log"
done
echo "valgrind: $(ls "$wrap/logs" | wc -l) processes checked, $bad with errors"
[ "$rc" -eq 0 ] && [ "$bad" -eq 0 ]
