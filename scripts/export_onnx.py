#!/usr/bin/env python3
"""Exports small ONNX fixtures for cnnbench's importer tests.

For each network, both of PyTorch's exporters are used: the TorchScript-based one
(`dynamo=False`) and the default torch.export-based one, which emit different operators.
Models are exported in eval mode (batch norm may be folded into the convolutions), then
large float initializers are stripped of their values (dims kept) so the fixtures stay
small: the importer needs shapes, not weights. Beside each file, `<name>.expected.json`
records what the importer must find, computed here from the ONNX graph itself:
parameters (each use of an initializer by Conv/Gemm/MatMul(+Add bias)/BatchNormalization
scale and bias) and the torchvision reference MACs where the network is a torchvision model.

A second set keeps its weights (`OUT_DIR/../onnx-weights`): a tiny network (conv, batch
norm, ReLU, pooling, flatten, linear and a MatMul + Add layer; a few hundred parameters)
exported three ways: TorchScript in eval mode (batch norm folded into the convolution),
TorchScript preserving the batch norm, and torch.export (which also folds it). Beside
each, `<name>.expected-weights.json` records, per tensor the importer must keep (keyed
`<node>.<tensor>` as the importer names them: the ONNX node name without its leading
`/`), the shape, the sum, the sum of magnitudes and the first three values, computed
from the PyTorch module in PyTorch's layout (the folded convolution from
torch.nn.utils.fusion.fuse_conv_bn_eval, the MatMul layer's matrix transposed to
Linear's [out, in]), never from the ONNX file's values.

Setup: pip install torch==2.11.0 torchvision onnx onnxscript
Usage: python3 scripts/export_onnx.py [--only-weights] [OUT_DIR]
       (default OUT_DIR crates/import/tests/fixtures/onnx; --only-weights: just the
       fixtures with weights)
"""
import json
import math
import os
import sys

import onnx
import torch
import torch.nn as nn
import torchvision

ARGS = [a for a in sys.argv[1:] if a != "--only-weights"]
ONLY_WEIGHTS = "--only-weights" in sys.argv[1:]
OUT = ARGS[0] if ARGS else os.path.join(
    os.path.dirname(__file__), "..", "crates", "import", "tests", "fixtures", "onnx")
WEIGHTS_OUT = os.path.join(OUT, "..", "onnx-weights")


class EveryOp(nn.Module):
    """A tiny network using the operators PyTorch exports that the importer maps
    (PyTorch exports local_response_norm as a decomposition, not as ONNX LRN)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=1, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4, bias=False)
        self.se_reduce = nn.Conv2d(8, 4, 1)
        self.se_expand = nn.Conv2d(4, 8, 1)
        self.branch = nn.Conv2d(8, 8, 1)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avg = nn.AvgPool2d(3, 1, padding=1, count_include_pad=False)
        self.fc = nn.Linear(16, 12)
        self.drop = nn.Dropout(0.2)
        self.w = nn.Parameter(torch.randn(12, 10))
        self.b = nn.Parameter(torch.randn(10))

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = nn.functional.relu6(self.grouped(x))
        gate = nn.functional.hardsigmoid(self.se_expand(torch.relu(self.se_reduce(x.mean((2, 3), keepdim=True)))))
        x = x * gate
        x = nn.functional.hardswish(x) + torch.sigmoid(self.branch(x))
        x = self.avg(self.pool(x))
        x = torch.cat([x, x], 1)
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        x = x.view(x.size(0), -1)
        x = self.drop(torch.relu(self.fc(x)))
        return torch.softmax(torch.matmul(x, self.w) + self.b, dim=1)


TORCHVISION = {
    # name: (constructor, reference MACs at 224 from torchvision's own counts)
    "resnet18": (torchvision.models.resnet18, 1_814_073_344),
    "mobilenet_v3_large": (torchvision.models.mobilenet_v3_large, 216_589_760),
    "squeezenet1_0": (torchvision.models.squeezenet1_0, 818_924_576),
    "alexnet": (torchvision.models.alexnet, 714_188_480),
}


def file_params(model: onnx.ModelProto) -> int:
    g = model.graph
    sizes = {t.name: int(math.prod(t.dims)) for t in g.initializer}
    # Exporters share identical initializers through Identity nodes: each use counts.
    for n in g.node:
        if n.op_type == "Identity" and n.input[0] in sizes:
            sizes[n.output[0]] = sizes[n.input[0]]
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    total = 0
    for n in g.node:
        ins = [i for i in n.input if i]
        if n.op_type == "Conv":
            total += sum(sizes.get(i, 0) for i in ins[1:])
        elif n.op_type == "Gemm":
            total += sum(sizes.get(i, 0) for i in ins[1:])
        elif n.op_type == "BatchNormalization":
            total += sum(sizes.get(i, 0) for i in ins[1:3])
        elif n.op_type == "MatMul" and ins[1] in sizes:
            total += sizes[ins[1]]
            after = readers.get(n.output[0], [])
            if len(after) == 1 and after[0].op_type == "Add":
                other = [i for i in after[0].input if i != n.output[0]]
                if other and other[0] in sizes:
                    total += sizes[other[0]]
    return total


def strip(model: onnx.ModelProto) -> None:
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type == onnx.TensorProto.FLOAT and n > 16:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("external_data")
            t.data_location = onnx.TensorProto.DEFAULT


def export(name, module, size, macs, dynamo):
    module.eval()
    x = torch.randn(1, 3, size, size)
    tag = "dynamo" if dynamo else "torchscript"
    path = os.path.join(OUT, f"{name}.{tag}.onnx")
    tmp = path + ".full"
    if dynamo:
        torch.onnx.export(module, (x,), tmp, dynamo=True, external_data=False)
    else:
        torch.onnx.export(module, (x,), tmp, dynamo=False, opset_version=17)
    model = onnx.load(tmp)
    os.remove(tmp)
    if os.path.exists(tmp + ".data"):
        os.remove(tmp + ".data")
    expected = {"params": file_params(model), "input": [3, size, size]}
    if macs is not None:
        expected["macs"] = macs
    strip(model)
    onnx.save(model, path)
    ops = sorted({n.op_type for n in model.graph.node})
    with open(os.path.join(OUT, f"{name}.{tag}.expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    print(f"{path}: {os.path.getsize(path)} bytes, params {expected['params']}, ops {' '.join(ops)}")


class TinyWeights(nn.Module):
    """A few hundred parameters: conv + batch norm + ReLU + max pool + flatten + linear,
    then a bare matrix product plus a bias, which the exporters emit as MatMul + Add."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64, 6)
        self.w = nn.Parameter(torch.randn(6, 5))  # [in, out], as MatMul takes it
        self.b = nn.Parameter(torch.randn(5))
        with torch.no_grad():
            # Not the identity batch norm, so that folding it changes the convolution.
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc(x))
        return torch.matmul(x, self.w) + self.b


