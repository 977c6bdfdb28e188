#!/usr/bin/env bash
# The roofline of one model on one engine, as docs/src/profile.md ("The roofline") shows
# it: `cnnbench peak` measures this machine's ceilings in the precision (the engine's
# best compute rate, each cache level's and DRAM's bandwidth), cached in OUT's own cache
# folder so the run is self-contained, then `cnnbench profile` sets every layer's forward
# pass against them, and `cnnbench report` draws the chart. Run on a quiet machine
# (nothing else building or testing: the pressure before and after is kept beside).
#
# Setup: a build with the engine's feature (openvino-cpu: --features cnnbench-cli/openvino
#        and `openvino` in .venv-torch, see docs/src/onnx.md).
# Usage: scripts/roofline.sh OUT MODEL ENGINE PRECISION BATCH [PASSES]
#   e.g. scripts/roofline.sh roofline-r50 resnet50 openvino-cpu int8 16
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 5 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
out=$1 model=$2 engine=$3 precision=$4 batch=$5 passes=${6:-5}
bin=${CNNBENCH:-target/release/cnnbench}
mkdir -p "$out"
export XDG_CACHE_HOME="$PWD/$out/cache"
[ -d .venv-torch/bin ] && export PATH="$PWD/.venv-torch/bin:$PATH"
cat /proc/pressure/cpu > "$out/pressure-before.txt"
lscpu > "$out/lscpu.txt"
stem="$model-$engine-$precision-b$batch"
"$bin" peak --engine "$engine" --precision "$precision" > "$out/peak-$engine-$precision.txt"
cp "$XDG_CACHE_HOME"/cnnbench/peak/*.json "$out/"   # the measurement itself, as cached
"$bin" profile "$model" --engine "$engine" --precision "$precision" --mode infer \
    -b "$batch" -n "$passes" --top 12 -q -o "$out/$stem.profile.json" > "$out/$stem.txt"
cat /proc/pressure/cpu > "$out/pressure-after.txt"
"$bin" report "$out/$stem.profile.json" --charts "$out/charts" > /dev/null
sed -n '/^Roofline/,/^the network/p' "$out/$stem.txt"
