#!/usr/bin/env bash
# Reproduces the README's first results table and the torch-cpu cross-check on this
# machine (quiet machine, nothing else running):
#   1. ResNet-50 at batch 16: cnnbench torch-cpu and burn-flex, and PyTorch itself
#      (scripts/pytorch_reference.py), interleaved ROUNDS times (scripts/crosscheck_torch.py);
#   2. the original suite's ten models at batch 16: burn-flex, torch-cpu and PyTorch,
#      one after the other per model, PASSES timed passes each.
# Needs PyTorch 2.11.0 + torchvision in .venv-torch and a `--features torch` build.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-readme/torch}
PASSES=${PASSES:-3}
ROUNDS=${ROUNDS:-3}
ENGINES=${ENGINES:-burn-flex torch-cpu}
BIN=${BIN:-target/release/cnnbench}
PY=${PY:-.venv-torch/bin/python}
mkdir -p "$OUT"
lscpu | grep -E 'Model name|^CPU\(s\)' || true
"$BIN" engines | grep torch-cpu

echo "== 1. cross-check: resnet50, batch 16, $ROUNDS interleaved rounds of 5 passes"
"$PY" scripts/crosscheck_torch.py --bin "$BIN" --model resnet50 --rounds "$ROUNDS" --passes 5 \
  --with-burn --out "$OUT/crosscheck" | tee "$OUT/crosscheck.md" || true

echo "== 2. the ten models, batch 16, $PASSES passes, $ENGINES and PyTorch per model"
for m in alexnet-bvlc inception-v1 vgg16 vgg19 resnet18 resnet34 resnet50 resnet101 resnet152 resnet200; do
  for engine in $ENGINES; do
    "$BIN" run "$m" --engine "$engine" --passes "$PASSES" -q -o "$OUT/suite" > /dev/null
  done
  "$PY" scripts/pytorch_reference.py "$m" --passes "$PASSES" --json >> "$OUT/pytorch.jsonl"
  echo "$m done"
done
"$BIN" report "$OUT/suite" --format markdown > "$OUT/suite.md" || true
echo "results in $OUT"
