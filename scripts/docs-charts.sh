#!/usr/bin/env bash
# Regenerates the charts of the guide's results pages (docs/src/charts/) from the
# result files in docs/results/, with the cnnbench built here. Look at every PNG
# before committing them.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
out=docs/src/charts
rm -rf "$out"
target/release/cnnbench report docs/results --speedups --charts "$out" > /dev/null
# The book and the README show the PNGs; the SVGs are the same charts.
rm -f "$out"/*.svg
ls "$out"
