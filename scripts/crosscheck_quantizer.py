#!/usr/bin/env python3
"""Cross-checks cnnbench's int8 QDQ export against ONNX Runtime's own quantiser.

One f32 network, two int8 files made from it:
  cnnbench:      `cnnbench convert MODEL F.onnx --precision int8 --seed S` (min-max ranges of
                 8 standard-normal images measured on burn-flex; weights int8 symmetric per
                 output channel, activations uint8 per tensor, biases int32, batch norms
                 folded, ReLUs absorbed into the quantisation),
  onnxruntime:   `onnxruntime.quantization.quantize_static` on `cnnbench convert MODEL
                 F32.onnx --seed S` after `quant_pre_process`, QDQ format, per-channel int8
                 weights, uint8 activations, MinMax calibration on 8 standard-normal images
                 (the same distribution as cnnbench's; not the same draws).
Then
  accuracy: both files' outputs against the f32 file's (ONNX Runtime) on the same
            standard-normal inputs: largest error relative to the f32 output's largest
            magnitude, cosine similarity, top-1 agreement;
  speed:    ROUNDS rounds of the two files on the RUNTIME's own Python API, each run in a
            fresh process (crosscheck_ort.py / crosscheck_openvino.py's reference side), in
            A-B-B-A order; the pooled ratio of medians cnnbench / onnxruntime must be within
            ±TOLERANCE (default 10%).

Setup: pip install onnxruntime==1.32.0 onnx openvino==2026.4.1 (into .venv-torch); build
       cnnbench (any build: convert needs no optional engine).
Usage: .venv-torch/bin/python scripts/crosscheck_quantizer.py [--model resnet50] [--image-size 224]
       [--batch-size 1] [--runtime onnxruntime|openvino] [--threads N] [--rounds 4]
       [--passes 20] [--warmup 3] [--seed 0] [--tolerance 0.10] [--bin target/release/cnnbench]
       [--out DIR]
Exit status 1 when the speed ratio is outside the tolerance.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CALIBRATION_IMAGES = 8
CHECK_IMAGES = 16


def files(args, out):
    """The f32 file, cnnbench's int8 file and ONNX Runtime's int8 file."""
    import numpy as np
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    stem = os.path.join(out, f"{args.model}-{args.image_size}-seed{args.seed}")
    f32, ours, theirs = stem + "-f32.onnx", stem + "-cnnbench-int8.onnx", stem + "-onnxruntime-int8.onnx"
    size = ["--image-size", str(args.image_size), "--seed", str(args.seed)]
    for path, extra in ((f32, []), (ours, ["--precision", "int8", "--calibration", str(CALIBRATION_IMAGES)])):
        if not os.path.exists(path):
            subprocess.run([args.bin, "convert", args.model, path, *size, *extra], check=True,
                           capture_output=True, text=True)
    if not os.path.exists(theirs):
        prepared = stem + "-f32-prepared.onnx"
        quant_pre_process(f32, prepared)
        rng = np.random.default_rng(args.seed)
        images = [rng.standard_normal([1, 3, args.image_size, args.image_size], dtype=np.float32)
                  for _ in range(CALIBRATION_IMAGES)]

        class Images(CalibrationDataReader):
            def __init__(self):
                self.left = iter(images)

            def get_next(self):
                image = next(self.left, None)
                return None if image is None else {"input": image}

        quantize_static(prepared, theirs, Images(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    return f32, ours, theirs


def accuracy(args, f32, ours, theirs):
    """Each int8 file against the f32 one, on the same inputs (ONNX Runtime, CPU)."""
    import numpy as np
    import onnxruntime as ort

    def outputs(path):
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(args.seed + 1)
        x = rng.standard_normal([CHECK_IMAGES, 3, args.image_size, args.image_size], dtype=np.float32)
        return np.concatenate([session.run(None, {"input": x[i:i + 1]})[0] for i in range(CHECK_IMAGES)])

    reference = outputs(f32)
    rows = {}
    for name, path in (("cnnbench", ours), ("onnxruntime", theirs)):
        y = outputs(path)
        rows[name] = {
            "max_relative_error": float(np.abs(y - reference).max() / np.abs(reference).max()),
            "cosine": float((y * reference).sum() / (np.linalg.norm(y) * np.linalg.norm(reference))),
            "top1_agreement": float((y.argmax(1) == reference.argmax(1)).mean()),
            "bytes": os.path.getsize(path),
        }
    return rows


def timed(args, path):
    """One fresh process of the runtime's own Python API on `path`: its pass times."""
    script = "crosscheck_ort.py" if args.runtime == "onnxruntime" else "crosscheck_openvino.py"
    cmd = [sys.executable, os.path.join(HERE, script), "--reference", "--model-file", path,
           "--batch-size", str(args.batch_size), "--passes", str(args.passes), "--warmup",
           str(args.warmup), "--seed", str(args.seed), "--threads", str(args.threads)]
    if args.runtime == "openvino":
        cmd += ["--precision", "int8", "--hint", "latency"]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["forward"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--runtime", choices=["onnxruntime", "openvino"], default="onnxruntime")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None, help="keep the three model files here")
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-quantizer-")
    os.makedirs(out, exist_ok=True)
    f32, ours, theirs = files(args, out)
    rows = accuracy(args, f32, ours, theirs)

    samples = {"cnnbench": [], "onnxruntime": []}
    per_round = []
    for round_ in range(1, args.rounds + 1):
        order = [("cnnbench", ours), ("onnxruntime", theirs)]
        if round_ % 2 == 0:
            order.reverse()
        this = {name: timed(args, path) for name, path in order}
        for name, s in this.items():
            samples[name] += s
        ratio = statistics.median(this["cnnbench"]) / statistics.median(this["onnxruntime"])
        per_round.append((" then ".join(n for n, _ in order), ratio))
        print(f"round {round_}/{args.rounds}: cnnbench / onnxruntime {ratio:.3f}", file=sys.stderr, flush=True)

    print(f"{args.model} at {args.image_size}², seed {args.seed}: int8 files from cnnbench's export and"
          f" ONNX Runtime's quantize_static, timed on {args.runtime} at batch {args.batch_size},"
          f" {args.threads} threads, {args.rounds} rounds A-B-B-A × {args.passes} passes")
    print()
    print("|Quantised by|Max relative error vs f32|Cosine vs f32|Top-1 agreement|File bytes|")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"|{name}|{row['max_relative_error']:.2e}|{row['cosine']:.5f}|"
              f"{row['top1_agreement']:.0%} of {CHECK_IMAGES}|{row['bytes']:,}|")
    print()
    print("|Round|Order|cnnbench / onnxruntime|")
    print("|---:|---|---:|")
    for i, (order, ratio) in enumerate(per_round, 1):
        print(f"|{i}|{order}|{ratio:.3f}|")
    med = {n: statistics.median(s) * 1e3 for n, s in samples.items()}
    ratio = med["cnnbench"] / med["onnxruntime"]
    within = abs(ratio - 1.0) <= args.tolerance
    print()
    print(f"|Pooled|cnnbench's file|ONNX Runtime's file|ratio|")
    print("|---|---:|---:|---:|")
    print(f"|{args.runtime}|{med['cnnbench']:.2f} ms|{med['onnxruntime']:.2f} ms|{ratio:.3f} {'✓' if within else '✗'}|")
    print()
    print(f"medians of all passes; ✓: within ±{args.tolerance:.0%}. Files: {out}")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
