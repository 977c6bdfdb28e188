#!/usr/bin/env python3
"""Cross-checks cnnbench's openvino-cpu engine against OpenVINO's own Python API, interleaved.

Writes MODEL once as an ONNX file (`cnnbench convert MODEL FILE.onnx --image-size S`), then
runs ROUNDS rounds of
  A: `cnnbench run --model-file FILE.onnx --engine openvino-cpu --mode infer` and
  B: this script's reference side: `openvino.Core().compile_model(...)` and its infer requests,
in A-B-B-A order, each in a fresh process (crosscheck_stack.py). Both sides: the same model
file, batch, threads (INFERENCE_NUM_THREADS), precision hint (INFERENCE_PRECISION_HINT f32,
bf16 or f16; f32 for int8, whose QDQ file from `convert --precision int8` runs its quantised
layers in int8 while side A quantises the same zoo model with the same seed in the run), performance hint (LATENCY: one request, `request.infer` timed per pass;
THROUGHPUT: the requests OpenVINO asks for at the full batch, the batch split among them,
every request started and then waited for), the batch fixed with `model.reshape` before
compiling, and the same library (the script points cnnbench at the openvino package this
Python imports, through OPENVINO_C_LIBRARY). Side B also prints the precision OpenVINO
reports it runs, which cnnbench records as engine.settings.inference_precision.

Setup: pip install openvino==2026.4.1 (into the venv that runs this script, e.g. .venv-torch);
       build cnnbench with --features openvino.
Usage: .venv-torch/bin/python scripts/crosscheck_openvino.py [--model resnet50] [--image-size 224]
       [--batch-size 1] [--precision f32|bf16|f16|int8] [--hint latency|throughput] [--threads N]
       [--rounds 4] [--passes 20] [--warmup 3] [--tolerance 0.05] [--bin target/release/cnnbench]
       [--out DIR]
Exit status 1 when the pooled ratio is outside the tolerance.
"""
import json
import os
import sys
import time

import crosscheck_stack


def reference(args):
    """B: OpenVINO's Python API on the model file; prints one JSON line."""
    import numpy as np
    import openvino as ov

    core = ov.Core()
    model = core.read_model(args.model_file)
    channels, height, width = (int(d.get_length()) for d in model.input(0).get_partial_shape()[1:])
    # A QDQ file runs its int8 layers in int8 whatever the hint; f32 keeps the rest f32.
    hint_precision = "f32" if args.precision == "int8" else args.precision
    config = {"PERFORMANCE_HINT": args.hint.upper(), "INFERENCE_PRECISION_HINT": hint_precision,
              "INFERENCE_NUM_THREADS": args.threads}

    def compile_at(batch, extra):
        m = core.read_model(args.model_file)
        m.reshape([batch, channels, height, width])
        return core.compile_model(m, "CPU", {**config, **extra})

    compiled = compile_at(args.batch_size, {})
    requests = 1
    if args.hint == "throughput":
        requests = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        if requests > 1:
            if args.batch_size % requests:
                sys.exit(f"OpenVINO asks for {requests} requests: batch {args.batch_size} does not split")
            streams = compiled.get_property("NUM_STREAMS")
            compiled = compile_at(args.batch_size // requests, {"NUM_STREAMS": streams})
    share = args.batch_size // requests
    infer_requests = [compiled.create_infer_request() for _ in range(requests)]
    rng = np.random.default_rng(args.seed)
    samples = []
    for i in range(args.warmup + args.passes):
        x = rng.standard_normal([args.batch_size, channels, height, width], dtype=np.float32)  # untimed
        for r, request in enumerate(infer_requests):
            request.set_input_tensor(ov.Tensor(np.ascontiguousarray(x[r * share:(r + 1) * share])))
        start = time.perf_counter()
        if requests == 1:
            infer_requests[0].infer()
        else:
            for request in infer_requests:
                request.start_async()
            for request in infer_requests:
                request.wait()
        outputs = [np.array(request.get_output_tensor().data) for request in infer_requests]  # copied out
        elapsed = time.perf_counter() - start
        del outputs
        if i >= args.warmup:
            samples.append(elapsed)
    print(json.dumps({"forward": samples, "openvino": ov.get_version(),
                      "inference_precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
                      "infer_requests": requests, "threads": args.threads}))


def main():
    p = crosscheck_stack.parser(__doc__, tolerance=0.05, precisions=("f32", "bf16", "f16", "int8"))
    p.add_argument("--hint", choices=["latency", "throughput"], default="latency")
    args = p.parse_args()
    if args.reference:
        return reference(args)
    library = crosscheck_stack.wheel_library("openvino", "libs", "libopenvino_c.", "openvino==2026.4.1")
    env = dict(os.environ, OPENVINO_C_LIBRARY=library)
    # int8's --precision is given with the zoo model (crosscheck_stack.interleave).
    precision = [] if args.precision == "int8" else ["--precision", args.precision]
    samples, info, per_round, out = crosscheck_stack.interleave(
        args, __file__, "openvino-cpu", precision + ["--ov-hint", args.hint], env,
        ["--precision", args.precision, "--hint", args.hint])
    engine = info["openvino-cpu"]
    python = info["python"]
    header = (f"precision hint {args.precision}, performance hint {args.hint};"
              f" cnnbench openvino-cpu: OpenVINO {engine['libraries']['openvino']},"
              f" runs {engine['settings'].get('inference_precision')},"
              f" {engine['settings'].get('infer_requests')} request(s);"
              f" Python: OpenVINO {python['openvino']}, runs {python['inference_precision']},"
              f" {python['infer_requests']} request(s); {engine['device_name']}")
    sys.exit(crosscheck_stack.report(args, "openvino-cpu", "OpenVINO", header, samples, per_round, out))


if __name__ == "__main__":
    main()
