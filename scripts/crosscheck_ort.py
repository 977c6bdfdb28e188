#!/usr/bin/env python3
"""Cross-checks cnnbench's ort-cpu engine against ONNX Runtime's own Python API, interleaved.

Writes MODEL once as an ONNX file (`cnnbench convert MODEL FILE.onnx --image-size S`),
then runs ROUNDS rounds of
  A: `cnnbench run --model-file FILE.onnx --engine ort-cpu --mode infer` and
  B: this script's reference side: `onnxruntime.InferenceSession(FILE.onnx).run`,
each in a fresh process, in A-B-B-A order (odd rounds A then B, even rounds B then A),
so neither side always runs first. Both sides: the same model file, batch and threads
(intra-op THREADS, inter-op 1, sequential execution, ORT_ENABLE_ALL, the CPU execution
provider, ONNX Runtime's default spinning), the same library (the script points
cnnbench at the onnxruntime package this Python imports, through ORT_DYLIB_PATH), and
the same method: per pass a fresh standard-normal input (untimed), one timed run
(ONNX Runtime computes and hands the output back as an owned array), warm-up passes
dropped, median of the passes. Prints each round's ratio of medians and the pooled ratio
(medians over all rounds' passes), and whether cnnbench is within ±TOLERANCE.

Setup: pip install onnxruntime==1.32.0 (into the venv that runs this script, e.g.
       .venv-torch); build cnnbench with --features ort.
int8 (--precision int8): side B runs the QDQ file `cnnbench convert --precision int8 --seed S`
writes, side A quantises the same zoo model in the run (`run --precision int8 --seed S`): the
same weights and calibration, so the same network.

Usage: .venv-torch/bin/python scripts/crosscheck_ort.py [--model resnet50] [--image-size 224]
       [--batch-size 1] [--precision f32|int8] [--threads N] [--rounds 4] [--passes 20] [--warmup 3]
       [--bin target/release/cnnbench] [--out DIR]
Exit status 1 when the pooled ratio is outside the tolerance.
"""
import json
import os
import sys
import time

import crosscheck_stack


def reference(args):
    """B: ONNX Runtime's Python API on the model file; prints one JSON line."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model_file, options, providers=["CPUExecutionProvider"])
    declared = session.get_inputs()[0]
    shape = [args.batch_size] + [int(d) for d in declared.shape[1:]]
    rng = np.random.default_rng(args.seed)
    samples = []
    for i in range(args.warmup + args.passes):
        x = rng.standard_normal(shape, dtype=np.float32)  # untimed, fresh per pass
        start = time.perf_counter()
        session.run(None, {declared.name: x})
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            samples.append(elapsed)
    print(json.dumps({"forward": samples, "onnxruntime": ort.__version__,
                      "providers": session.get_providers(), "threads": args.threads}))


def main():
    p = crosscheck_stack.parser(__doc__, tolerance=0.10)
    args = p.parse_args()
    if args.reference:
        return reference(args)
    library = crosscheck_stack.wheel_library("onnxruntime", "capi", "libonnxruntime.", "onnxruntime==1.32.0")
    env = dict(os.environ, ORT_DYLIB_PATH=library)
    samples, info, per_round, out = crosscheck_stack.interleave(
        args, __file__, "ort-cpu", [], env, [])
    engine = info["ort-cpu"]
    header = (f"cnnbench ort-cpu: ONNX Runtime {engine['framework_version']},"
              f" {engine['settings'].get('graph_optimization_level')};"
              f" Python: onnxruntime {info['python']['onnxruntime']}, {info['python']['providers'][0]}; {engine['device_name']}")
    sys.exit(crosscheck_stack.report(args, "ort-cpu", "ONNX Runtime", header, samples, per_round, out))


if __name__ == "__main__":
    main()
