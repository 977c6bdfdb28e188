#!/usr/bin/env bash
# Reproduces the guide's table "Every CPU engine × precision" (Results): inference at
# batch 1 and 16 for ResNet-50, MobileNet-V2 and EfficientNet-B0 on every CPU engine this
# build has, in every precision each engine honours (f32, bf16 = the whole model converted,
# amp-bf16 = autocast with f32 weights), and training at batch 16 on torch-cpu and pytorch
# in f32 against amp-bf16. pytorch-compile runs amp-bf16 with --freezing only (its compile
# takes 20-100 s per cell; docs/src/pytorch.md has its other settings). Run it on a quiet
# machine, with a build that has the optional engines:
#   export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
#   cargo build --release --features torch,tract,candle,ort,openvino
# Results go to $OUT (default results-precision/); PASSES timed passes per cell at batch 16
# (default 3; batch 1 takes 4x as many, since a pass is short). Each engine's refusal of a
# precision it lacks is printed and skipped: which engines honour which precision is itself
# part of the table.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-precision}
PASSES=${PASSES:-3}
BIN=${BIN:-./target/release/cnnbench}
MODELS=(resnet50 mobilenet-v2 efficientnet-b0)

available() { "$BIN" engines | grep -E "^\| $1 +\| yes" >/dev/null; }
# The precisions an engine lists (the engines table's fourth column).
precisions_of() {
    "$BIN" engines | grep -E "^\| $1 +\|" | awk -F'|' '{print $5}' | tr -d ' ' | tr ',' ' '
}
lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | sed -E 's/(Flags:).*(avx512_bf16).*/\1 … \2 …/' || true
cat /proc/pressure/cpu

run_cell() { # engine precision mode batch passes folder [extra args…]
    local engine=$1 precision=$2 mode=$3 batch=$4 passes=$5 folder=$6
    shift 6
    if ! "$BIN" run "${MODELS[@]}" --engine "$engine" --precision "$precision" --mode "$mode" \
        -b "$batch" --passes "$passes" -q -o "$OUT/$folder" "$@"; then
        echo "   ($engine $precision $mode b$batch failed or was refused: skipped)"
    fi
}

for e in burn-flex candle tract ort-cpu openvino-cpu torch-cpu pytorch; do
    if ! available "$e"; then
        echo "skipping $e: not available in this build (see \`$BIN engines\`)"
        continue
    fi
    for p in $(precisions_of "$e"); do
        case "$p" in f32 | bf16 | amp-bf16) ;; *) continue ;; esac
        echo "== inference on $e, $p"
        run_cell "$e" "$p" infer 1 $((PASSES * 4)) infer-b1
        run_cell "$e" "$p" infer 16 "$PASSES" infer-b16
    done
done
if available pytorch-compile && [ "${PYTORCH_COMPILE:-1}" = 1 ]; then
    echo "== inference on pytorch-compile, amp-bf16, --freezing"
    run_cell pytorch-compile amp-bf16 infer 1 $((PASSES * 4)) infer-b1 --freezing
    run_cell pytorch-compile amp-bf16 infer 16 "$PASSES" infer-b16 --freezing
fi
for e in torch-cpu pytorch; do
    if available "$e"; then
        for p in f32 amp-bf16; do
            echo "== training on $e, $p"
            run_cell "$e" "$p" train 16 "$PASSES" train-b16
        done
    fi
done

for part in infer-b1 infer-b16 train-b16; do
    echo "== $part"
    "$BIN" report "$OUT/$part"
done
