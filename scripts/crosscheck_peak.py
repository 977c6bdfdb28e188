#!/usr/bin/env python3
"""Cross-checks `cnnbench peak` on torch-cpu against PyTorch's own API, interleaved.

ROUNDS rounds of
  A: `cnnbench peak --engine torch-cpu --json --no-save` (a matrix product as one Linear
     layer, a 3x3 convolution as one Conv2d layer), and
  B: this script's reference side: `torch.nn.functional.linear` and
     `torch.nn.functional.conv2d` on tensors of the same sizes,
each in a fresh process, in A-B-B-A order (odd rounds A then B, even rounds B then A).
Both sides: the same threads (torch.set_num_threads), inference (no autograd), one
input drawn before the passes, WARMUP passes dropped, the median of PASSES. Prints each
round's GFLOP/s for both primitives on both sides, the pooled ratios, which primitive is
faster (what "% of peak" is measured against), and whether cnnbench is within
+-TOLERANCE of PyTorch on each.

The point of the check: "% of peak" divides a network's rate by the faster of the two,
so both must be the stack's real rates. On a CPU PyTorch runs `torch.mm`/`linear` on
MKL (or oneDNN's matmul) and convolutions on oneDNN, which can be faster.

Setup: .venv-torch with torch 2.11.0; build cnnbench with --features torch
       (LIBTORCH_USE_PYTORCH=1, see the README).
Usage: .venv-torch/bin/python scripts/crosscheck_peak.py [--threads N] [--rounds 4]
       [--passes 10] [--warmup 2] [--size 2048] [--conv-channels 256] [--conv-size 56]
       [--conv-batch 8] [--bin target/release/cnnbench]
Exit status 1 when a pooled ratio is outside the tolerance.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--passes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--conv-channels", type=int, default=256)
    p.add_argument("--conv-size", type=int, default=56)
    p.add_argument("--conv-batch", type=int, default=8)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "target", "release", "cnnbench"))
    p.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def flops(args):
    """FLOPs of one matrix product and of one convolution (2 per multiply-add)."""
    n = args.size
    c, s, b = args.conv_channels, args.conv_size, args.conv_batch
    return 2.0 * n * n * n, 2.0 * b * c * c * 9 * s * s


def reference(args):
    """B: PyTorch's own calls; prints one JSON line of median seconds."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n = args.size
    c, s, b = args.conv_channels, args.conv_size, args.conv_batch

    def median(fn):
        times = []
        with torch.inference_mode():
            for i in range(args.warmup + args.passes):
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
                if i >= args.warmup:
                    times.append(elapsed)
        return statistics.median(times)

    x, w = torch.randn(n, n), torch.randn(n, n)
    matmul = median(lambda: F.linear(x, w))
    del x, w
    x, w = torch.randn(b, c, s, s), torch.randn(c, c, 3, 3)
    conv = median(lambda: F.conv2d(x, w, padding=1))
    print(json.dumps({"matmul_s": matmul, "conv_s": conv, "torch": torch.__version__}))


def run_cnnbench(args):
    cmd = [args.bin, "peak", "--engine", "torch-cpu", "--threads", str(args.threads), "--json", "--no-save",
           "--size", str(args.size), "--conv-channels", str(args.conv_channels), "--conv-size",
           str(args.conv_size), "--conv-batch", str(args.conv_batch), "--passes", str(args.passes),
           "--stream-mi", "1"]
    doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"matmul_s": doc["matmul"]["time"]["median"], "conv_s": doc["conv"]["time"]["median"]}


def run_reference(args):
    cmd = [sys.executable, os.path.abspath(__file__), "--reference", "--threads", str(args.threads),
           "--passes", str(args.passes), "--warmup", str(args.warmup), "--size", str(args.size),
           "--conv-channels", str(args.conv_channels), "--conv-size", str(args.conv_size),
           "--conv-batch", str(args.conv_batch)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])


def main():
    args = parse()
    if args.reference:
        reference(args)
        return 0
    mm_flops, conv_flops = flops(args)
    sides = {"cnnbench": [], "pytorch": []}
    for r in range(1, args.rounds + 1):
        order = ["cnnbench", "pytorch"] if r % 2 else ["pytorch", "cnnbench"]
        for side in order:
            got = run_cnnbench(args) if side == "cnnbench" else run_reference(args)
            sides[side].append(got)
            print(f"round {r} {side:9}: matrix product {mm_flops / got['matmul_s'] / 1e9:7.1f} GFLOP/s, "
                  f"3x3 convolution {conv_flops / got['conv_s'] / 1e9:7.1f} GFLOP/s", flush=True)
    ok = True
    for key, name, f in [("matmul_s", "matrix product", mm_flops), ("conv_s", "3x3 convolution", conv_flops)]:
        ours = statistics.median(g[key] for g in sides["cnnbench"])
        theirs = statistics.median(g[key] for g in sides["pytorch"])
        ratio = ours / theirs
        within = abs(ratio - 1.0) <= args.tolerance
        ok &= within
        print(f"{name}: cnnbench {f / ours / 1e9:.1f} GFLOP/s, PyTorch {f / theirs / 1e9:.1f} GFLOP/s, "
              f"time ratio {ratio:.3f} ({'within' if within else 'OUTSIDE'} ±{args.tolerance:.0%})")
    best = {name: f / statistics.median(g[key] for g in sides["pytorch"])
            for key, name, f in [("matmul_s", "matrix product", mm_flops), ("conv_s", "3x3 convolution", conv_flops)]}
    fastest = max(best, key=best.get)
    print(f"faster primitive in PyTorch: {fastest} ({best[fastest] / 1e9:.1f} GFLOP/s): "
          f"what \"% of peak\" is measured against")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
