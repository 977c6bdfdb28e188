#!/usr/bin/env python3
"""Where torch-cpu and PyTorch spend their CPU time, per pass, kernel group by kernel group.

The wall-clock cross-check (crosscheck_torch.py) compares medians, which a busy or
noisy machine moves by several per cent. This script asks a question the machine's load
barely changes: does `cnnbench run MODEL --engine torch-cpu` do the same work as
PyTorch (scripts/pytorch_reference.py), kernel for kernel? It samples both processes
with `perf record -e cpu-clock` (a software event: works in VMs without hardware
counters) and counts page faults with `perf stat`, each at 1 and at 1+PASSES passes,
and subtracts, so start-up (Python's imports, model construction) drops out and what
remains is the cost of PASSES training passes (forward + backward). It prints CPU
milliseconds per pass for each group of kernels (oneDNN convolutions, batch norm,
elementwise, OpenMP's spinning and barriers, the kernel's page-fault handling, the
Python interpreter, the rest) for both, and their ratio.

Reading it: equal compute groups and equal page faults with a wall-clock gap mean the
gap is not extra work (scheduling, frequency, noise); a compute group larger on one
side names the op that differs.

Setup: pip install torch==2.11.0 torchvision; build cnnbench with --features torch;
       `perf` (Debian: linux-perf) with perf_event_paranoid <= 2 or root.
Usage: python3 scripts/crosscheck_torch_cpu_time.py [--model resnet50] [--passes 4]
       [--batch-size 16] [--bin target/release/cnnbench]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
FREQUENCY = 1000  # samples per CPU second: one sample ≈ 1 ms of CPU time

# (group, test on "dso symbol"); the first that matches wins.
GROUPS = [
    ("convolution (oneDNN JIT)", lambda dso, sym: dso.startswith("[JIT]") or "dnnl" in sym),
    ("batch norm", lambda dso, sym: "batch_norm" in sym),
    ("max pool", lambda dso, sym: "max_pool" in sym),
    ("gemm (linear)", lambda dso, sym: "gemm" in sym.lower() or "sgemm" in sym),
    ("elementwise / copies", lambda dso, sym: "VectorizedLoop" in sym or "direct_copy" in sym
     or "add_kernel" in sym or "threshold" in sym or "mul_kernel" in sym),
    ("random inputs", lambda dso, sym: "normal_kernel" in sym or "uniform" in sym),
    ("OpenMP (spin, barriers)", lambda dso, sym: "libgomp" in dso),
    ("kernel (page faults, scheduling)", lambda dso, sym: dso == "[kernel.kallsyms]"),
    ("Python interpreter", lambda dso, sym: "libpython" in dso),
    ("allocator (libc)", lambda dso, sym: dso.startswith("libc.so")),
]


def group_of(dso, sym):
    for name, test in GROUPS:
        if test(dso, sym):
            return name
    return "other"


def perf_samples(cmd, workdir):
    """CPU samples per kernel group and page faults of one run of `cmd`."""
    data = os.path.join(workdir, "perf.data")
    stat = os.path.join(workdir, "stat.txt")
    subprocess.run(["perf", "stat", "-e", "page-faults", "-x", ",", "-o", stat,
                    "perf", "record", "-q", "-e", "cpu-clock", "-F", str(FREQUENCY), "-o", data,
                    "--"] + cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = subprocess.run(["perf", "report", "-i", data, "--stdio", "-n", "--sort", "dso,sym"],
                            check=True, capture_output=True, text=True).stdout
    groups = defaultdict(int)
    line_re = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+(?: tid \d+)?)\s+\[[.k]\]\s+(.*)$")
    for line in report.splitlines():
        m = line_re.match(line)
        if m:
            groups[group_of(m.group(2), m.group(3))] += int(m.group(1))
    faults = 0
    for line in open(stat):
        if line.strip().endswith("page-faults,,") or ",page-faults," in line:
            faults = int(line.split(",")[0])
    return groups, faults


def per_pass(cmd_for, passes, workdir):
    """(samples per group, page faults), per pass: runs at 1 and 1+passes passes."""
    short, short_faults = perf_samples(cmd_for(1), workdir)
    long, long_faults = perf_samples(cmd_for(1 + passes), workdir)
    groups = {g: (long.get(g, 0) - short.get(g, 0)) / passes for g in set(short) | set(long)}
    return groups, (long_faults - short_faults) / passes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--passes", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "cnnbench"))
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="cpu-time-")
    results = os.path.join(workdir, "results")

    def cnnbench(passes):
        return [args.bin, "run", args.model, "--engine", "torch-cpu", "-b", str(args.batch_size),
                "--passes", str(passes), "--warmup", "0", "-q", "-o", results]

    def pytorch(passes):
        return [sys.executable, os.path.join(HERE, "pytorch_reference.py"), args.model, "--json",
                "--batch-size", str(args.batch_size), "--passes", str(passes), "--warmup", "0"]

    ours, our_faults = per_pass(cnnbench, args.passes, workdir)
    theirs, their_faults = per_pass(pytorch, args.passes, workdir)
    ms = 1000 / FREQUENCY
    print(f"{args.model}, batch {args.batch_size}, train mode: CPU time per pass "
          f"(from {args.passes} passes minus start-up; perf cpu-clock at {FREQUENCY} Hz)\n")
    print("|Kernel group|torch-cpu (ms)|PyTorch (ms)|ratio|")
    print("|---|---:|---:|---:|")
    names = [g for g, _ in GROUPS] + ["other"]
    for g in names:
        a, b = ours.get(g, 0) * ms, theirs.get(g, 0) * ms
        if a == 0 and b == 0:
            continue
        ratio = f"{a / b:.3f}" if b > 0 else "–"
        print(f"|{g}|{a:.0f}|{b:.0f}|{ratio}|")
    a, b = sum(ours.values()) * ms, sum(theirs.values()) * ms
    print(f"|**all CPU time**|{a:.0f}|{b:.0f}|{a / b:.3f}|")
    compute = [g for g in names if g not in ("OpenMP (spin, barriers)", "kernel (page faults, scheduling)",
                                            "Python interpreter", "other")]
    a = sum(ours.get(g, 0) for g in compute) * ms
    b = sum(theirs.get(g, 0) for g in compute) * ms
    print(f"|**compute kernels**|{a:.0f}|{b:.0f}|{a / b:.3f}|")
    print(f"|page faults per pass|{our_faults:.0f}|{their_faults:.0f}|{our_faults / their_faults:.3f}|")


if __name__ == "__main__":
    main()
