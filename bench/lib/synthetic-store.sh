# Sourced by the monitor benches that write a monitor store without a recorder running for
# hours: sets SYNTH to the synthetic_store example (hood-procfs), built with cargo unless
# SYNTH already names one.
if [ -z "${SYNTH:-}" ]; then
    cargo build -q --release -p hood-procfs --example synthetic_store
    SYNTH=${CARGO_TARGET_DIR:-target}/release/examples/synthetic_store
fi
