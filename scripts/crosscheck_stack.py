"""The A-B-B-A driver that the ONNX-path cross-checks share (crosscheck_ort.py,
crosscheck_openvino.py): one ONNX file from `cnnbench convert`, then ROUNDS rounds of
  A: `cnnbench run --model-file FILE.onnx --engine ENGINE --mode infer` and
  B: the stack's own Python API on the same file (the calling script's `reference`),
each in a fresh process, odd rounds A then B, even rounds B then A, so neither side
always runs first. Per pass both sides draw a fresh standard-normal input (untimed) and
time one inference; warm-up passes are dropped. Prints each round's ratio of medians and
the pooled ratio (medians over all rounds' passes), and whether cnnbench is within
±TOLERANCE. Not a script of its own: imported by the two above.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def parser(doc, tolerance, precisions=("f32", "int8")):
    """The arguments every cross-check takes (`--precision` one of `precisions`); the
    caller adds its own."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50", help="a zoo model name")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", choices=list(precisions), default="f32",
                   help="int8: `cnnbench convert --precision int8` writes the QDQ file side B runs, and"
                        " side A runs the same zoo model with `run --precision int8` (the same seed gives"
                        " the same weights and calibration, so the same network)")
    p.add_argument("--tolerance", type=float, default=tolerance)
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None, help="keep the model file and cnnbench's result files here")
    p.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model-file", help=argparse.SUPPRESS)
    return p


def interleave(args, script, engine, engine_flags, env, reference_flags):
    """Runs the rounds; returns (samples by side, what each side said, per-round ratios,
    the output folder). `script` is the calling script (run again with --reference for
    side B), `engine_flags` what cnnbench is given beyond the common ones, `env` its
    environment, `reference_flags` what side B is given."""
    out = args.out or tempfile.mkdtemp(prefix=f"crosscheck-{engine}-")
    os.makedirs(out, exist_ok=True)
    int8 = args.precision == "int8"
    model_file = os.path.join(out, f"{args.model}-{args.image_size}-{args.precision}-seed{args.seed}.onnx")
    if not os.path.exists(model_file):
        quantised = ["--precision", "int8", "--seed", str(args.seed)] if int8 else []
        subprocess.run([args.bin, "convert", args.model, model_file, "--image-size", str(args.image_size),
                        *quantised], check=True, capture_output=True, text=True)
    common = ["--passes", str(args.passes), "--warmup", str(args.warmup), "--seed", str(args.seed),
              "--threads", str(args.threads)]
    # int8: the zoo model quantised in the run, as the file was (the importer reads a QDQ
    # file back as the float network it approximates).
    model = (["--image-size", str(args.image_size), "--precision", "int8", args.model] if int8
             else ["--model-file", model_file])

    def run_cnnbench(round_):
        cmd = [args.bin, "run", *model, "--engine", engine, "--mode", "infer",
               "-b", str(args.batch_size), *common, *engine_flags, "-q", "--json",
               "-o", os.path.join(out, f"round{round_}")]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        result = json.loads(r.stdout)
        return result["samples"]["forward"], result["engine"]

    def run_reference(_round):
        cmd = [sys.executable, os.path.abspath(script), "--reference", "--model-file", model_file,
               "--batch-size", str(args.batch_size), *common, *reference_flags]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        result = json.loads(r.stdout.strip().splitlines()[-1])
        return result["forward"], result

    samples = {engine: [], "python": []}
    info = {}
    per_round = []
    for round_ in range(1, args.rounds + 1):
        order = [(engine, run_cnnbench), ("python", run_reference)]
        if round_ % 2 == 0:
            order.reverse()
        this = {}
        for name, run in order:
            this[name], info[name] = run(round_)
            samples[name] += this[name]
        ratio = statistics.median(this[engine]) / statistics.median(this["python"])
        per_round.append((" then ".join(n for n, _ in order), ratio))
        print(f"round {round_}/{args.rounds} ({per_round[-1][0]}): {engine} / Python {ratio:.3f}",
              file=sys.stderr, flush=True)
    return samples, info, per_round, out


def report(args, engine, python_name, header, samples, per_round, out):
    """Prints the rounds and the pooled comparison; returns the exit status (1 when the
    pooled ratio is outside the tolerance)."""
    print(f"{args.model} at {args.image_size}² in {args.precision}, batch {args.batch_size}, {args.threads} threads,"
          f" {args.rounds} rounds in A-B-B-A order × {args.passes} passes ({args.warmup} warm-up); {header}")
    print()
    print(f"|Round|Order|{engine} / Python|")
    print("|---:|---|---:|")
    for i, (order, ratio) in enumerate(per_round, 1):
        print(f"|{i}|{order}|{ratio:.3f}|")
    print()
    med = {n: statistics.median(s) * 1e3 for n, s in samples.items()}
    spread = {n: (min(s) * 1e3, max(s) * 1e3) for n, s in samples.items()}
    ratio = med[engine] / med["python"]
    within = abs(ratio - 1.0) <= args.tolerance
    print(f"|Phase|cnnbench {engine}|{python_name} (Python)|{engine} / Python (pooled)|")
    print("|---|---:|---:|---:|")
    print(f"|inference|{med[engine]:.2f} ms ({spread[engine][0]:.2f}–{spread[engine][1]:.2f})"
          f"|{med['python']:.2f} ms ({spread['python'][0]:.2f}–{spread['python'][1]:.2f})"
          f"|{ratio:.3f} {'✓' if within else '✗'}|")
    print()
    print(f"medians of all passes (min–max in brackets); ✓: within ±{args.tolerance:.0%}. Model file and result files: {out}")
    return 0 if within else 1


def wheel_library(package, folder, prefix, pip_line):
    """The newest shared library `prefix…` in the `folder` of `package` as this Python
    imports it, so both sides load the same file."""
    module = __import__(package)
    where = os.path.join(os.path.dirname(module.__file__), folder)
    libs = sorted(f for f in os.listdir(where) if f.startswith(prefix) and (".so" in f or f.endswith(".dylib")))
    if not libs:
        sys.exit(f"no {prefix}* in {where}: reinstall with pip install {pip_line}")
    return os.path.join(where, libs[-1])
