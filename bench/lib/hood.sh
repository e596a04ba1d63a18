# Sourced by benches, after ROOT (the repository) is set. bench_init sets TARGET (cargo's target
# directory) and WORK (a temporary directory, removed when the script exits) and, unless HOOD
# names a hood binary already, builds the release hood and runtime and names them in HOOD and
# HOOD_RT_LIB.
bench_init() {
    TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
    if [ -z "${HOOD:-}" ]; then
        (cd "$ROOT" && cargo build --release -q -p hood-rt -p hood)
        HOOD=$TARGET/release/hood
        export HOOD_RT_LIB=$TARGET/release/libhood_rt.so
    fi
}
