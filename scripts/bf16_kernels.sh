#!/usr/bin/env bash
# Which kernels each stack runs in f32 and bf16 on this CPU (the guide's Results, "Which
# kernels run"): torch-cpu's convolutions as oneDNN names them (ONEDNN_VERBOSE=1, one
# ResNet-50 inference pass at batch 1 per precision: primitive, implementation and ISA,
# counted), and OpenVINO's execution graph for cnnbench's ONNX export of the same model
# (layer type, primitive and runtime precision per node, counted). Not a timing: run it
# anywhere, with a build that has torch-cpu and .venv-torch with torch and openvino:
#   export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
#   cargo build --release --features torch,openvino
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./target/release/cnnbench}
PY=${PY:-.venv-torch/bin/python}
MODEL=${MODEL:-resnet50}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -o -m1 -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | sed 's/^/CPU flag: /' || echo "CPU flag: no avx512_bf16"
for p in f32 bf16 amp-bf16; do
    echo "== torch-cpu $p: oneDNN primitives of one forward pass (count, primitive, implementation)"
    ONEDNN_VERBOSE=1 "$BIN" run "$MODEL" --engine torch-cpu --precision "$p" --mode infer -b 1 \
        --passes 1 --warmup 0 -q -o "$tmp/torch-$p" 2>/dev/null |
        grep '^onednn_verbose.*,exec,' | awk -F, '{print $6", "$7}' | sort | uniq -c | sort -rn || true
done
"$BIN" convert "$MODEL" "$tmp/model.onnx" >/dev/null
echo "== openvino-cpu: the execution graph (count, layer, primitive, runtime precision)"
"$PY" - "$tmp/model.onnx" <<'PYEOF'
import collections, sys
import openvino as ov
core = ov.Core()
for hint in ["f32", "bf16"]:
    compiled = core.compile_model(sys.argv[1], "CPU", {"INFERENCE_PRECISION_HINT": hint, "PERFORMANCE_HINT": "LATENCY"})
    counts = collections.Counter()
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layer = info["layerType"].astype(str)
        if layer in ("Input", "Output"):
            continue
        counts[(layer, info["primitiveType"].astype(str), info["runtimePrecision"].astype(str))] += 1
    print(f"-- INFERENCE_PRECISION_HINT {hint} (reported back: {compiled.get_property('INFERENCE_PRECISION_HINT')})")
    for (layer, primitive, precision), n in counts.most_common():
        print(f"{n:6d} {layer}, {primitive}, {precision}")
PYEOF
