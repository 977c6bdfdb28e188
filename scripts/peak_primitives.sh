#!/usr/bin/env bash
# `cnnbench peak` on every CPU engine of a full build, in the precisions each computes
# in: the matrix product, the 3×3 convolution and the stream, one engine after another,
# then one line each: which primitive is faster (what "% of peak" is measured against).
# Run on a quiet machine (nothing else building or testing: check /proc/pressure/cpu).
#
# Setup: build with --features torch,ort,openvino (and LIBTORCH_USE_PYTORCH=1, see the
#        README); .venv-torch with torch, onnxruntime and openvino for the libraries.
# Usage: scripts/peak_primitives.sh [OUT_DIR]   (default: peak-primitives/)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-peak-primitives}"
mkdir -p "$out"
bin=target/release/cnnbench
export PATH="$PWD/.venv-torch/bin:$PATH"
threads=$(nproc)
cat /proc/pressure/cpu > "$out/pressure-before.txt"
for cell in burn-flex:f32 torch-cpu:f32 torch-cpu:bf16 torch-cpu:amp-bf16 ort-cpu:f32 openvino-cpu:f32 openvino-cpu:bf16; do
    engine=${cell%%:*} precision=${cell#*:}
    if ! "$bin" peak --engine "$engine" --precision "$precision" --threads "$threads" --no-save --json \
        > "$out/$engine-$precision.json" 2> "$out/$engine-$precision.err"; then
        echo "$engine $precision: $(tail -1 "$out/$engine-$precision.err")"
        rm -f "$out/$engine-$precision.json"
        continue
    fi
    python3 - "$out/$engine-$precision.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mm, conv = d["matmul"]["gflops_per_s"], d["conv"]["gflops_per_s"]
best = "3x3 convolution" if conv > mm else "matrix product"
print(f'{d["engine"]["name"]:13} {d["precision"]:9} matrix product {mm:7.1f} GFLOP/s  '
      f'3x3 convolution {conv:7.1f} GFLOP/s  stream {d["bandwidth"]["gb_per_s"]:5.1f} GB/s  '
      f'-> % of peak against the {best}')
PY
done | tee "$out/summary.txt"
cat /proc/pressure/cpu > "$out/pressure-after.txt"
