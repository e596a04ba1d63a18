#!/usr/bin/env bash
# Run every fuzz target for SECONDS (default 20) from its starting corpus, on the stable toolchain.
# cargo-fuzz passes unstable rustc flags; RUSTC_BOOTSTRAP=1 lets stable rustc accept them, and
# `-s none` leaves out AddressSanitizer (safe Rust; what is checked is panics, aborts,
# overflow and memory growth past -rss_limit_mb). Prints executions per target and fails on
# the first target that finds a crashing input (saved under fuzz/artifacts/TARGET/).
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(container calls trace segment procfs profile perfdata perfmap unwind sanitizer)
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz --locked
cargo fuzz build -s none -O >/dev/null
status=0
for t in "${targets[@]}"; do
    corpus=$(mktemp -d)
    log=$(mktemp)
    if cargo fuzz run -s none -O "$t" "$corpus" "inputs/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=1024 -malloc_limit_mb=1024 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz $t: $runs executions in $secs s, no crash"
    else
        echo "fuzz $t: FAILED; the input is under fuzz/artifacts/$t/:"
        grep -v '^#' "$log" | tail -40
        status=1
    fi
    rm -rf "$corpus" "$log"
done
exit "$status"
