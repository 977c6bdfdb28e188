#!/usr/bin/env bash
# Checks the pytorch engines on a machine with an NVIDIA GPU, with nothing but its
# python3 (PyTorch 2.11.0, no torchvision needed) and a cnnbench binary built elsewhere
# (any build: the pytorch engines need nothing at build time):
#   1. `cnnbench engines` (pytorch-cuda and pytorch-compile-cuda must say "yes"),
#   2. `cnnbench verify` pytorch (CPU) against pytorch-cuda, and against
#      pytorch-compile-cuda, on a small model (outputs and every gradient),
#   3. resnet50 at batch 16, inference and training, eager and compiled, f32 (TF32 off),
#      amp-bf16 and amp-f16, and compiled with --compile-mode reduce-overhead (CUDA
#      graphs), PASSES timed passes each: compile times in cold_start.compile_s, GPU
#      memory in memory.device_peak_bytes,
#   4. the table of step 3 (`cnnbench report --cold-start`), and what NVML saw.
# Usage: scripts/gpu-check-pytorch.sh [path/to/cnnbench] [OUT folder, default gpu-check-pytorch]
# REHEARSE=1 runs the same steps with the CPU engines, at 64×64 and batch 2, to rehearse
# the script on a machine without a GPU.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${1:-$HERE/../target/release/cnnbench}"
OUT="${2:-gpu-check-pytorch}"
PASSES="${PASSES:-10}"
PYTHON="${PYTHON:-$(command -v python3)}"
mkdir -p "$OUT"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
if [ "${REHEARSE:-0}" = 1 ]; then
  EAGER=pytorch COMPILED=pytorch-compile SIZE=(--image-size 64 -b 2) PASSES=2
  PRECISIONS="f32 amp-bf16" MODES_COMPILED="default"
else
  EAGER=pytorch-cuda COMPILED=pytorch-compile-cuda SIZE=(-b 16)
  PRECISIONS="f32 amp-bf16 amp-f16" MODES_COMPILED="default reduce-overhead"
fi
log() { echo "== $*" | tee -a "$OUT/log.txt"; }

{
  log "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  "$PYTHON" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "GPUs", torch.cuda.device_count())'
  "$BIN" --version
} 2>&1 | tee -a "$OUT/log.txt"

log "1. engines"
"$BIN" engines 2>&1 | grep -E "Engine|pytorch" | tee -a "$OUT/log.txt"

log "2. verify pytorch (CPU) against $EAGER and $COMPILED (resnet18, 32x32, batch 2)"
for engine in "$EAGER" "$COMPILED"; do
  "$BIN" verify resnet18 --image-size 32 -b 2 --engines "pytorch,$engine" --python "$PYTHON" 2>&1 | tee -a "$OUT/log.txt" || true
done

log "3. resnet50, inference and training, $PASSES passes"
for precision in $PRECISIONS; do
  for mode in infer train; do
    "$BIN" run resnet50 --engine "$EAGER" --precision "$precision" --mode "$mode" "${SIZE[@]}" \
      --python "$PYTHON" --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt" || true
    for compile_mode in $MODES_COMPILED; do
      "$BIN" run resnet50 --engine "$COMPILED" --precision "$precision" --mode "$mode" "${SIZE[@]}" \
        --compile-mode "$compile_mode" --python "$PYTHON" --passes "$PASSES" -q -o "$OUT/results" 2>&1 \
        | tee -a "$OUT/log.txt" || true
    done
  done
done

log "4. the table, with compile times"
"$BIN" report "$OUT/results" --cold-start --format markdown 2>&1 | tee "$OUT/report.md" | tee -a "$OUT/log.txt"
"$PYTHON" - "$OUT/results" <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    r = json.loads(f.read_text())
    gpu = ((r.get("validity") or {}).get("timed") or {}).get("gpu")
    print(f.name, "compile_s", (r.get("cold_start") or {}).get("compile_s"),
          "device_peak_bytes", r["memory"].get("device_peak_bytes"),
          "call_floor_s", r.get("call_floor_s"), "verdict", (r.get("validity") or {}).get("verdict"),
          "gpu", json.dumps(gpu) if gpu else "-")
PY
echo "results in $OUT"
