#!/usr/bin/env python3
"""Does ONNX Runtime's CPU provider run a model converted to f16 faster than the f32 one?

The measurement behind ort-cpu's refusal of f16 (docs/src/onnx.md). Writes MODEL as ONNX
with cnnbench (`cnnbench convert`), converts it to f16 with onnxconverter-common
(`convert_float_to_float16`, inputs and outputs kept f32 so both take the same batch), and
times both with ONNX Runtime's own Python API: one session each (intra-op THREADS,
inter-op 1, sequential, ORT_ENABLE_ALL, the CPU provider), ROUNDS rounds in A-B-B-A order
(f32 then f16, then f16 then f32, …), each round WARMUP untimed and PASSES timed runs on a
fresh standard-normal input. Prints the median of every round's passes per side and
their ratio, the ops the f16 session left in f32 (Cast nodes ONNX Runtime inserted), and
the largest difference between the two outputs relative to the f32 output's magnitude.

Setup: pip install onnxruntime==1.32.0 onnx onnxconverter-common (into .venv-torch);
       a cnnbench binary (any build: convert needs no engine).
Usage: .venv-torch/bin/python scripts/ort_f16.py [--model resnet50] [--image-size 224]
       [--batch-size 1] [--threads 2] [--rounds 4] [--passes 10] [--warmup 2]
       [--bin target/release/cnnbench]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bin", default="target/release/cnnbench")
    args = p.parse_args()

    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxconverter_common import float16

    folder = tempfile.mkdtemp(prefix="cnnbench-ort-f16-")
    f32_file = os.path.join(folder, f"{args.model}.onnx")
    subprocess.run([args.bin, "convert", args.model, f32_file, "--image-size", str(args.image_size)],
                   check=True, stdout=subprocess.DEVNULL)
    f16_model = float16.convert_float_to_float16(onnx.load(f32_file), keep_io_types=True)
    f16_file = os.path.join(folder, f"{args.model}-f16.onnx")
    onnx.save(f16_model, f16_file)

    def session(path, optimized_path=None):
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimized_path:
            options.optimized_model_filepath = optimized_path
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    optimized = os.path.join(folder, "f16-optimized.onnx")
    sides = {"f32": session(f32_file), "f16": session(f16_file, optimized)}
    name = sides["f32"].get_inputs()[0].name
    shape = [args.batch_size, 3, args.image_size, args.image_size]
    rng = np.random.default_rng(0)

    x = rng.standard_normal(shape, dtype=np.float32)
    out32 = sides["f32"].run(None, {name: x})[0]
    out16 = sides["f16"].run(None, {name: x})[0].astype(np.float32)
    error = float(np.max(np.abs(out16 - out32)) / max(np.max(np.abs(out32)), 1e-30))

    samples = {"f32": [], "f16": []}
    for r in range(args.rounds):
        order = ["f32", "f16"] if r % 2 == 0 else ["f16", "f32"]
        for side in order:
            s = sides[side]
            for i in range(args.warmup + args.passes):
                x = rng.standard_normal(shape, dtype=np.float32)
                start = time.perf_counter()
                s.run(None, {name: x})
                elapsed = time.perf_counter() - start
                if i >= args.warmup:
                    samples[side].append(elapsed)
    m32, m16 = statistics.median(samples["f32"]), statistics.median(samples["f16"])
    ops = {}
    for node in onnx.load(optimized).graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f"onnxruntime {ort.__version__}, {args.model} {args.batch_size}x3x{args.image_size}x{args.image_size},"
          f" {args.threads} threads, {args.rounds} rounds A-B-B-A x {args.passes} passes")
    print(f"f32: median {m32 * 1e3:.2f} ms   f16: median {m16 * 1e3:.2f} ms   f16/f32 time: {m16 / m32:.2f}x")
    print(f"f16 output against f32: largest difference {error:.2e} of the output's magnitude")
    print("ops of the optimized f16 graph:", ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
