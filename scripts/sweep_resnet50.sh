#!/usr/bin/env bash
# Reproduces the README's batch sweep on this machine (quiet machine, nothing else
# running):
#   1. ResNet-50 inference at batch 1, 2, 4, …, 64 (224×224) on burn-flex and torch-cpu,
#      PASSES timed passes per batch (default 10) after one warm-up pass;
#   2. one adaptive run: ResNet-50 inference at batch 16 on burn-flex until the median is
#      known to ±2% (--target-ci 2), at most MAX_TIME seconds of timed work;
#   3. the report: the sweep table (markdown) and the throughput/latency-versus-batch
#      chart, written into docs/src/sweep/ (the guide's sweeps page shows them).
# Expected time on the 2-core EPYC VM: about 5 min for burn-flex (≈0.2 s per image),
# 2–3 min for torch-cpu, 1 min for the adaptive run, plus the torch build if not built.
# Needs PyTorch 2.11.0 in .venv-torch for torch-cpu (see the README); without it set
# ENGINES=burn-flex.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-sweep}
PASSES=${PASSES:-10}
MAX_TIME=${MAX_TIME:-300}
ENGINES=${ENGINES:-burn-flex torch-cpu}
DOCS=${DOCS:-docs/src/sweep}
BIN=target/release/cnnbench

if [[ " $ENGINES " == *" torch-cpu "* ]]; then
  export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
  cargo build --release -p cnnbench-cli --features cnnbench-cli/torch
else
  cargo build --release -p cnnbench-cli
fi
lscpu | grep -E 'Model name|^CPU\(s\)' || true

for engine in $ENGINES; do
  echo "== 1. ResNet-50 inference, batch 1..64, $engine, $PASSES passes per batch"
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" \
    "$BIN" run resnet50 --mode infer -b 1..64 --engine "$engine" --passes "$PASSES" -q \
    -o "$OUT/sweep"
done

echo "== 2. ResNet-50 inference, batch 16, burn-flex, until ±2% (at most $MAX_TIME s)"
/usr/bin/time -f "wall %e s, peak RSS %M KiB" \
  "$BIN" run resnet50 --mode infer -b 16 --target-ci 2 --max-time "$MAX_TIME" -q \
  -o "$OUT/target-ci"

echo "== 3. the report: sweep table and chart into $DOCS"
mkdir -p "$DOCS"
"$BIN" report "$OUT/sweep" --format markdown --no-overview --charts "$OUT/charts" \
  | sed -n '/^## Sweep/,$p' | tee "$DOCS/resnet50-sweep.md"
cp "$OUT/charts/sweep-resnet50-3x224x224-infer.png" "$DOCS/resnet50-infer-sweep.png"
cp "$OUT/charts/sweep-resnet50-3x224x224-infer.svg" "$DOCS/resnet50-infer-sweep.svg"
echo "wrote $DOCS/resnet50-sweep.md and $DOCS/resnet50-infer-sweep.png (.svg)"
