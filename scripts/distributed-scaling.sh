#!/usr/bin/env bash
# Data-parallel scaling of ResNet-50 training (step mode: forward + loss, backward,
# all-reduce, SGD update) on torch-cpu: 1 rank with every core, then 2 ranks with half
# the cores each (what `--nproc` gives them), batch 16 per rank, 224×224; then the
# report's scaling table and chart. Run it on a quiet machine (nothing else running):
# the ranks share its cores and memory bandwidth. Needs a `--features torch` build.
# Usage: scripts/distributed-scaling.sh [OUT_DIR]   (about 3–4 minutes on 2 cores)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-scaling-resnet50}"
bin="${CNNBENCH:-$root/target/release/cnnbench}"
cores=$(nproc)

"$bin" run resnet50 -e torch-cpu --mode step -b 16 -n 10 --nproc 1 --threads "$cores" -o "$out"
"$bin" run resnet50 -e torch-cpu --mode step -b 16 -n 10 --nproc 2 --threads $((cores / 2 > 0 ? cores / 2 : 1)) -o "$out"
"$bin" report "$out" --charts "$out/charts"
