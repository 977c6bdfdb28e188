#!/usr/bin/env python3
"""Times torchvision's version of zoo models with PyTorch, by the original suite's method,
as an independent check of `cnnbench run` on the same machine.

Method (the same as cnnbench's `train` mode): model in training mode; per pass a fresh
random input (untimed), forward timed, a random upstream gradient of the output's shape
(untimed), backward timed (`output.backward(grad)`), warm-up passes dropped. On the CPU
PyTorch runs synchronously; on CUDA the script synchronises around each timed region.
Prints the same columns as `cnnbench run` (median ± sample standard deviation).

The heap: `--allocator keep` (the default, as in cnnbench) sets glibc's malloc the way
cnnbench sets its own (mmap threshold 1 GiB, trimming off) before torch is imported, so
both processes reuse freed memory alike; `--allocator system` leaves glibc's defaults
(compare with `cnnbench --allocator system`).

Setup: pip install torch==2.11.0 torchvision
Usage: python3 scripts/pytorch_reference.py resnet50 [MODELS…] [--batch-size 16]
       [--passes 10] [--warmup 1] [--image-size 224] [--threads N] [--device cpu|cuda]
       [--allocator keep|system]
"""
import argparse
import ctypes
import ctypes.util
import json
import statistics
import sys
import time


def set_heap_policy(policy):
    """cnnbench's `--allocator keep` for this process: glibc's M_MMAP_THRESHOLD (-3) at
    1 GiB and M_TRIM_THRESHOLD (-1) at -1 (never trim). Returns the policy in words."""
    if policy != "keep":
        return "system"
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallopt"):
        return "system (no glibc mallopt here)"
    if libc.mallopt(-3, 1 << 30) != 1 or libc.mallopt(-1, -1) != 1:
        sys.exit("glibc refused the heap settings; run with --allocator system")
    return "keep"


# Before torch is imported, as cnnbench sets its heap first thing.
_early = argparse.ArgumentParser(add_help=False)
_early.add_argument("--allocator", choices=("keep", "system"), default="keep")
HEAP = set_heap_policy(_early.parse_known_args()[0].allocator)

import torch  # noqa: E402
import torchvision  # noqa: E402
from torchvision.models.resnet import Bottleneck, ResNet  # noqa: E402

def alexnet_bvlc():
    """The original suite's Caffe AlexNet (grouped convolutions, LRN, ceil-mode pooling)."""
    nn = torch.nn
    lrn = lambda: nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)
    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4), nn.ReLU(), lrn(), pool(),
        nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(), lrn(), pool(),
        nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(), pool(),
        nn.Flatten(),
        nn.Linear(9216, 4096), nn.ReLU(), nn.Dropout(),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(),
        nn.Linear(4096, 1000),
    )


# Zoo names → torchvision constructors (alexnet-bvlc written out above).
MODELS = {
    "alexnet-bvlc": alexnet_bvlc,
    "alexnet": torchvision.models.alexnet,
    "inception-v1": lambda: torchvision.models.googlenet(aux_logits=False, init_weights=True),
    "vgg16": torchvision.models.vgg16,
    "vgg19": torchvision.models.vgg19,
    "resnet18": torchvision.models.resnet18,
    "resnet34": torchvision.models.resnet34,
    "resnet50": torchvision.models.resnet50,
    "resnet101": torchvision.models.resnet101,
    "resnet152": torchvision.models.resnet152,
    "resnet200": lambda: ResNet(Bottleneck, [3, 24, 36, 3]),
    "mobilenet-v2": torchvision.models.mobilenet_v2,
    "efficientnet-b0": torchvision.models.efficientnet_b0,
    "convnext-tiny": torchvision.models.convnext_tiny,
    "densenet121": torchvision.models.densenet121,
}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(name, args, device):
    model = MODELS[name]().to(device).train()
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    shape = (args.batch_size, 3, args.image_size, args.image_size)
    forward, backward = [], []
    for i in range(args.warmup + args.passes):
        x = torch.randn(shape, device=device)
        sync(device)
        t0 = time.perf_counter()
        out = model(x)
        sync(device)
        t1 = time.perf_counter()
        grad = torch.randn_like(out)
        sync(device)
        t2 = time.perf_counter()
        out.backward(grad)
        sync(device)
        t3 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        if i >= args.warmup:
            forward.append(t1 - t0)
            backward.append(t3 - t2)
    total = [f + b for f, b in zip(forward, backward)]
    return params, forward, backward, total


def ms(samples):
    med = statistics.median(samples) * 1e3
    std = statistics.stdev(samples) * 1e3 if len(samples) > 1 else 0.0
    return f"{med:.2f} ± {std:.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", choices=sorted(MODELS))
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--passes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--allocator", choices=("keep", "system"), default="keep",
                   help="keep freed memory for reuse, as cnnbench does by default, or glibc's defaults (set before torch is imported)")
    p.add_argument("--json", action="store_true", help="one JSON line per model with the raw samples (seconds)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, torchvision {torchvision.__version__}, {torch.get_num_threads()} threads, device {device}, allocator {HEAP}", file=sys.stderr)
    if not args.json:
        print("|Model|Engine|Batch|Forward (ms)|Backward (ms)|Total (ms)|Images/s|")
        print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.models:
        params, f, b, t = bench(name, args, device)
        if args.json:
            print(json.dumps({"model": name, "pytorch": torch.__version__, "threads": torch.get_num_threads(), "allocator": HEAP,
                              "batch_size": args.batch_size, "params": params,
                              "forward": f, "backward": b, "total": t}), flush=True)
            continue
        images = args.batch_size / statistics.median(t)
        print(f"|{name} ({args.image_size}×{args.image_size})|pytorch {torch.__version__}|{args.batch_size}|{ms(f)}|{ms(b)}|{ms(t)}|{images:.1f}|", flush=True)


if __name__ == "__main__":
    main()
