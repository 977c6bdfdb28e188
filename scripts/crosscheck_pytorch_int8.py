#!/usr/bin/env python3
"""Cross-checks cnnbench's pytorch-compile int8 against PyTorch's own int8, interleaved.

Runs ROUNDS rounds of
  A: `cnnbench run MODEL --engine pytorch-compile --freezing --precision int8 --mode infer`
     (cnnbench's Graph in its worker, quantised there by torchao's PT2E) and
  B: this script's reference side: torchvision's MODEL, random weights, quantised the way
     PyTorch documents int8 for x86 CPUs: `torch.export.export(strict=True)` with a
     dynamic batch, `prepare_pt2e` with `X86InductorQuantizer`'s default recipe, its
     observers run on CALIBRATION random images one at a time, `convert_pt2e`, then
     `torch.compile` with inductor's freezing on,
in A-B-B-A order, each in a fresh process (odd rounds A then B, even rounds B then A).
Both sides: the same batch, image size and threads, the same heap policy (cnnbench's
`keep`, which pytorch_reference.py sets before torch is imported), a fresh
standard-normal input per pass (untimed), one inference timed per pass under
torch.no_grad, the compile and warm-up passes dropped. Prints each round's ratio of
medians and the pooled ratio, and whether cnnbench is within ±TOLERANCE. Side B also
counts the heavy oneDNN primitives that ran on int8 sources in one pass
(ONEDNN_VERBOSE), which side A records as engine.settings.int8_layer_share.

Setup: pip install torch==2.11.0 torchao==0.18.0 torchvision==0.26.0 (e.g. into
       .venv-torch, which the pytorch engines find); cnnbench's default build.
Usage: .venv-torch/bin/python scripts/crosscheck_pytorch_int8.py [--model resnet50]
       [--image-size 224] [--batch-size 1] [--threads N] [--rounds 4] [--passes 20]
       [--warmup 3] [--calibration 8] [--tolerance 0.05] [--bin target/release/cnnbench]
       [--out DIR]
Exit status 1 when the pooled ratio is outside the tolerance.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import crosscheck_stack

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = "pytorch-compile"


def arguments():
    p = crosscheck_stack.parser(__doc__, 0.05, precisions=("int8",))
    p.set_defaults(precision="int8")
    p.add_argument("--calibration", type=int, default=8, help="calibration images, as `run --calibration`")
    return p.parse_args()


def reference(args):
    """B: PyTorch's own int8 of torchvision's model; prints one JSON line."""
    sys.path.insert(0, HERE)
    import pytorch_reference  # sets the heap policy, then imports torch and torchvision
    torch = pytorch_reference.torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = pytorch_reference.MODELS[args.model]().eval()
    shape = [3, args.image_size, args.image_size]
    with torch.no_grad():
        exported = torch.export.export(model, (torch.randn([2] + shape),),
                                       dynamic_shapes=({0: torch.export.Dim("batch", min=1)},),
                                       strict=True).module()
        quantizer = x86.X86InductorQuantizer()
        quantizer.set_global(x86.get_default_x86_inductor_quantization_config())
        prepared = prepare_pt2e(exported, quantizer)
        for _ in range(args.calibration):
            prepared(torch.randn([1] + shape))
        converted = convert_pt2e(prepared)
        torch._inductor.config.freezing = True
        compiled = torch.compile(converted)
        start = time.perf_counter()
        compiled(torch.randn([args.batch_size] + shape))
        compile_s = time.perf_counter() - start
        samples = []
        for i in range(args.warmup + args.passes):
            x = torch.randn([args.batch_size] + shape)  # untimed
            start = time.perf_counter()
            compiled(x)
            elapsed = time.perf_counter() - start
            if i >= args.warmup:
                samples.append(elapsed)
        int8, heavy = onednn_int8_share(torch, compiled, [args.batch_size] + shape)
    print(json.dumps({"forward": samples, "compile_s": compile_s, "torch": torch.__version__,
                      "heap": pytorch_reference.HEAP, "int8_primitives": int8, "heavy_primitives": heavy}))


def onednn_int8_share(torch, compiled, shape):
    """One more pass with oneDNN's verbose lines caught from stdout: the heavy primitives
    (convolution, inner product, matmul) on int8 sources, and all of them."""
    import ctypes
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 1)
        try:
            torch._C._verbose.mkldnn_set_verbose(1)
            compiled(torch.randn(shape))
            torch._C._verbose.mkldnn_set_verbose(0)
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        caught.seek(0)
        lines = caught.read().decode("utf-8", "replace").splitlines()
    int8 = heavy = 0
    for line in lines:
        fields = line.split(",")
        if len(fields) > 8 and fields[2:4] == ["primitive", "exec"] and fields[5] in ("convolution", "inner_product", "matmul"):
            heavy += 1
            source = next((d[4:].split(":")[0] for d in fields[8].split() if d.startswith("src:")), "")
            int8 += source in ("u8", "s8")
    return int8, heavy


def main():
    args = arguments()
    if args.reference:
        return reference(args)
    out = args.out or tempfile.mkdtemp(prefix="crosscheck-pytorch-int8-")
    os.makedirs(out, exist_ok=True)
    common = ["--passes", str(args.passes), "--warmup", str(args.warmup), "--seed", str(args.seed)]
    size = ["--image-size", str(args.image_size)]

    def run_cnnbench(round_):
        cmd = [args.bin, "run", args.model, "--engine", ENGINE, "--freezing", "--precision", "int8",
               "--mode", "infer", "-b", str(args.batch_size), "--threads", str(args.threads),
               "--calibration", str(args.calibration), *size, *common, "-q", "--json",
               "-o", os.path.join(out, f"round{round_}")]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        result = json.loads(r.stdout)
        return result["samples"]["forward"], result["engine"]["settings"]

    def run_reference(_round):
        cmd = [sys.executable, os.path.abspath(__file__), "--reference", "--model", args.model,
               "--batch-size", str(args.batch_size), "--threads", str(args.threads),
               "--calibration", str(args.calibration), *size, *common]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        result = json.loads(r.stdout.strip().splitlines()[-1])
        return result["forward"], result

    samples = {ENGINE: [], "python": []}
    said = {}
    per_round = []
    for round_ in range(1, args.rounds + 1):
        order = [(ENGINE, run_cnnbench), ("python", run_reference)]
        if round_ % 2 == 0:
            order.reverse()
        this = {}
        for name, run in order:
            this[name], said[name] = run(round_)
            samples[name] += this[name]
        ratio = statistics.median(this[ENGINE]) / statistics.median(this["python"])
        per_round.append((" then ".join(n for n, _ in order), ratio))
        print(f"round {round_}/{args.rounds} ({per_round[-1][0]}): {ENGINE} / Python {ratio:.3f}",
              file=sys.stderr, flush=True)

    b = said["python"]
    header = (f"PT2E with X86InductorQuantizer, freezing, {args.calibration} calibration images;"
              f" torch {b['torch']}, heap {b['heap']}")
    status = crosscheck_stack.report(args, ENGINE, "PyTorch's own PT2E int8 of torchvision's model", header,
                                     samples, per_round, out)
    print(f"in int8: cnnbench recorded {said[ENGINE].get('int8_layer_share', 'no share')} of its heavy layers;"
          f" PyTorch's own ran {b['int8_primitives']} of {b['heavy_primitives']} heavy oneDNN primitives on int8"
          " sources")
    return status


if __name__ == "__main__":
    sys.exit(main())
