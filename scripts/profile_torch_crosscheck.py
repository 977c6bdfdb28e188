#!/usr/bin/env python3
"""Cross-checks `cnnbench profile --engine torch-cpu` against PyTorch's own profiler.

PyTorch side: torchvision's model in training mode, a fresh random batch per pass,
forward then backward from a random upstream gradient (cnnbench's train mode), WARMUP
passes dropped, then PASSES passes under torch.profiler (CPU activities). Every op's
*self* CPU time (children excluded, so nothing counts twice) is summed into coarse op
types by its name: conv, batch norm, activation, pooling, linear, elementwise, other.

cnnbench side: `cnnbench profile MODEL --engine torch-cpu --json` (each node benchmarked
alone; see docs/src/profile.md), its nodes' forward+backward medians summed into the
same op types.

Prints both shares side by side, the difference in percentage points and the largest
difference among op types that hold at least 5% of the time on either side. Exit status 1
when that difference exceeds --tolerance points.

Setup: pip install torch==2.11.0 torchvision; build cnnbench with --features torch.
Usage: python3 scripts/profile_torch_crosscheck.py [--model resnet50] [--batch-size 16]
       [--image-size 224] [--passes 5] [--warmup 1] [--threads N]
       [--bin target/release/cnnbench] [--profile FILE] [--tolerance 5]
--profile reads a profile written earlier instead of running cnnbench.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GROUPS = ["conv", "batch norm", "activation", "pooling", "linear", "elementwise", "other"]


def torch_group(name):
    """The op type of a profiler event, from its name (aten ops and autograd nodes)."""
    n = name.lower()
    if "conv" in n:
        return "conv"
    if "batch_norm" in n or "batchnorm" in n:
        return "batch norm"
    if "relu" in n or "threshold" in n or "sigmoid" in n or "hardswish" in n or "silu" in n:
        return "activation"
    if "pool" in n:
        return "pooling"
    if "addmm" in n or "linear" in n or n in ("aten::mm", "aten::matmul") or "mmbackward" in n:
        return "linear"
    if "add" in n or "mul" in n:
        return "elementwise"
    return "other"


def cnnbench_group(node):
    op = node["op"]
    if op == "conv2d":
        return "conv"
    if op == "batch_norm2d":
        return "batch norm"
    if op in ("relu", "relu6", "sigmoid", "hardswish", "hardsigmoid", "silu", "gelu"):
        return "activation"
    if "pool" in op:
        return "pooling"
    if op == "linear":
        return "linear"
    if op in ("add", "mul", "layer_scale"):
        return "elementwise"
    return "other"


def torch_shares(args):
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)()
    model.train()
    shape = (args.batch_size, 3, args.image_size, args.image_size)

    def one_pass():
        x = torch.randn(shape)
        out = model(x)
        out.backward(torch.randn_like(out))
        model.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        one_pass()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.passes):
            one_pass()
    totals = {g: 0.0 for g in GROUPS}
    for event in prof.key_averages():
        # Input and gradient making is untimed in cnnbench; leave it out here too.
        if event.key in ("aten::randn", "aten::randn_like", "aten::normal_"):
            continue
        totals[torch_group(event.key)] += event.self_cpu_time_total  # µs over all passes
    whole = sum(totals.values())
    return {g: t / whole for g, t in totals.items()}, whole / args.passes / 1e3, torch.__version__


def cnnbench_profile(args):
    if args.profile:
        with open(args.profile) as f:
            return json.load(f)
    cmd = [args.bin, "profile", args.model, "--engine", "torch-cpu", "-b", str(args.batch_size),
           "--image-size", str(args.image_size), "--passes", str(args.passes),
           "--warmup", str(args.warmup), "-q", "--json"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    result = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def cnnbench_shares(doc):
    totals = {g: 0.0 for g in GROUPS}
    for node in doc["nodes"]:
        t = node["forward"]["median"] + (node.get("backward") or {}).get("median", 0.0)
        totals[cnnbench_group(node)] += t
    whole = sum(totals.values())
    return {g: t / whole for g, t in totals.items()}, whole * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tolerance", type=float, default=5.0, help="percentage points")
    p.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "cnnbench"))
    p.add_argument("--profile", default=None, help="a cnnbench profile JSON to use instead of running one")
    args = p.parse_args()

    doc = cnnbench_profile(args)
    ours, ours_ms = cnnbench_shares(doc)
    theirs, theirs_ms, version = torch_shares(args)
    print(f"{args.model}, batch {args.batch_size}, {args.image_size}x{args.image_size}, train "
          f"(forward + backward), {args.passes} passes; torch {version}")
    print(f"{'op type':<12} {'torch.profiler':>15} {'cnnbench':>10} {'difference':>11}")
    largest = (0.0, None)
    for g in GROUPS:
        a, b = theirs[g] * 100, ours[g] * 100
        diff = b - a
        print(f"{g:<12} {a:>14.1f}% {b:>9.1f}% {diff:>+10.1f}")
        if max(a, b) >= 5.0 and abs(diff) > abs(largest[0]):
            largest = (diff, g)
    print(f"per pass: torch.profiler's self times sum to {theirs_ms:.1f} ms (profiler overhead "
          f"included); cnnbench's nodes sum to {ours_ms:.1f} ms, end to end "
          f"{doc['end_to_end']['total']['median'] * 1e3:.1f} ms")
    diff, group = largest
    if group is None:
        print("no op type holds 5% of the time on either side")
        return 0
    verdict = "within" if abs(diff) <= args.tolerance else "OUTSIDE"
    print(f"largest difference among op types with at least 5% of the time: {group}, "
          f"{diff:+.1f} points ({verdict} ±{args.tolerance:g})")
    return 0 if abs(diff) <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
