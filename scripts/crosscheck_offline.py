#!/usr/bin/env python3
"""Cross-checks `cnnbench run --scenario offline --in-flight N` against the stack's own
throughput tool, interleaved A-B-B-A, each side in a fresh process.

  openvino-cpu: B is OpenVINO's `benchmark_app -hint throughput` (it ships in the openvino
    wheel): asynchronous infer requests on the streams it chooses, f32
    (`-infer_precision f32`: on a CPU with AMX-BF16 it would otherwise run bf16). A first,
    untimed `benchmark_app` run says how many infer requests it keeps in flight and how
    many threads it uses; side A runs with `--in-flight` that many and `--threads` those.
  ort-cpu: B is a Python thread-pool driver of ONNX Runtime: N threads, each with its own
    `InferenceSession` (intra-op THREADS/N threads, inter-op 1, sequential, ORT_ENABLE_ALL),
    a preloaded input, computing back to back for the same duration (onnxruntime releases
    the GIL inside `run`); side A is `--in-flight N --threads THREADS`.

Both sides run the same ONNX file (`cnnbench convert MODEL --image-size S`) at batch 1 for
`--seconds` each; throughput is samples per second from the first issue to the last
completion. Prints each round's figures, the pooled ratio (median over rounds) cnnbench /
stack, and whether it is within ±TOLERANCE.

Setup: pip install openvino==2026.4.1 onnxruntime==1.32.0 (into the venv that runs this
       script, e.g. .venv-torch); build cnnbench with --features openvino,ort.
Usage: .venv-torch/bin/python scripts/crosscheck_offline.py --engine openvino-cpu|ort-cpu
       [--model resnet50] [--image-size 224] [--in-flight 2] [--threads N] [--seconds 20]
       [--rounds 4] [--tolerance 0.05] [--bin target/release/cnnbench] [--out DIR]
Exit status 1 when the pooled ratio is outside the tolerance.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import crosscheck_stack


def ort_side(args):
    """B for ort-cpu: N sessions on N threads, back to back; prints one JSON line."""
    import numpy as np
    import onnxruntime as ort

    each = max(1, args.threads // args.in_flight)
    sessions = []
    for _ in range(args.in_flight):
        options = ort.SessionOptions()
        options.intra_op_num_threads = each
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sessions.append(ort.InferenceSession(args.model_file, options, providers=["CPUExecutionProvider"]))
    declared = sessions[0].get_inputs()[0]
    shape = [1] + [int(d) for d in declared.shape[1:]]
    x = np.random.default_rng(args.seed).standard_normal(shape, dtype=np.float32)
    for s in sessions:
        for _ in range(3):
            s.run(None, {declared.name: x})
    counts = [0] * len(sessions)
    last = [0.0] * len(sessions)
    start = time.perf_counter()
    stop = start + args.seconds

    def serve(i):
        while time.perf_counter() < stop:
            sessions[i].run(None, {declared.name: x})
            counts[i] += 1
            last[i] = time.perf_counter()

    threads = [threading.Thread(target=serve, args=(i,)) for i in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"samples_per_s": sum(counts) / (max(last) - start),
                      "onnxruntime": ort.__version__, "threads_each": each}))


def benchmark_app(args, model_file, seconds, env):
    """B for openvino-cpu: benchmark_app's throughput and what it chose."""
    tool = shutil.which("benchmark_app", path=os.path.dirname(sys.executable)) or shutil.which("benchmark_app")
    if not tool:
        sys.exit("benchmark_app is not installed: pip install openvino==2026.4.1 into this Python's venv")
    [c, h, w] = [3, args.image_size, args.image_size]
    cmd = [tool, "-m", model_file, "-d", "CPU", "-hint", "throughput", "-t", str(seconds),
           "-shape", f"[1,{c},{h},{w}]", "-infer_precision", "f32"]
    # benchmark_app takes no thread count beside a hint: it uses every core, and side A
    # is given the threads it reports.
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout

    def find(pattern, what):
        m = re.search(pattern, out, re.M)
        if not m:
            sys.exit(f"benchmark_app's output has no {what}:\n{out}")
        return m.group(1)

    return {"samples_per_s": float(find(r"Throughput:\s*([\d.]+)\s*FPS", "throughput")),
            "requests": int(find(r"Start inference asynchronously, (\d+) inference requests", "request count")),
            "streams": find(r"NUM_STREAMS:\s*(\S+)", "NUM_STREAMS"),
            "threads": int(find(r"INFERENCE_NUM_THREADS:\s*(\d+)", "INFERENCE_NUM_THREADS"))}


