#!/usr/bin/env bash
# make bench (MPI builds): strong and weak scaling of distributed WCSPH under mpirun.
# Usage: scripts/bench-scaling.sh BUILD/mizu
#   BENCH_RANKS   rank counts to run (default: 1, 2, 4, ... up to the cores here)
#   BENCH_FRAMES  frames per run (default 4); BENCH_DEVICE: --device value (default: mizu's)
#   BENCH_IDEAL   "ranks": each rank brings a device of its own (GPUs), the ideal speed-up is
#                 the rank count; "1": the ranks share one device's cores (PoCL on one CPU).
#                 Default: "ranks" when mizu lists a GPU and BENCH_DEVICE is not cpu, else "1".
# Strong: scenes/bench_wcsph_59319.json (59,319 particles, fixed steps) on each rank count.
# Weak: the 3D dam break (scenes/dam_break_3d.json) with the spacing shrunk by ranks^(1/3), so
# each rank keeps about 8,000 particles. Per run: wall time of the frame loop, particle-steps/s,
# speed-up and parallel efficiency against 1 rank, and rank 0's exchange time per step (device
# packing, copies and MPI). Not a test: prints tables, exits 0 unless a run fails.
set -euo pipefail
mizu=${1:?usage: $0 BUILD/mizu}
cores=$(nproc)
if [ -z "${BENCH_RANKS:-}" ]; then
    BENCH_RANKS=1
    for ((r = 2; r <= cores; r *= 2)); do BENCH_RANKS+=" $r"; done
fi
frames=${BENCH_FRAMES:-4}
device=()
[ -n "${BENCH_DEVICE:-}" ] && device=(--device "$BENCH_DEVICE")
if [ -z "${BENCH_IDEAL:-}" ]; then
    BENCH_IDEAL=1
    if "$mizu" devices 2>/dev/null | grep -q '  gpu  ' && [ "${BENCH_DEVICE:-}" != cpu ]; then
        BENCH_IDEAL=ranks
    fi
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One run: prints "particles steps frames_s psteps exchange_s exchanges".
run() {
    local np=$1; shift
    local log="$out/log"
    if [ "$np" = 1 ]; then
        "$mizu" run "$@" "${device[@]}" --frames "$frames" -o "$out/o.h5" 2>"$log" </dev/null
    else
        mpirun "${root[@]}" --oversubscribe -np "$np" "$mizu" run "$@" "${device[@]}" \
            --frames "$frames" -o "$out/o.h5" 2>"$log" </dev/null
    fi
    rm -f "$out/o.h5" "$out/o.xdmf"
    awk '
        /^mizu: done:/ { n = $3; for (i = 1; i <= NF; i++) if ($i == "steps") st = $(i - 1) }
        /^  wall/ { for (i = 1; i <= NF; i++) { if ($i == "frames") fs = $(i + 1);
                    if ($i == "particle-steps/s") ps = $(i - 1) } }
        /exchanges taking/ { for (i = 1; i <= NF; i++) { if ($i == "taking") ex = $(i + 1);
                    if ($i == "exchanges") ne = $(i - 1) } }
        END { gsub(/[^0-9.e+-]/, "", fs); printf "%s %s %s %s %s %s\n", n, st, fs, ps,
              ex == "" ? 0 : ex, ne == "" ? 0 : ne }' "$log"
}

table() { # title; "np args..." lines on stdin
    echo
    echo "$1"
    printf '%6s %10s %7s %9s %12s %9s %6s %11s %14s\n' ranks particles steps "frames s" \
        "p-steps/s" speed-up ideal efficiency "exchange ms/step"
    local base=""
    while read -r np args; do
        # shellcheck disable=SC2086
        read -r n st fs ps ex ne < <(run "$np" $args)
        [ -z "$base" ] && base=$ps
        awk -v np="$np" -v n="$n" -v st="$st" -v fs="$fs" -v ps="$ps" -v b="$base" -v ex="$ex" \
            -v ne="$ne" -v ideal="$BENCH_IDEAL" 'BEGIN {
            sp = ps / b; id = ideal == "ranks" ? np : 1;
            printf "%6d %10d %7d %9.2f %12.4g %9.2f %6d %10.0f%% %14.2f\n", np, n, st, fs, ps,
                sp, id, 100 * sp / id, (ne > 0 ? 1e3 * ex / ne : 0) }'
    done
}

echo "mizu distributed WCSPH, $(nproc) cores here, ranks: $BENCH_RANKS, $frames frames a run;" \
    "ideal speed-up: $([ "$BENCH_IDEAL" = ranks ] && echo "the rank count (a device each)" ||
    echo "1 (the ranks share the cores)")"
for np in $BENCH_RANKS; do echo "$np scenes/bench_wcsph_59319.json"; done |
    table "Strong scaling: 59,319 particles (scenes/bench_wcsph_59319.json)"
for np in $BENCH_RANKS; do
    sp=$(awk -v np="$np" 'BEGIN { printf "%.6g", 0.005 / np ^ (1 / 3) }')
    echo "$np scenes/dam_break_3d.json --set fluids[0].spacing=$sp"
done | table "Weak scaling: ~8,000 particles per rank (scenes/dam_break_3d.json, spacing 5 mm / ranks^(1/3))"
