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
Usage: .venv-torch/bin/python scripts/crosscheck_ort.py [--model resnet50] [--image-size 224]
       [--batch-size 1] [--threads N] [--rounds 4] [--passes 20] [--warmup 3]
       [--bin target/release/cnnbench] [--out DIR]
Exit status 1 when the pooled ratio is outside the tolerance.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


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


def library_of_this_python():
    """The shared library of the onnxruntime package this Python imports."""
    import onnxruntime
    capi = os.path.join(os.path.dirname(onnxruntime.__file__), "capi")
    libs = sorted(f for f in os.listdir(capi) if f.startswith("libonnxruntime.so") or
                  (f.startswith("libonnxruntime.") and f.endswith(".dylib")))
    if not libs:
        sys.exit(f"no libonnxruntime in {capi}: reinstall with pip install onnxruntime==1.32.0")
    return os.path.join(capi, libs[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50", help="a zoo model name")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None, help="keep the model file and cnnbench's result files here")
    p.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model-file", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.reference:
        return reference(args)

    out = args.out or tempfile.mkdtemp(prefix="crosscheck-ort-")
    os.makedirs(out, exist_ok=True)
    model_file = os.path.join(out, f"{args.model}-{args.image_size}.onnx")
    if not os.path.exists(model_file):
        subprocess.run([args.bin, "convert", args.model, model_file, "--image-size", str(args.image_size)],
                       check=True, capture_output=True, text=True)
    env = dict(os.environ, ORT_DYLIB_PATH=library_of_this_python())
    common = ["-b", str(args.batch_size), "--passes", str(args.passes), "--warmup", str(args.warmup)]

    def run_cnnbench(round_):
        cmd = [args.bin, "run", "--model-file", model_file, "--engine", "ort-cpu", "--mode", "infer",
               "--threads", str(args.threads), "--seed", str(args.seed), *common, "-q", "--json",
               "-o", os.path.join(out, f"round{round_}")]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        result = json.loads(r.stdout)
        return result["samples"]["forward"], result["engine"]

    def run_reference(_round):
        cmd = [sys.executable, os.path.abspath(__file__), "--reference", "--model-file", model_file,
               "--threads", str(args.threads), "--batch-size", str(args.batch_size), "--seed", str(args.seed),
               "--passes", str(args.passes), "--warmup", str(args.warmup)]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        result = json.loads(r.stdout.strip().splitlines()[-1])
        return result["forward"], result

    samples = {"ort-cpu": [], "python": []}
    info = {}
    per_round = []
    for round_ in range(1, args.rounds + 1):
        order = [("ort-cpu", run_cnnbench), ("python", run_reference)]
        if round_ % 2 == 0:
            order.reverse()
        this = {}
        for name, run in order:
            this[name], info[name] = run(round_)
            samples[name] += this[name]
        ratio = statistics.median(this["ort-cpu"]) / statistics.median(this["python"])
        per_round.append((" then ".join(n for n, _ in order), ratio))
        print(f"round {round_}/{args.rounds} ({per_round[-1][0]}): ort-cpu / Python {ratio:.3f}",
              file=sys.stderr, flush=True)

    engine = info["ort-cpu"]
    print(f"{args.model} at {args.image_size}², batch {args.batch_size}, {args.threads} intra-op threads,"
          f" {args.rounds} rounds in A-B-B-A order × {args.passes} passes ({args.warmup} warm-up);"
          f" cnnbench ort-cpu: ONNX Runtime {engine['framework_version']},"
          f" {engine['settings'].get('graph_optimization_level')};"
          f" Python: onnxruntime {info['python']['onnxruntime']}, {info['python']['providers'][0]}; {engine['device_name']}")
    print()
    print("|Round|Order|ort-cpu / Python|")
    print("|---:|---|---:|")
    for i, (order, ratio) in enumerate(per_round, 1):
        print(f"|{i}|{order}|{ratio:.3f}|")
    print()
    med = {n: statistics.median(s) * 1e3 for n, s in samples.items()}
    spread = {n: (min(s) * 1e3, max(s) * 1e3) for n, s in samples.items()}
    ratio = med["ort-cpu"] / med["python"]
    within = abs(ratio - 1.0) <= args.tolerance
    print("|Phase|cnnbench ort-cpu|ONNX Runtime (Python)|ort-cpu / Python (pooled)|")
    print("|---|---:|---:|---:|")
    print(f"|inference|{med['ort-cpu']:.2f} ms ({spread['ort-cpu'][0]:.2f}–{spread['ort-cpu'][1]:.2f})"
          f"|{med['python']:.2f} ms ({spread['python'][0]:.2f}–{spread['python'][1]:.2f})"
          f"|{ratio:.3f} {'✓' if within else '✗'}|")
    print()
    print(f"medians of all passes (min–max in brackets); ✓: within ±{args.tolerance:.0%}. Model file and result files: {out}")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
