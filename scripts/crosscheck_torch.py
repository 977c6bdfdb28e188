#!/usr/bin/env python3
"""Cross-checks cnnbench's torch-cpu engine against PyTorch itself, interleaved.

Alternates, ROUNDS times: `cnnbench run MODEL --engine torch-cpu` and
`scripts/pytorch_reference.py MODEL` (torchvision's model, the same method: train mode,
fresh random input per pass, forward and backward timed apart, warm-up dropped), each
in a fresh process, so slow drift of the machine hits both alike. Then compares the
medians over all rounds' passes and says whether cnnbench is within ±TOLERANCE of
PyTorch, forward and backward. Optionally adds burn-flex to every round (--with-burn).

Setup: pip install torch==2.11.0 torchvision; build cnnbench with --features torch.
Usage: python3 scripts/crosscheck_torch.py [--model resnet50] [--rounds 3] [--passes 5]
       [--batch-size 16] [--with-burn] [--bin target/release/cnnbench] [--out DIR]
Exit status 1 when a phase is outside the tolerance.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cnnbench(binary, engine, args, out):
    cmd = [binary, "run", args.model, "--engine", engine, "-b", str(args.batch_size),
           "--passes", str(args.passes), "--warmup", str(args.warmup), "-q", "--json", "-o", out]
    result = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(result.stdout)
    return {phase: r["samples"][phase] for phase in ("forward", "backward")}, r["engine"]


def pytorch(args):
    cmd = [sys.executable, os.path.join(HERE, "pytorch_reference.py"), args.model, "--json",
           "--batch-size", str(args.batch_size), "--passes", str(args.passes), "--warmup", str(args.warmup)]
    result = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(result.stdout.strip().splitlines()[-1])
    return {phase: r[phase] for phase in ("forward", "backward")}, r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--with-burn", action="store_true")
    p.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None, help="keep cnnbench's result files here")
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-")
    engines = ["torch-cpu"] + (["burn-flex"] if args.with_burn else [])
    samples = {name: {"forward": [], "backward": []} for name in engines + ["pytorch"]}
    info = {}
    for round_ in range(1, args.rounds + 1):
        for engine in engines:
            s, info[engine] = cnnbench(args.bin, engine, args, os.path.join(out, f"round{round_}"))
            for phase in s:
                samples[engine][phase] += s[phase]
        s, info["pytorch"] = pytorch(args)
        for phase in s:
            samples["pytorch"][phase] += s[phase]
        print(f"round {round_}/{args.rounds} done", file=sys.stderr, flush=True)

    torch_info = info["torch-cpu"]
    print(f"{args.model}, batch {args.batch_size}, {args.rounds} interleaved rounds × {args.passes} passes;"
          f" cnnbench torch-cpu: libtorch {torch_info['libraries'].get('libtorch')}, {torch_info['threads']} threads;"
          f" PyTorch {info['pytorch']['pytorch']}, {info['pytorch']['threads']} threads; {torch_info['device_name']}")
    print()
    print("|Phase|" + "|".join(engines) + "|PyTorch|torch-cpu / PyTorch|")
    print("|---|" + "---:|" * (len(engines) + 2))
    ok = True
    for phase in ("forward", "backward"):
        med = {name: statistics.median(samples[name][phase]) * 1e3 for name in samples}
        spread = {name: (min(samples[name][phase]) * 1e3, max(samples[name][phase]) * 1e3) for name in samples}
        ratio = med["torch-cpu"] / med["pytorch"]
        within = abs(ratio - 1.0) <= args.tolerance
        ok &= within
        cells = [f"{med[n]:.0f} ms ({spread[n][0]:.0f}–{spread[n][1]:.0f})" for n in engines + ["pytorch"]]
        print(f"|{phase}|" + "|".join(cells) + f"|{ratio:.3f} {'✓' if within else '✗'}|")
    print()
    print(f"medians of all passes (min–max in brackets); ✓: within ±{args.tolerance:.0%}. Result files: {out}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
