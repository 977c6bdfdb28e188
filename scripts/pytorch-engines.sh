#!/usr/bin/env bash
# The pytorch engines on this machine (quiet machine, nothing else running), for the
# Results page's "PyTorch eager against torch.compile" tables:
#   1. ResNet-50 and MobileNet-V2: batch 1 and 16 inference, batch 16 training (train
#      mode: forward and backward timed apart), f32 and amp-bf16, on pytorch and
#      pytorch-compile (compile time recorded apart as cold_start.compile_s), and on
#      torch-cpu where the binary has it (ENGINES);
#   2. the inductor settings that matter on CPUs, inference at batch 16: --freezing
#      (f32 and amp-bf16), and --compile-mode max-autotune (f32);
#   3. the pytorch engine against PyTorch itself (torchvision's ResNet-50, train mode,
#      batch 16), interleaved A-B-B-A (scripts/crosscheck_torch.py --engine pytorch).
# Every run writes its result file under OUT; `cnnbench report OUT/engines` tabulates.
# Needs torch 2.11.0 (+ torchvision for step 3) in .venv-torch; a cold inductor cache
# (~/.cache or /tmp/torchinductor_$USER) makes the first compiles slower: COLD=1 clears it
# first, so the compile times are a fresh deploy's.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-readme/pytorch}
PASSES=${PASSES:-5}
ROUNDS=${ROUNDS:-4}
THREADS=${THREADS:-$(nproc)}
ENGINES=${ENGINES:-pytorch pytorch-compile}
MODELS=${MODELS:-resnet50 mobilenet-v2}
BIN=${BIN:-target/release/cnnbench}
PY=${PY:-.venv-torch/bin/python}
mkdir -p "$OUT"
lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | sed 's/Flags:.*\(avx512_bf16\).*/Flags: … avx512_bf16 …/' || true
if [ "${COLD:-0}" = 1 ]; then rm -rf "/tmp/torchinductor_$(id -un)"; fi
run() { "$BIN" run "$@" --threads "$THREADS" --passes "$PASSES" -q -o "$OUT/engines" > /dev/null; }

echo "== 1. $MODELS × {infer b1, infer b16, train b16} × {f32, amp-bf16} × {$ENGINES}"
for m in $MODELS; do
  for precision in f32 amp-bf16; do
    for engine in $ENGINES; do
      [ "$engine" = torch-cpu ] && [ "$precision" = amp-bf16 ] && continue
      run "$m" --engine "$engine" --precision "$precision" --mode infer -b 1,16
      run "$m" --engine "$engine" --precision "$precision" --mode train -b 16
      echo "$m $precision $engine done"
    done
  done
done

echo "== 2. inductor settings, inference at batch 16"
for m in $MODELS; do
  for precision in f32 amp-bf16; do
    run "$m" --engine pytorch-compile --precision "$precision" --mode infer -b 16 --freezing
  done
done
run resnet50 --engine pytorch-compile --mode infer -b 16 --compile-mode max-autotune

"$BIN" report "$OUT/engines" --format markdown > "$OUT/engines.md" || true
"$BIN" report "$OUT/engines" --cold-start --format markdown > "$OUT/cold-start.md" || true

echo "== 3. cross-check: the pytorch engine against PyTorch itself, $ROUNDS rounds"
"$PY" scripts/crosscheck_torch.py --engine pytorch --bin "$BIN" --model resnet50 --rounds "$ROUNDS" \
  --passes 5 --tolerance 0.03 --out "$OUT/crosscheck" | tee "$OUT/crosscheck.md" || true
echo "results in $OUT"
