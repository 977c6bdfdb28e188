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

Setup: pip install torch==2.11.0 torchvision onnx onnxscript
Usage: python3 scripts/export_onnx.py [OUT_DIR]   (default crates/import/tests/fixtures/onnx)
"""
import json
import math
import os
import sys

import onnx
import torch
import torch.nn as nn
import torchvision

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "crates", "import", "tests", "fixtures", "onnx")


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


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    for dynamo in (False, True):
        export("everyop", EveryOp(), 16, None, dynamo)
        for name, (ctor, macs) in TORCHVISION.items():
            export(name, ctor(weights=None), 224, macs, dynamo)


if __name__ == "__main__":
    main()
