#!/usr/bin/env bash
# Quick start: build hood, profile the bundled demo workload, print the report.
# Usage: ./demo.sh [hood report options...]
set -euo pipefail
cd "$(dirname "$0")"
command -v cargo >/dev/null || { echo "demo.sh: cargo is required (https://rustup.rs)"; exit 2; }
if ! command -v gcc >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq gcc libc6-dev
    else
        echo "demo.sh: gcc is required to build the demo workload (apt-get install gcc)"; exit 2
    fi
fi
echo "demo.sh: building hood (release, with LTO; the first build takes several minutes)"
cargo build --release -p hood
mkdir -p target/demo
gcc -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o target/demo/demo demo/demo.c
"${CARGO_TARGET_DIR:-target}"/release/hood record -o target/demo/demo.data -- target/demo/demo 3
"${CARGO_TARGET_DIR:-target}"/release/hood report -i target/demo/demo.data "$@"
