#!/usr/bin/env python3
"""Cross-checks cnnbench's torch-cpu engine (libtorch in cnnbench's process) or its
pytorch engine (PyTorch in a worker process, `--engine pytorch`) against PyTorch
itself, interleaved.

Runs ROUNDS rounds of `cnnbench run MODEL --engine ENGINE` (A) and
`scripts/pytorch_reference.py MODEL` (B: torchvision's model, the same method: train
mode, fresh random input per pass, forward and backward timed apart, warm-up dropped),
each in a fresh process, in A-B-B-A order (odd rounds A then B, even rounds B then A),
so neither side always runs first on a machine that a previous run has just warmed or
heated, and nothing else runs in the sequence. Prints each round's ratio of medians and
the pooled ratio (medians over all rounds' passes), and says whether cnnbench is within
±TOLERANCE of PyTorch, forward and backward. --with-burn times burn-flex once, after
the interleaved rounds, for context only.

Both sides get the same heap policy (--allocator, default keep: cnnbench's default, and
pytorch_reference.py sets glibc the same way before importing torch); with `system`
both run with glibc's defaults, under which the two processes' different allocation
histories cost them differently (see the guide's Results page).

Setup: pip install torch==2.11.0 torchvision; build cnnbench with --features torch.
The pytorch engine builds the network from cnnbench's model file and runs it in a worker
on this Python; the reference is torchvision's own model: the two agree when the
worker's pipe (its round trip is the result's call_floor_s) and the Graph's
interpretation cost nothing measurable. The issue's bound for it is ±3%
(`--engine pytorch --tolerance 0.03`).

Setup: pip install torch==2.11.0 torchvision; build cnnbench with --features torch
(for torch-cpu; the pytorch engine is in every build).
Usage: python3 scripts/crosscheck_torch.py [--engine torch-cpu|pytorch] [--model resnet50] [--rounds 3] [--passes 5]
       [--batch-size 16] [--allocator keep|system] [--with-burn]
       [--bin target/release/cnnbench] [--out DIR]
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
           "--passes", str(args.passes), "--warmup", str(args.warmup), "-q", "--json", "-o", out,
           "--allocator", args.allocator]
    result = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(result.stdout)
    policy = (r["config"].get("allocator") or {}).get("policy", "system")
    if policy != args.allocator:
        sys.exit(f"cnnbench ran with allocator {policy!r}, not {args.allocator!r}: is {binary} older than --allocator?")
    r["engine"]["allocator"] = r["config"]["allocator"]["detail"]
    return {phase: r["samples"][phase] for phase in ("forward", "backward")}, r["engine"]


def pytorch(args):
    cmd = [sys.executable, os.path.join(HERE, "pytorch_reference.py"), args.model, "--json",
           "--batch-size", str(args.batch_size), "--passes", str(args.passes), "--warmup", str(args.warmup),
           "--allocator", args.allocator]
    result = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(result.stdout.strip().splitlines()[-1])
    return {phase: r[phase] for phase in ("forward", "backward")}, r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=("torch-cpu", "pytorch"), default="torch-cpu")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--allocator", choices=("keep", "system"), default="keep",
                   help="the heap policy of both sides (cnnbench's --allocator)")
    p.add_argument("--with-burn", action="store_true")
    p.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "cnnbench"))
    p.add_argument("--out", default=None, help="keep cnnbench's result files here")
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-")
    engine = args.engine
    samples = {name: {"forward": [], "backward": []} for name in (engine, "PyTorch", "burn-flex")}
    info = {}
    per_round = []

    def run_cnnbench(round_):
        s, info[engine] = cnnbench(args.bin, engine, args, os.path.join(out, f"round{round_}"))
        return s

    def run_pytorch(round_):
        s, info["PyTorch"] = pytorch(args)
        return s

    for round_ in range(1, args.rounds + 1):
        order = [(engine, run_cnnbench), ("PyTorch", run_pytorch)]
        if round_ % 2 == 0:
            order.reverse()
        this = {}
        for name, run in order:
            this[name] = run(round_)
            for phase in this[name]:
                samples[name][phase] += this[name][phase]
        ratios = {phase: statistics.median(this[engine][phase]) / statistics.median(this["PyTorch"][phase])
                  for phase in ("forward", "backward")}
        per_round.append((" then ".join(n for n, _ in order), ratios))
        print(f"round {round_}/{args.rounds} ({per_round[-1][0]}): {engine} / PyTorch forward {ratios['forward']:.3f},"
              f" backward {ratios['backward']:.3f}", file=sys.stderr, flush=True)
    engines = [engine]
    if args.with_burn:
        s, info["burn-flex"] = cnnbench(args.bin, "burn-flex", args, os.path.join(out, "burn"))
        for phase in s:
            samples["burn-flex"][phase] += s[phase]
        engines.append("burn-flex")
    else:
        del samples["burn-flex"]

    torch_info = info[engine]
    libs = torch_info["libraries"]
    print(f"{args.model}, batch {args.batch_size}, {args.rounds} rounds in A-B-B-A order × {args.passes} passes;"
          f" cnnbench {engine}: {'libtorch ' + libs['libtorch'] if 'libtorch' in libs else 'torch ' + libs.get('torch', '?')},"
          f" {torch_info['threads']} threads;"
          f" PyTorch {info['PyTorch']['pytorch']}, {info['PyTorch']['threads']} threads; {torch_info['device_name']};"
          f" allocator {args.allocator} on both sides (cnnbench: {torch_info['allocator']})")
    print()
    print("|Round|Order|forward ratio|backward ratio|")
    print("|---:|---|---:|---:|")
    for i, (order, ratios) in enumerate(per_round, 1):
        print(f"|{i}|{order}|{ratios['forward']:.3f}|{ratios['backward']:.3f}|")
    print()
    print("|Phase|" + "|".join(engines) + f"|PyTorch|{engine} / PyTorch (pooled)|")
    print("|---|" + "---:|" * (len(engines) + 2))
    ok = True
    for phase in ("forward", "backward"):
        med = {name: statistics.median(samples[name][phase]) * 1e3 for name in samples}
        spread = {name: (min(samples[name][phase]) * 1e3, max(samples[name][phase]) * 1e3) for name in samples}
        ratio = med[engine] / med["PyTorch"]
        within = abs(ratio - 1.0) <= args.tolerance
        ok &= within
        cells = [f"{med[n]:.0f} ms ({spread[n][0]:.0f}–{spread[n][1]:.0f})" for n in engines + ["PyTorch"]]
        print(f"|{phase}|" + "|".join(cells) + f"|{ratio:.3f} {'✓' if within else '✗'}|")
    print()
    print(f"medians of all passes (min–max in brackets); ✓: within ±{args.tolerance:.0%}"
          f"{'; burn-flex ran once after the rounds, outside the interleaving' if args.with_burn else ''}. Result files: {out}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
