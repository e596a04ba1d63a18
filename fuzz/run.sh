#!/usr/bin/env bash
# Run every fuzz target for SECONDS (default 20) from its starting corpus, on the stable toolchain.
# cargo-fuzz passes unstable rustc flags; RUSTC_BOOTSTRAP=1 lets stable rustc accept them, and
# `-s none` leaves out AddressSanitizer (safe Rust; what is checked is panics, aborts,
# overflow, debug assertions and memory growth past -rss_limit_mb). Prints executions per
# target and fails on the first target that finds a crashing input (saved under
# fuzz/artifacts/TARGET/).
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#   FUZZ_RUNS=N      run each target to N executions instead of for SECONDS
#   FUZZ_CORPUS=DIR  keep each target's grown corpus in DIR/TARGET (default: a temporary one)
# With CARGO_TARGET_DIR set, the build goes to $CARGO_TARGET_DIR/fuzz.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-20}
shift || true
targets=("$@")
build=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(container calls trace segment procfs profile perfdata perfmap unwind sanitizer)
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz --locked
flags=(-s none -O -a)
[ -n "${CARGO_TARGET_DIR:-}" ] && flags+=(--target-dir "$CARGO_TARGET_DIR/fuzz")
if [ ${#build[@]} = 0 ]; then cargo fuzz build "${flags[@]}" >/dev/null; fi
for t in "${build[@]}"; do cargo fuzz build "${flags[@]}" "$t" >/dev/null; done
status=0
for t in "${targets[@]}"; do
    if [ -n "${FUZZ_CORPUS:-}" ]; then corpus=$FUZZ_CORPUS/$t; mkdir -p "$corpus"; else corpus=$(mktemp -d); fi
    log=$(mktemp)
    if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$secs"); fi
    start=$SECONDS
    if cargo fuzz run "${flags[@]}" "$t" "$corpus" "inputs/$t" -- \
        "${limit[@]}" -rss_limit_mb=1024 -malloc_limit_mb=1024 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz $t: $runs executions in $((SECONDS - start)) s, no crash"
    else
        echo "fuzz $t: FAILED; the input is under fuzz/artifacts/$t/:"
        grep -v '^#' "$log" | tail -40
        status=1
    fi
    [ -n "${FUZZ_CORPUS:-}" ] || rm -rf "$corpus"
    rm -f "$log"
done
exit "$status"