def importer_names(model: onnx.ModelProto) -> list:
    """The node names cnnbench's importer gives: the ONNX name without leading `/`, or
    `<op>_<index>` when empty; a repeated name (or "input") gets `#<index>`."""
    names, used = [], set()
    for index, n in enumerate(model.graph.node):
        name = n.name.lstrip("/") if n.name else f"{n.op_type}_{index}"
        if name == "input" or name in used:
            name = f"{name}#{index}"
        used.add(name)
        names.append(name)
    return names


def summary(t: torch.Tensor) -> dict:
    t = t.detach().to(torch.float64).contiguous()
    flat = t.flatten()
    return {
        "shape": list(t.shape),
        "sum": flat.sum().item(),
        "abs_sum": flat.abs().sum().item(),
        "first": flat[:3].tolist(),
    }


def export_with_weights(module: TinyWeights, size: int, tag: str) -> None:
    module.eval()
    x = torch.randn(1, 3, size, size)
    path = os.path.join(WEIGHTS_OUT, f"tiny.{tag}.onnx")
    if tag == "dynamo":
        torch.onnx.export(module, (x,), path, dynamo=True, external_data=False)
    elif tag == "torchscript":
        torch.onnx.export(module, (x,), path, dynamo=False, opset_version=17)
    else:  # torchscript-bn: no eval-mode folding, so the batch norm stays a node
        torch.onnx.export(module, (x,), path, dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    model = onnx.load(path)
    names = importer_names(model)
    nodes = list(zip(model.graph.node, names))
    folded = not any(n.op_type == "BatchNormalization" for n in model.graph.node)
    # What each lowered layer holds, from the PyTorch module, in PyTorch's layout.
    if folded:
        conv = torch.nn.utils.fusion.fuse_conv_bn_eval(module.conv, module.bn)
        convs = [{"weight": conv.weight, "bias": conv.bias}]
        bns = []
    else:
        convs = [{"weight": module.conv.weight, "bias": module.conv.bias}]
        bns = [{"weight": module.bn.weight, "bias": module.bn.bias,
                "running_mean": module.bn.running_mean, "running_var": module.bn.running_var}]
    linears = [{"weight": module.fc.weight, "bias": module.fc.bias},
               {"weight": module.w.t(), "bias": module.b}]
    by_op = {"Conv": convs, "BatchNormalization": bns, "Gemm": linears, "MatMul": linears}
    order = {"Conv": "conv", "BatchNormalization": "bn", "Gemm": "linear", "MatMul": "linear"}
    taken = {"conv": 0, "bn": 0, "linear": 0}
    expected = {}
    for n, name in nodes:
        if n.op_type not in by_op:
            continue
        kind = order[n.op_type]
        layer = by_op[n.op_type][taken[kind]]
        taken[kind] += 1
        for tensor, value in layer.items():
            expected[f"{name}.{tensor}"] = summary(value)
    assert taken == {"conv": 1, "bn": len(bns), "linear": 2}, (tag, taken)
    out = {"input": [3, size, size], "complete": True, "folded_batch_norm": folded,
           "tensors": expected}
    with open(os.path.join(WEIGHTS_OUT, f"tiny.{tag}.expected-weights.json"), "w") as f:
        json.dump(out, f, indent=1)
    ops = " ".join(n.op_type for n in model.graph.node)
    print(f"{path}: {os.path.getsize(path)} bytes, {len(expected)} tensors, ops {ops}")


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(WEIGHTS_OUT, exist_ok=True)
    if not ONLY_WEIGHTS:
        torch.manual_seed(0)
        for dynamo in (False, True):
            export("everyop", EveryOp(), 16, None, dynamo)
            for name, (ctor, macs) in TORCHVISION.items():
                export(name, ctor(weights=None), 224, macs, dynamo)
    torch.manual_seed(0)
    tiny = TinyWeights()
    for tag in ("torchscript", "torchscript-bn", "dynamo"):
        export_with_weights(tiny, 8, tag)


if __name__ == "__main__":
    main()
