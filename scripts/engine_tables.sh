#!/usr/bin/env bash
# Reproduces the guide's engine tables (Results, "Every CPU engine"): inference at batch 1
# and 16 for ResNet-50, MobileNet-V2 and EfficientNet-B0 on every CPU engine this build has,
# and training at batch 16 on the engines that train; then `report --speedups` (every
# pair of engines). Run it on a quiet machine, with a build that has the optional engines:
#   export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
#   cargo build --release --features torch,tract,candle,ort
# Results go to $OUT (default results-engines/); PASSES timed passes per cell (default 5;
# batch 1 takes 4x as many, since a pass is short).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-engines}
PASSES=${PASSES:-5}
BIN=${BIN:-./target/release/cnnbench}
MODELS=(resnet50 mobilenet-v2 efficientnet-b0)

available() { "$BIN" engines | grep -E "^\| $1 +\| yes" >/dev/null; }
lscpu | grep -E 'Model name|^CPU\(s\)' || true
engines=()
for e in burn-flex torch-cpu ort-cpu tract candle; do
    if available "$e"; then engines+=("$e"); else echo "skipping $e: not available in this build (see \`$BIN engines\`)"; fi
done

for e in "${engines[@]}"; do
    echo "== inference on $e"
    "$BIN" run "${MODELS[@]}" --engine "$e" --mode infer -b 1 --passes $((PASSES * 4)) -q -o "$OUT/infer-b1"
    "$BIN" run "${MODELS[@]}" --engine "$e" --mode infer -b 16 --passes "$PASSES" -q -o "$OUT/infer-b16"
done
for e in "${engines[@]}"; do
    if "$BIN" engines | grep -E "^\| $e +\|" | grep -q train; then
        echo "== training on $e"
        "$BIN" run "${MODELS[@]}" --engine "$e" --mode train -b 16 --passes "$PASSES" -q -o "$OUT/train-b16"
    fi
done

for part in infer-b1 infer-b16 train-b16; do
    echo "== $part (with every pair's speed-up)"
    "$BIN" report "$OUT/$part" --speedups
done
