#!/usr/bin/env bash
# Quick start: build hood, profile the bundled demo workload, print the report.
# Usage: ./demo.sh [hood report options...]
set -euo pipefail
cd "$(dirname "$0")"
# A fresh machine: gcc (the linker Rust needs, and the demo's compiler) with apt, Rust with
# rustup, each said before it is done.
if ! command -v gcc >/dev/null || ! command -v curl >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "demo.sh: installing gcc, libc6-dev and curl with apt-get"
        apt-get update -qq && apt-get install -y -qq gcc libc6-dev curl
    elif ! command -v gcc >/dev/null; then
        echo "demo.sh: gcc is required to build the demo workload (apt-get install gcc)"; exit 2
    fi
fi
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
    command -v curl >/dev/null || { echo "demo.sh: cargo is required (https://rustup.rs)"; exit 2; }
    echo "demo.sh: installing Rust with rustup (https://rustup.rs) into ~/.cargo"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    export PATH="$HOME/.cargo/bin:$PATH"
fi
echo "demo.sh: building hood (release, with LTO; the first build takes several minutes)"
cargo build --release -p hood
mkdir -p target/demo
gcc -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o target/demo/demo demo/demo.c
"${CARGO_TARGET_DIR:-target}"/release/hood record -o target/demo/demo.data -- target/demo/demo 3
"${CARGO_TARGET_DIR:-target}"/release/hood report -i target/demo/demo.data "$@"
