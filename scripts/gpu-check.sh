#!/usr/bin/env bash
# Checks the CUDA engines on a machine with an NVIDIA GPU and PyTorch 2.11.0 in its
# python3, using a cnnbench binary built elsewhere with `--features torch`:
#   1. `cnnbench engines` (torch-cuda and torch-cuda-nocudnn must say "yes"),
#   2. `cnnbench verify` torch-cpu against torch-cuda on a small model,
#   3. resnet50 and vgg16 at batch 16 on torch-cuda (with and without cuDNN autotuning)
#      and torch-cuda-nocudnn, 10 timed passes each; resnet50 in f16, tf32, and a
#      training step in amp-bf16 and amp-f16 (libtorch's autocast, amp-f16 with its
#      gradient scaler), after verifying amp-f16 against torch.autocast in the worker,
#   4. when torchvision is importable, PyTorch itself on the same GPU by the same method
#      (scripts/pytorch_reference.py --device cuda) as an independent check,
#   5. what NVML said of the GPU during each run's timed passes (clocks, throttle
#      reasons, violation counters: the `validity.timed.gpu` of each result).
# Usage: scripts/gpu-check.sh [path/to/cnnbench] [OUT folder, default gpu-check-results]
# The binary finds libtorch through LD_LIBRARY_PATH, set here from this machine's torch.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${1:-$HERE/../target/release/cnnbench}"
OUT="${2:-gpu-check-results}"
PASSES="${PASSES:-10}"
mkdir -p "$OUT"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

TORCH_LIB="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }

{
  log "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
  "$BIN" --version
} 2>&1 | tee -a "$OUT/log.txt"

log "1. engines"
"$BIN" engines 2>&1 | tee -a "$OUT/log.txt"

log "2. verify torch-cpu against torch-cuda (resnet18, 64x64, batch 4)"
"$BIN" verify resnet18 --image-size 64 -b 4 --engines torch-cpu,torch-cuda 2>&1 | tee -a "$OUT/log.txt"
"$BIN" verify resnet18 --image-size 64 -b 4 --engines torch-cpu,torch-cuda --json > "$OUT/verify-resnet18.json"

log "3. resnet50 and vgg16, batch 16, $PASSES passes"
for engine in torch-cuda torch-cuda-nocudnn; do
  "$BIN" run resnet50 vgg16 --engine "$engine" --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
done
"$BIN" run resnet50 vgg16 --engine torch-cuda --cudnn-benchmark --label cudnn-benchmark \
  --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
"$BIN" run resnet50 --engine torch-cuda --precision f16 --label f16 \
  --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
"$BIN" run resnet50 --engine torch-cuda --precision tf32 --label tf32 \
  --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
"$BIN" verify resnet18 --image-size 64 -b 4 --engines pytorch-cuda,torch-cuda \
  --precisions amp-f16,amp-f16 2>&1 | tee -a "$OUT/log.txt"
for precision in amp-bf16 amp-f16; do
  "$BIN" run resnet50 --engine torch-cuda --mode step --precision "$precision" --label "$precision" \
    --passes "$PASSES" -q -o "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
done

if python3 -c 'import torchvision' 2>/dev/null; then
  log "4. PyTorch itself on the same GPU"
  python3 "$HERE/pytorch_reference.py" resnet50 vgg16 --device cuda --passes "$PASSES" 2>&1 | tee -a "$OUT/log.txt"
else
  log "4. skipped: torchvision is not installed here"
fi

log "5. the GPU as NVML saw it during the timed passes (validity.timed.gpu of each result)"
python3 - "$OUT/results" <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    v = json.loads(f.read_text()).get("validity") or {}
    print(f.name, v.get("verdict"), json.dumps((v.get("timed") or {}).get("gpu")), v.get("notes"))
PY

log "report"
"$BIN" report "$OUT/results" 2>&1 | tee -a "$OUT/log.txt"
echo "results in $OUT"
