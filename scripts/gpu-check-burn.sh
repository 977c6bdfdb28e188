#!/usr/bin/env bash
# Checks burn's GPU engines on a machine with an NVIDIA GPU and PyTorch 2.11.0 in its
# python3, using one cnnbench binary built elsewhere with
# `--features torch,burn-wgpu,burn-cuda` and compressed (see docs/src/burn-gpu.md):
#   1. the machine, and `cnnbench engines` (lists the Vulkan adapters and CUDA devices;
#      burn-cuda, burn-wgpu and torch-cuda must say "yes"),
#   2. `cnnbench verify` torch-cuda against burn-cuda and against burn-wgpu (resnet18,
#      convnext-tiny and efficientnet-b0, 64x64, batch 4: same weights, input and
#      upstream gradient; ConvNeXt's 1x1 maps and GELU, EfficientNet's squeeze-and-
#      excitation are where burn's GPU kernels went wrong on lavapipe),
#   3. ResNet-50 at batch 16 on burn-cuda, burn-wgpu and torch-cuda, PASSES timed passes,
#   4. `report --speedups` burn-cuda against torch-cuda (and burn-wgpu against torch-cuda).
# Usage: scripts/gpu-check-burn.sh [cnnbench, cnnbench.xz or cnnbench.zst] [OUT folder, default gpu-check-burn-results]
# A step that fails is logged and the script goes on, so one broken engine still leaves
# the others' numbers. The binary finds libtorch through LD_LIBRARY_PATH, set here from
# this machine's torch; burn-cuda loads libcuda.so by itself; burn-wgpu needs
# libvulkan.so.1 and NVIDIA's Vulkan driver (the container's "graphics" capability).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${1:-$HERE/../target/release/cnnbench}"
OUT="${2:-gpu-check-burn-results}"
PASSES="${PASSES:-10}"
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
step() { "$@" 2>&1 | tee -a "$OUT/log.txt"; local rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || log "FAILED ($rc): $*"; return 0; }

# A compressed binary: .xz (Python's standard library unpacks it, so nothing need be
# installed there) or .zst.
if [[ "$BIN" == *.xz ]]; then
  PLAIN="$(mktemp -d)/cnnbench"
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$BIN" "$PLAIN"
  chmod +x "$PLAIN"
  BIN="$PLAIN"
elif [[ "$BIN" == *.zst ]]; then
  PLAIN="$(mktemp -d)/cnnbench"
  if command -v zstd >/dev/null; then
    zstd -q -d "$BIN" -o "$PLAIN"
  else
    python3 -c 'import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(open(sys.argv[1], "rb"), open(sys.argv[2], "wb"))' "$BIN" "$PLAIN"
  fi
  chmod +x "$PLAIN"
  BIN="$PLAIN"
fi
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
if TORCH_LIB="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)"; then
  export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

log "1. machine and engines"
step nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
step ldd --version
step sh -c 'ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1; ldconfig -p | grep -E "libvulkan|libcuda.so" || true'
step python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
step "$BIN" --version
step "$BIN" engines

log "2. verify against torch-cuda (resnet18, convnext-tiny, efficientnet-b0; 64x64, batch 4)"
for engine in burn-cuda burn-wgpu; do
  for model in resnet18 convnext-tiny efficientnet-b0; do
    step "$BIN" verify "$model" --image-size 64 -b 4 --engines "torch-cuda,$engine"
    "$BIN" verify "$model" --image-size 64 -b 4 --engines "torch-cuda,$engine" --json \
      > "$OUT/verify-$model-$engine.json" 2>>"$OUT/log.txt" || log "FAILED: verify $model $engine (json)"
  done
done

log "3. resnet50, batch 16, $PASSES passes"
for engine in burn-cuda burn-wgpu torch-cuda; do
  step "$BIN" run resnet50 -b 16 --engine "$engine" --passes "$PASSES" -q -o "$OUT/results"
done

log "4. report"
step "$BIN" report "$OUT/results"
step "$BIN" report "$OUT/results" --speedups torch-cuda burn-cuda torch-cuda burn-wgpu
echo "results in $OUT"
