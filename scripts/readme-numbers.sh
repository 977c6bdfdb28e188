#!/usr/bin/env bash
# Reproduces the numbers in the README's Results section on this machine:
#   1. the IR-overhead check (hand-written burn ResNet-50 vs the zoo model lowered by
#      cnnbench, interleaved passes),
#   2. the README's main command, timed,
#   3. the original suite's ten models at batch 16 (PASSES timed passes each, default 5).
# Run it on a quiet machine; results go to $OUT (default results-readme/).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-readme}
PASSES=${PASSES:-5}

cargo build --release -p cnnbench-cli -p cnnbench-engine-burn --example ir_overhead
lscpu | grep -E 'Model name|^CPU\(s\)' || true

echo "== 1. IR overhead (ResNet-50, batch 16, 224x224, 5 timed passes each, interleaved)"
./target/release/examples/ir_overhead 16 5 224

echo "== 2. the README's main command"
/usr/bin/time -f "wall %e s, peak RSS %M KiB" \
  ./target/release/cnnbench run resnet18 resnet50 --passes 5 -q -o "$OUT/main"

echo "== 3. the original suite, batch 16, $PASSES passes"
/usr/bin/time -f "wall %e s, peak RSS %M KiB" \
  ./target/release/cnnbench run --passes "$PASSES" -q -o "$OUT/suite"

echo "== 4. the modern families, batch 16, their default sizes, 3 passes"
/usr/bin/time -f "wall %e s, peak RSS %M KiB" \
  ./target/release/cnnbench run resnext50-32x4d wide-resnet50-2 inception-v3 squeezenet1.0 \
  densenet121 mobilenet-v2 mobilenet-v3-large shufflenet-v2-x1.0 mnasnet1.0 efficientnet-b0 \
  regnet-y-400mf convnext-tiny --passes 3 -q -o "$OUT/modern"
