#!/bin/sh
# Run every test binary; print each one's wall time, the slowest five, and one closing line
# "tests: N passed, N failed". The times are there to keep CI well inside its limit
# (docs/testing.md, "What the suite costs").
# Usage: scripts/run-tests.sh MIZU_BINARY TEST...
set -u
mizu="$1"; shift
export MIZU_BIN="$(cd "$(dirname "$mizu")" && pwd)/$(basename "$mizu")"
passed=0; failed=0; failed_names=""; times=""
suite_start=$(date +%s)
for t in "$@"; do
  echo "== $(basename "$t")"
  start=$(date +%s)
  if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names="$failed_names $(basename "$t")"; fi
  took=$(($(date +%s) - start))
  echo "-- $(basename "$t"): ${took} s"
  times="$times$took $(basename "$t")
"
done
echo "slowest:"; printf '%s' "$times" | sort -rn | head -5 | sed 's/^/  /'
echo "suite: $(($(date +%s) - suite_start)) s"
[ -n "$failed_names" ] && echo "failed test programs:$failed_names"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
