#!/bin/sh
# Run a libFuzzer target for a bounded time on one core (`make fuzz`). New inputs that reach new
# code are kept in BUILD/corpus/TARGET (reused by the next run); a crash, leak, timeout or OOM
# is written to BUILD/artifacts/ and fails the run (libFuzzer's exit status).
# Usage: tests/fuzz/run.sh MIZU BUILD TARGET SECONDS [libFuzzer flags...]
set -eu
mizu="$1" build="$2" target="$3" seconds="$4"
shift 4
corpus="$build/corpus/$target" seeds="$build/seeds/$target" dict="$build/$target.dict"
mkdir -p "$corpus" "$build/artifacts"
tests/fuzz/make-seeds.sh "$mizu" "$target" "$seeds" "$dict"
echo "fuzz: $target for ${seconds}s (corpus $corpus, seeds $seeds, dictionary $dict)"
# -timeout: a scene that `mizu check` cannot load in 10 s is a finding; -rss_limit_mb: the
# scene limits (2e8 particles a body, 2^31 in all) allow more, but a fuzz input that needs
# gigabytes to be rejected is one too.
exec "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=16384 -dict="$dict" -artifact_prefix="$build/artifacts/$target-" \
  -print_final_stats=1 "$@" "$corpus" "$seeds"
