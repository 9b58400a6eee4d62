#!/bin/sh
# Run every test binary; print one closing line "tests: N passed, N failed".
# Usage: scripts/run-tests.sh MIZU_BINARY TEST...
set -u
mizu="$1"; shift
export MIZU_BIN="$(cd "$(dirname "$mizu")" && pwd)/$(basename "$mizu")"
passed=0; failed=0; failed_names=""
for t in "$@"; do
  echo "== $(basename "$t")"
  if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names="$failed_names $(basename "$t")"; fi
done
[ -n "$failed_names" ] && echo "failed test programs:$failed_names"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