def cnnbench_side(args, engine, model_file, in_flight, threads, out, env):
    """A: cnnbench's offline scenario; its samples per second and serving record."""
    cmd = [args.bin, "run", "--model-file", model_file, "--engine", engine, "--mode", "infer",
           "--threads", str(threads), "--seed", str(args.seed), "--warmup", "3",
           "--scenario", "offline", "-b", "1", "--scenario-time", str(args.seconds),
           "--min-queries", "1", "--in-flight", str(in_flight), "-q", "--json", "-o", out]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    scenario = result["scenario"]
    return {"samples_per_s": scenario["samples_per_s"], "serving": scenario["serving"],
            "settings": result["engine"].get("settings", {})}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=["openvino-cpu", "ort-cpu"], required=True)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--in-flight", type=int, default=2, help="ort-cpu: sessions side by side")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="ort-cpu; openvino-cpu takes the threads benchmark_app reports")
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None)
    p.add_argument("--ort-side", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model-file", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.ort_side:
        return ort_side(args)
    if args.engine == "openvino-cpu":
        library = crosscheck_stack.wheel_library("openvino", "libs", "libopenvino_c.", "openvino==2026.4.1")
        env = dict(os.environ, OPENVINO_C_LIBRARY=library)
    else:
        library = crosscheck_stack.wheel_library("onnxruntime", "capi", "libonnxruntime.", "onnxruntime==1.32.0")
        env = dict(os.environ, ORT_DYLIB_PATH=library)
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-offline-")
    os.makedirs(out, exist_ok=True)
    model_file = os.path.join(out, f"{args.model}-{args.image_size}.onnx")
    if not os.path.exists(model_file):
        subprocess.run([args.bin, "convert", args.model, model_file, "--image-size", str(args.image_size)],
                       check=True, capture_output=True, text=True)

    in_flight, threads = args.in_flight, args.threads
    if args.engine == "openvino-cpu":
        chose = benchmark_app(args, model_file, 2, env)
        in_flight, threads = chose["requests"], chose["threads"]
        print(f"benchmark_app -hint throughput chose {chose['requests']} infer requests, "
              f"{chose['streams']} streams, {chose['threads']} threads: cnnbench runs --in-flight "
              f"{in_flight} --threads {threads}", flush=True)

    def stack_side():
        if args.engine == "openvino-cpu":
            return benchmark_app(args, model_file, args.seconds, env)
        cmd = [sys.executable, os.path.abspath(__file__), "--engine", "ort-cpu", "--ort-side",
               "--model-file", model_file, "--in-flight", str(in_flight), "--threads", str(threads),
               "--seconds", str(args.seconds), "--seed", str(args.seed)]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        return json.loads(r.stdout.strip().splitlines()[-1])

    stack_name = "benchmark_app" if args.engine == "openvino-cpu" else "ORT threads"
    sides = {"cnnbench": [], "stack": []}
    serving = None
    for round_ in range(args.rounds):
        order = ["cnnbench", "stack"] if round_ % 2 == 0 else ["stack", "cnnbench"]
        for side in order:
            if side == "cnnbench":
                got = cnnbench_side(args, args.engine, model_file, in_flight, threads,
                                    os.path.join(out, f"round{round_}"), env)
                serving = got["serving"]
            else:
                got = stack_side()
            sides[side].append(got["samples_per_s"])
            name = "cnnbench" if side == "cnnbench" else stack_name
            print(f"round {round_ + 1} {name:13}: {got['samples_per_s']:9.2f} samples/s", flush=True)
    ours = statistics.median(sides["cnnbench"])
    theirs = statistics.median(sides["stack"])
    ratio = ours / theirs
    within = abs(ratio - 1) <= args.tolerance
    print(f"{args.model} {args.image_size}x{args.image_size}, offline, batch 1, {in_flight} in flight, "
          f"{threads} threads, {args.seconds:g} s a run, {args.rounds} rounds A-B-B-A")
    print(f"  cnnbench: {serving}")
    print(f"  samples/s: cnnbench {ours:.2f}, {stack_name} {theirs:.2f} (medians over rounds):"
          f" ratio {ratio:.3f} {'within' if within else 'OUTSIDE'} ±{args.tolerance:.0%}")
    print(f"results and the ONNX file: {out}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
