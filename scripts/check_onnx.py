#!/usr/bin/env python3
"""Independent check of cnnbench's ONNX export: the `onnx` checker (full_check, with
shape inference) and ONNX Runtime's CPU inference on each exported model.

Usage: check_onnx.py MANIFEST.json
MANIFEST lists {"model": "x.onnx", "input": "x.in.bin", "shape": [N, C, H, W],
"output": "x.out.bin"}: the input is little-endian float32; ONNX Runtime's output is
written the same way. Paths are relative to the manifest's folder. Prints one line per
model; exits non-zero at the first model that fails either check.
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main() -> int:
    manifest_path = sys.argv[1]
    base = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path) as f:
        entries = json.load(f)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    for e in entries:
        model_path = os.path.join(base, e["model"])
        onnx.checker.check_model(model_path, full_check=True)
        x = np.fromfile(os.path.join(base, e["input"]), dtype="<f4").reshape(e["shape"])
        session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        (y,) = session.run(None, {session.get_inputs()[0].name: x})
        np.ascontiguousarray(y, dtype="<f4").tofile(os.path.join(base, e["output"]))
        print(f"{e['model']}: checker ok, onnxruntime {ort.__version__} output {list(y.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
