#!/usr/bin/env python3
"""Cross-checks `cnnbench run --scenario` against MLPerf's own LoadGen, interleaved.

Writes MODEL once as an ONNX file (`cnnbench convert`), then runs ROUNDS rounds of
  A: `cnnbench run --model-file FILE.onnx --engine openvino-cpu --mode infer --scenario S`
  B: LoadGen (the `mlcommons-loadgen` wheel) driving a system under test that runs the
     same file on OpenVINO's Python API: one infer request, the latency hint, the same
     threads; each query computed synchronously inside LoadGen's issue callback,
in A-B-B-A order, each in a fresh process. Both sides issue the same number of queries
(`--queries`, minimum and maximum for LoadGen) under the same scenario (single-stream, or
server at `--qps` with Poisson arrivals); LoadGen's latencies come from its summary log
(`mlperf_log_summary.txt`: its 50th, 90th and 99th percentiles, counted from each query's
scheduled issue). Prints each side's percentiles per round, the pooled ratios cnnbench /
LoadGen, and whether they are within ±TOLERANCE.

Setup: pip install openvino==2026.4.1 mlcommons-loadgen (into the venv that runs this
       script, e.g. .venv-torch); build cnnbench with --features openvino.
Usage: .venv-torch/bin/python scripts/crosscheck_loadgen.py [--model resnet18] [--image-size 64]
       [--scenario single-stream|server] [--qps 20] [--queries 300] [--threads N] [--rounds 4]
       [--tolerance 0.15] [--bin target/release/cnnbench] [--out DIR]
Exit status 1 when a pooled ratio is outside the tolerance.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import crosscheck_stack


def loadgen_side(args):
    """B: LoadGen and OpenVINO; prints one JSON line of LoadGen's percentiles (seconds)."""
    import mlperf_loadgen as lg
    import numpy as np
    import openvino as ov

    core = ov.Core()
    model = core.read_model(args.model_file)
    shape = [1] + [int(d.get_length()) for d in model.input(0).get_partial_shape()[1:]]
    model.reshape(shape)
    compiled = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                 "INFERENCE_PRECISION_HINT": "f32",
                                                 "INFERENCE_NUM_THREADS": args.threads})
    request = compiled.create_infer_request()
    sample = np.random.default_rng(args.seed).standard_normal(shape, dtype=np.float32)
    request.set_input_tensor(ov.Tensor(sample))  # preloaded, as LoadGen's QSL does
    for _ in range(3):
        request.infer()

    def issue(queries):
        for q in queries:
            request.infer()
            np.array(request.get_output_tensor().data)  # copied out, as cnnbench's engine does
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0)])

    settings = lg.TestSettings()
    settings.mode = lg.TestMode.PerformanceOnly
    if args.scenario == "server":
        settings.scenario = lg.TestScenario.Server
        settings.server_target_qps = args.qps
        settings.server_target_latency_ns = 10**12
    else:
        settings.scenario = lg.TestScenario.SingleStream
        settings.single_stream_expected_latency_ns = 10_000_000
    settings.min_query_count = args.queries
    settings.max_query_count = args.queries
    settings.min_duration_ms = 0
    settings.schedule_rng_seed = args.seed + 1
    out = tempfile.mkdtemp(prefix="loadgen-")
    log = lg.LogSettings()
    log.log_output.outdir = out
    log.log_output.copy_summary_to_stdout = False
    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(1, 1, lambda samples: None, lambda samples: None)
    lg.StartTestWithLogSettings(sut, qsl, settings, log)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    summary = open(os.path.join(out, "mlperf_log_summary.txt")).read()

    def percentile(name):
        m = re.search(rf"^{re.escape(name)} percentile latency \(ns\)\s*:\s*(\d+)", summary, re.M)
        if not m:
            sys.exit(f"LoadGen's summary has no {name} percentile:\n{summary}")
        return int(m.group(1)) / 1e9

    print(json.dumps({"p50": percentile("50.00"), "p90": percentile("90.00"),
                      "p99": percentile("99.00"), "loadgen_log": out}))


def cnnbench_side(args, model_file, out, env):
    """A: cnnbench's scenario on openvino-cpu; its percentiles (seconds)."""
    cmd = [args.bin, "run", "--model-file", model_file, "--engine", "openvino-cpu",
           "--mode", "infer", "--threads", str(args.threads), "--seed", str(args.seed),
           "--warmup", "3", "--scenario", args.scenario, "--scenario-time", "0",
           "--min-queries", str(args.queries), "-q", "--json", "-o", out]
    if args.scenario == "server":
        cmd += ["--qps", str(args.qps), "--latency-bound", "1000000"]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    latency = result["scenario"]["latency"]
    return {"p50": latency["p50"], "p90": latency["p90"], "p99": latency["p99"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--scenario", choices=["single-stream", "server"], default="single-stream")
    p.add_argument("--qps", type=float, default=20.0)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.15)
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None)
    p.add_argument("--loadgen-side", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model-file", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.loadgen_side:
        return loadgen_side(args)
    library = crosscheck_stack.wheel_library("openvino", "libs", "libopenvino_c.", "openvino==2026.4.1")
    env = dict(os.environ, OPENVINO_C_LIBRARY=library)
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-loadgen-")
    os.makedirs(out, exist_ok=True)
    model_file = os.path.join(out, f"{args.model}-{args.image_size}.onnx")
    if not os.path.exists(model_file):
        subprocess.run([args.bin, "convert", args.model, model_file, "--image-size", str(args.image_size)],
                       check=True, capture_output=True, text=True)

    def loadgen(round_):
        cmd = [sys.executable, os.path.abspath(__file__), "--loadgen-side", "--model-file", model_file,
               "--scenario", args.scenario, "--qps", str(args.qps), "--queries", str(args.queries),
               "--threads", str(args.threads), "--seed", str(args.seed)]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        return json.loads(r.stdout.strip().splitlines()[-1])

    sides = {"cnnbench": [], "loadgen": []}
    for round_ in range(args.rounds):
        order = ["cnnbench", "loadgen"] if round_ % 2 == 0 else ["loadgen", "cnnbench"]
        for side in order:
            if side == "cnnbench":
                got = cnnbench_side(args, model_file, os.path.join(out, f"round{round_}"), env)
            else:
                got = loadgen(round_)
            sides[side].append(got)
            print(f"round {round_ + 1} {side:8}: p50 {got['p50'] * 1e3:8.3f} ms  p90 {got['p90'] * 1e3:8.3f} ms"
                  f"  p99 {got['p99'] * 1e3:8.3f} ms", flush=True)
    failed = False
    print(f"{args.model} {args.image_size}x{args.image_size}, {args.scenario}"
          f"{f' at {args.qps} QPS' if args.scenario == 'server' else ''}, {args.queries} queries,"
          f" {args.threads} threads, {args.rounds} rounds A-B-B-A:")
    for key in ["p50", "p90", "p99"]:
        ours = statistics.median(r[key] for r in sides["cnnbench"])
        theirs = statistics.median(r[key] for r in sides["loadgen"])
        ratio = ours / theirs
        ok = abs(ratio - 1) <= args.tolerance
        failed |= not ok
        print(f"  {key}: cnnbench {ours * 1e3:.3f} ms, LoadGen {theirs * 1e3:.3f} ms (medians over rounds):"
              f" ratio {ratio:.3f} {'within' if ok else 'OUTSIDE'} ±{args.tolerance:.0%}")
    print(f"results and the ONNX file: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
