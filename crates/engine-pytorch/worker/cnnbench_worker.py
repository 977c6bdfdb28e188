"""cnnbench's PyTorch worker: runs cnnbench's Graph in PyTorch itself, eager or
torch.compile'd, on the user's own Python, and answers cnnbench over a pipe.

It imports nothing but `torch` and Python's standard library, because the machines it
runs on may have PyTorch and nothing else; int8 alone, asked for, imports `torchao`
(PyTorch 2.11's PT2E quantisation lives there). cnnbench owns the clock: every call that
computes synchronises its device before it answers, and the worker never times a pass.

The network is built from cnnbench's model file (the Graph's own serialisation), one
small function per op, the way the engine kit's kernels are written, so there is still
one description of every model. Weights are keyed `<node>.<tensor>`, as `verify` keys
them, and drawn as PyTorch's layers draw them (the specs cnnbench sends).

Frames, both ways: one line of JSON, then `bytes` raw bytes when the line says so
(tensors as little-endian f32, in the order the line's `tensors` lists them).
"""

import ctypes
import json
import os
import signal
import sys
import threading
import time
import traceback

PROTOCOL = 1
HEARTBEAT_S = 0.25


def apply_heap_policy(policy):
    """cnnbench's heap policy, set before torch allocates anything (glibc's mallopt):
    whether it is in force, and what was done, in words."""
    if policy != "keep":
        return True, "the C library's defaults"
    try:
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = libc.mallopt(m_mmap_threshold, 1 << 30) == 1
        ok = libc.mallopt(m_trim_threshold, -1) == 1 and ok
    except (OSError, AttributeError) as e:
        return False, "mallopt is not available here (%s)" % e
    return (True, "mmap threshold 1 GiB, trimming off") if ok else (False, "mallopt refused the settings")


def die_with_parent():
    """The worker ends when cnnbench does, even if cnnbench is killed (Linux)."""
    try:
        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class Channel:
    """Frames to cnnbench on the pipe it reads; a lock keeps heartbeats whole."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()

    def send(self, header, payload=b""):
        if payload:
            header["bytes"] = len(payload)
        line = (json.dumps(header) + "\n").encode()
        with self.lock:
            self.out.write(line)
            if payload:
                self.out.write(payload)
            self.out.flush()


def heartbeat(channel):
    # Tells cnnbench the worker is alive while a long call (a compile) runs; a worker
    # stuck with the interpreter locked stops beating, and cnnbench says so.
    while True:
        time.sleep(HEARTBEAT_S)
        try:
            channel.send({"type": "heartbeat"})
        except (OSError, ValueError):
            return


def read_frame(stream):
    line = stream.readline()
    if not line:
        return None, b""
    header = json.loads(line)
    size = int(header.get("bytes", 0))
    payload = stream.read(size) if size else b""
    if len(payload) != size:
        raise EOFError("the frame ended early")
    return header, payload


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    # Ctrl-C reaches the whole process group: cnnbench handles it and ends the worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    heap_applied, heap = apply_heap_policy(args.get("--heap", "system"))
    # The protocol's own copy of stdout; what libraries print goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    channel = Channel(out)
    try:
        import torch  # noqa: F401 (the one package the worker needs)
    except BaseException as e:  # noqa: BLE001 (any failure to import is the answer)
        channel.send({"type": "fatal", "kind": "no-torch", "error": "%s: %s" % (type(e).__name__, e)})
        return 3
    import torch
    # What building a session needs, loaded now: torch.optim brings in dynamo (seconds),
    # which belongs to starting PyTorch, not to preparing one network.
    import torch.nn.functional  # noqa: F401
    import torch.optim  # noqa: F401
    threads = args.get("--threads")
    if threads:
        torch.set_num_threads(int(threads))
    if "--tf32" in args:
        # Strict f32 unless TF32 is asked for (PyTorch allows it in cuDNN by default).
        tf32 = args["--tf32"] == "1"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    if "--cudnn-benchmark" in args:
        torch.backends.cudnn.benchmark = args["--cudnn-benchmark"] == "1"
    channel.send({"type": "hello", "protocol": PROTOCOL, "heap_applied": heap_applied, **describe(torch, heap)})
    threading.Thread(target=heartbeat, args=(channel,), daemon=True).start()
    worker = Worker(torch)
    stream = sys.stdin.buffer
    while True:
        try:
            header, payload = read_frame(stream)
        except (EOFError, ValueError) as e:
            sys.stderr.write("cnnbench worker: unreadable request (%s)\n" % e)
            return 2
        if header is None or header.get("cmd") == "exit":
            return 0
        try:
            reply, tensors = worker.handle(header, payload)
            body = b"".join(host_bytes(t) for _, t in tensors)
            reply["tensors"] = [{"key": k, "shape": list(t.shape)} for k, t in tensors]
            channel.send({"type": "reply", "ok": True, **reply}, body)
        except Exception as e:  # noqa: BLE001 (every failure goes back to cnnbench)
            lines = traceback.format_exc().rstrip().splitlines()
            channel.send({"type": "reply", "ok": False, "error": "%s: %s" % (type(e).__name__, e),
                          "traceback": lines[-12:]})


def describe(torch, heap):
    info = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "heap": heap,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "cuda_available": torch.cuda.is_available(),
        "cuda_devices": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
        "pid": os.getpid(),
    }
    if info["cuda_devices"]:
        props = [torch.cuda.get_device_properties(i) for i in range(info["cuda_devices"])]
        info["cuda_names"] = [p.name for p in props]
        info["cuda_memory"] = [p.total_memory for p in props]
    try:
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        pass
    # Read from its package metadata, not imported: only an int8 session imports it.
    try:
        import importlib.metadata
        info["torchao"] = importlib.metadata.version("torchao")
    except Exception:  # noqa: BLE001 (absent or unreadable: int8 is refused either way)
        info["torchao"] = None
    return info


def host_bytes(t):
    """A tensor's values as little-endian f32 bytes, without numpy."""
    t = t.detach().float().cpu().contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * 4) if t.numel() else b""


def from_payload(torch, specs, payload):
    tensors, offset = [], 0
    for spec in specs:
        shape = [int(d) for d in spec["shape"]]
        n = 1
        for d in shape:
            n *= d
        chunk = bytearray(payload[offset:offset + 4 * n])
        if len(chunk) != 4 * n:
            raise ValueError("tensor %s: the payload is too short" % spec["key"])
        t = torch.frombuffer(chunk, dtype=torch.float32) if n else torch.empty(0)
        tensors.append((spec["key"], t.reshape(shape)))
        offset += 4 * n
    return tensors


# --- The ops: one function each, as the engine kit's kernels. ----------------------------

def pad_of(p):
    """(top, left, bottom, right) from the model file's padding (n, [h, w] or 4 sides)."""
    if isinstance(p, int):
        return p, p, p, p
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return tuple(p)


def hw(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def split_padding(F, x, padding, fill):
    """Pads uneven sides explicitly (with `fill`) and returns what the op pads itself."""
    top, left, bottom, right = pad_of(padding)
    if top == bottom and left == right:
        return x, (top, left)
    return F.pad(x, (left, right, top, bottom), value=fill), (0, 0)


def build_ops(torch):
    F = torch.nn.functional

    def conv2d(node, xs, w, s):
        x, pad = split_padding(F, xs[0], node["padding"], 0.0)
        return F.conv2d(x, w["weight"], w.get("bias"), hw(node["stride"]), pad,
                        hw(node["dilation"]), node["groups"])

    def batch_norm2d(node, xs, w, s):
        return F.batch_norm(xs[0], w["running_mean"], w["running_var"], w.get("weight"),
                            w.get("bias"), s.training, node["momentum"], node["eps"])

    def linear(node, xs, w, s):
        return F.linear(xs[0], w["weight"], w.get("bias"))

    def layer_norm2d(node, xs, w, s):
        x = xs[0].permute(0, 2, 3, 1)
        x = F.layer_norm(x, (node["num_channels"],), w["weight"], w["bias"], node["eps"])
        return x.permute(0, 3, 1, 2)

    def layer_scale(node, xs, w, s):
        return xs[0] * w["scale"].view(1, -1, 1, 1)

    def activation(fn, in_place=None):
        def run(node, xs, w, s):
            if in_place is not None and node["name"] in s.overwrite:
                return in_place(xs[0])
            return fn(xs[0])
        return run

    def local_response_norm(node, xs, w, s):
        return F.local_response_norm(xs[0], node["size"], node["alpha"], node["beta"], node["k"])

    def max_pool2d(node, xs, w, s):
        x, pad = split_padding(F, xs[0], node["padding"], float("-inf"))
        stride = node.get("stride") or node["kernel"]
        return F.max_pool2d(x, hw(node["kernel"]), hw(stride), pad, 1, node["ceil_mode"])

    def avg_pool2d(node, xs, w, s):
        top, left, bottom, right = pad_of(node["padding"])
        if (top != bottom or left != right) and not node["count_include_pad"]:
            raise ValueError("PyTorch cannot average-pool with uneven padding left out of the count")
        x, pad = split_padding(F, xs[0], node["padding"], 0.0)
        stride = node.get("stride") or node["kernel"]
        return F.avg_pool2d(x, hw(node["kernel"]), hw(stride), pad, node["ceil_mode"],
                            node["count_include_pad"])

    def adaptive_avg_pool2d(node, xs, w, s):
        return F.adaptive_avg_pool2d(xs[0], hw(node["output"]))

    def dropout(node, xs, w, s):
        if s.training and s.dropout and node["p"] > 0:
            return F.dropout(xs[0], node["p"], True)
        return xs[0]

    def identity(node, xs, w, s):
        # stochastic depth: recorded in the model, the identity when benchmarking
        return xs[0]

    def flatten(node, xs, w, s):
        return torch.flatten(xs[0], 1)

    def concat(node, xs, w, s):
        return torch.cat(xs, 1)

    def add(node, xs, w, s):
        acc = xs[0]
        for k, x in enumerate(xs[1:]):
            acc = acc.add_(x) if (k > 0 or node["name"] in s.overwrite) else acc + x
        return acc

    def mul(node, xs, w, s):
        return xs[0] * xs[1]

    def channel_shuffle(node, xs, w, s):
        n, c, h, wd = xs[0].shape
        g = node["groups"]
        return xs[0].view(n, g, c // g, h, wd).transpose(1, 2).contiguous().view(n, c, h, wd)

    def slice_channels(node, xs, w, s):
        return xs[0].narrow(1, node["start"], node["end"] - node["start"])

    return {
        "conv2d": conv2d,
        "batch_norm2d": batch_norm2d,
        "linear": linear,
        "layer_norm2d": layer_norm2d,
        "layer_scale": layer_scale,
        "relu": activation(torch.relu, torch.relu_),
        "relu6": activation(F.relu6, lambda x: F.hardtanh_(x, 0.0, 6.0)),
        "silu": activation(F.silu),
        "gelu": activation(F.gelu),
        "hardswish": activation(F.hardswish),
        "hardsigmoid": activation(F.hardsigmoid),
        "sigmoid": activation(torch.sigmoid),
        "local_response_norm": local_response_norm,
        "max_pool2d": max_pool2d,
        "avg_pool2d": avg_pool2d,
        "adaptive_avg_pool2d": adaptive_avg_pool2d,
        "dropout": dropout,
        "stochastic_depth": identity,
        "flatten": flatten,
        "concat": concat,
        "add": add,
        "mul": mul,
        "channel_shuffle": channel_shuffle,
        "slice_channels": slice_channels,
    }


def make_network_class(torch):
    class Network(torch.nn.Module):
        """The Graph as a module: its weights registered, its nodes walked in order, each
        value dropped after its last reader."""

        def __init__(self, model, specs, ops, overwrite):
            super().__init__()
            self.dropout = True
            self.overwrite = set(overwrite)
            self.keep = None
            names = [n["name"] for n in model["nodes"]]
            index = {name: i for i, name in enumerate(names)}
            self.weight_names = []
            per_node = [dict() for _ in names]
            for i, spec in enumerate(specs):
                attr = "w%d" % i
                node, tensor = spec["key"].rsplit(".", 1)
                shape = [int(d) for d in spec["shape"]]
                init = spec["init"]
                if "uniform" in init:
                    value = torch.empty(shape).uniform_(-init["uniform"], init["uniform"])
                else:
                    value = torch.full(shape, float(init["constant"]))
                if spec["trainable"]:
                    self.register_parameter(attr, torch.nn.Parameter(value))
                else:
                    self.register_buffer(attr, value)
                self.weight_names.append((spec["key"], attr, spec["trainable"]))
                per_node[index[node]][tensor] = attr
            last_use = {}
            for i, node in enumerate(model["nodes"]):
                for source in node["inputs"]:
                    last_use[source] = i
            self.steps = []
            for i, node in enumerate(model["nodes"]):
                op = ops.get(node["op"])
                if op is None:
                    raise ValueError("node %r: this worker has no op %r" % (node["name"], node["op"]))
                if node["op"] == "avg_pool2d" and not node["count_include_pad"]:
                    top, left, bottom, right = pad_of(node["padding"])
                    if top != bottom or left != right:
                        raise ValueError("node %r: PyTorch cannot average-pool with uneven padding "
                                         "that is left out of the count" % node["name"])
                frees = [s for s in set(node["inputs"]) if last_use.get(s) == i and s != "input"]
                self.steps.append((node, op, per_node[i], tuple(node["inputs"]), tuple(frees)))
            self.output_name = model.get("output") or names[-1]

        def forward(self, x):
            values = {"input": x}
            for node, op, weights, inputs, frees in self.steps:
                w = {k: getattr(self, attr) for k, attr in weights.items()}
                out = op(node, [values[s] for s in inputs], w, self)
                for name in frees:
                    del values[name]
                values[node["name"]] = out
                if self.keep is not None:
                    self.keep.append((node["name"], out.detach().float().cpu().clone()))
            return values[self.output_name]

    return Network


class Session:
    def __init__(self, torch, Network, ops, request, payload):
        self.torch = torch
        self.mode = request["mode"]
        self.batch = int(request["batch"])
        self.precision = request["precision"]
        self.channels_last = bool(request.get("channels_last"))
        device = request.get("device", "cpu")
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.cuda.set_device(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        torch.manual_seed(int(request["seed"]))
        model = json.loads(request["model"])
        self.input_shape = [self.batch] + list(model["input"])
        self.network = Network(model, request["weights"], ops, request.get("overwrite", []))
        self.network.dropout = not request.get("deterministic", False)
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(self.precision)
        self.model_dtype = dtype or torch.float32
        self.autocast = {"amp-bf16": torch.bfloat16, "amp-f16": torch.float16}.get(self.precision)
        self.network.to(device=self.device, dtype=self.model_dtype)
        if self.channels_last:
            self.network.to(memory_format=torch.channels_last)
        self.training = self.mode != "infer"
        self.network.train(self.training)
        self.params = [p for p in self.network.parameters()]
        self.optimizer = None
        self.scaler = None
        if self.mode == "step":
            self.optimizer = torch.optim.SGD(self.params, lr=request["lr"], momentum=request["momentum"])
            if self.autocast == torch.float16:
                # f16 training needs loss scaling, as torch.amp and timm's --amp do.
                self.scaler = torch.amp.GradScaler(self.device.type)
        self.classes = int(request.get("classes", 1))
        compile_spec = request.get("compile")
        self.compiled = compile_spec is not None
        self.compile_mode = None
        self.run = self.network
        if self.compiled:
            config = torch._inductor.config
            config.freezing = bool(compile_spec.get("freezing"))
            mode = compile_spec.get("mode", "default")
            self.compile_mode = None if mode == "default" else mode
            self.run = torch.compile(self.network, mode=self.compile_mode)
        # int8: quantised (PT2E) from the weights in place when a pass first needs it,
        # and again after new weights are imported.
        self.int8 = self.precision == "int8"
        self.calibration_images = []
        if self.int8:
            if not (self.compiled and config.freezing and self.device.type == "cpu" and self.mode == "infer"):
                raise ValueError("int8 is inference compiled with freezing on the CPU")
            self.calibration_images = [t for _, t in from_payload(torch, request["tensors"], payload)]
            if not self.calibration_images:
                raise ValueError("an int8 session needs calibration images")
            self.run = None
        self.input = None
        self.labels = None
        self.output = None
        self.loss = None
        self.grad = None
        reset_peak_rss()

    # --- Passes (the harness times each of these calls) -----------------------------

    def prepare_batch(self):
        for p in self.params:
            p.grad = None
        self.output = self.loss = self.grad = None
        x = self.torch.randn(self.input_shape, device=self.device)
        self.input = self.place(x)
        if self.mode == "step":
            self.labels = self.torch.randint(0, max(self.classes, 1), (self.batch,), device=self.device)

    def place(self, x):
        x = x.to(self.model_dtype)
        if self.channels_last:
            x = x.contiguous(memory_format=self.torch.channels_last)
        if self.training and not self.params:
            x.requires_grad_(True)
        return x

    def forward(self):
        torch = self.torch
        if self.input is None:
            raise RuntimeError("forward called before a batch was prepared")
        if self.run is None:
            self.quantize()
        x, self.input = self.input, None
        autocast = (torch.autocast(self.device.type, dtype=self.autocast)
                    if self.autocast is not None else NullContext())
        grad = torch.no_grad() if self.mode == "infer" else NullContext()
        with grad, autocast:
            out = self.run(x)
            if self.mode == "step":
                logits = out.float().flatten(1)
                self.loss = torch.nn.functional.cross_entropy(logits, self.labels)
                self.labels = None
            else:
                self.output = out

    def output_grad(self):
        if self.output is None:
            raise RuntimeError("no output to backpropagate: run forward first")
        self.grad = self.torch.randn_like(self.output)

    def backward(self):
        if self.mode == "step":
            if self.loss is None:
                raise RuntimeError("no loss: run forward first")
            loss = self.scaler.scale(self.loss) if self.scaler else self.loss
            loss.backward()
        else:
            if self.grad is None:
                raise RuntimeError("no upstream gradient: prepare the output gradient first")
            self.output.backward(self.grad)

    def update(self):
        if self.optimizer is None:
            raise RuntimeError("only step mode has an optimizer")
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def onednn_verbose_pass(self):
        """On the CPU (cnnbench asks nowhere else): one untimed pass (no optimizer step)
        with oneDNN printing every primitive it executes, as torch.backends.mkldnn.verbose
        does, caught from this process's standard output: the lines that name the
        instruction set and the executed primitives, cut to the fields cnnbench reads.
        An int8 session not yet quantised is quantised and compiled first."""
        import tempfile
        torch = self.torch
        if self.run is None:
            # Quantised and compiled before the window: only the pass's primitives count.
            self.compile()
        libc = ctypes.CDLL(None)
        sys.stdout.flush()
        libc.fflush(None)
        saved = os.dup(1)
        with tempfile.TemporaryFile() as caught:
            os.dup2(caught.fileno(), 1)
            try:
                torch._C._verbose.mkldnn_set_verbose(1)
                try:
                    self.prepare_batch()
                    self.forward()
                    if self.mode == "train":
                        self.output_grad()
                    if self.mode != "infer":
                        self.backward()
                    self.sync()
                finally:
                    torch._C._verbose.mkldnn_set_verbose(0)
            finally:
                libc.fflush(None)
                os.dup2(saved, 1)
                os.close(saved)
            for p in self.params:
                p.grad = None
            self.output = self.loss = self.grad = None
            caught.seek(0)
            text = caught.read().decode("utf-8", "replace")
        # Up to the memory descriptors (their data types say whether a kernel ran in int8).
        return [",".join(line.split(",")[:9]) for line in text.splitlines()
                if line.startswith("onednn_verbose,") and (",isa:" in line or ",primitive,exec," in line)]

    # --- Untimed: quantise, compile, exchange, memory --------------------------------

    def quantize(self):
        """int8 as PyTorch 2.11 documents it for x86 CPUs (torchao's PT2E quantisation):
        the network exported whole (dynamo, strict: the quantiser finds convolutions and
        linear layers by the source each traced op came from, which only a strict export
        records), annotated by X86InductorQuantizer's default recipe (weights int8
        symmetric per output channel, activations uint8 per tensor), calibrated by its
        observers on the calibration images one at a time, converted, and compiled by
        inductor with freezing, which lowers each quantised pattern to oneDNN's int8
        kernels. The batch stays dynamic in the export, so the images calibrate at
        batch 1 and the session runs at its own."""
        torch = self.torch
        try:
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
            from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86
        except ImportError as e:
            raise RuntimeError("int8 needs torchao (pip install torchao): %s" % e)
        self.network.eval()
        example = torch.randn([2] + self.input_shape[1:])
        batch = torch.export.Dim("batch", min=1)
        with torch.no_grad():
            exported = torch.export.export(self.network, (example,), dynamic_shapes=({0: batch},),
                                           strict=True).module()
            quantizer = x86.X86InductorQuantizer()
            quantizer.set_global(x86.get_default_x86_inductor_quantization_config())
            prepared = prepare_pt2e(exported, quantizer)
            for image in self.calibration_images:
                prepared(self.place(image.to(self.device)))
            converted = convert_pt2e(prepared)
        quantised = sum(1 for n in converted.graph.nodes
                        if n.op == "call_function" and "quantize_per_tensor" in str(n.target))
        if quantised == 0:
            raise RuntimeError("PT2E quantised nothing in this network: X86InductorQuantizer "
                               "annotated none of its layers")
        self.run = torch.compile(converted, mode=self.compile_mode)


    def compile(self):
        """One pass on a throw-away batch, so torch.compile traces and compiles now
        (forward and backward; an int8 session quantises first) rather than in a pass
        cnnbench times. Gradients are cleared and no optimizer step is taken."""
        self.prepare_batch()
        self.forward()
        if self.mode == "train":
            self.output_grad()
            self.backward()
        elif self.mode == "step":
            self.backward()
        self.prepare_batch()
        self.input = None

    def weights(self):
        out = []
        for key, attr, _ in self.network.weight_names:
            out.append((key, getattr(self.network, attr)))
        return out

    def gradients(self):
        out = []
        for key, attr, trainable in self.network.weight_names:
            if trainable:
                p = getattr(self.network, attr)
                out.append((key, p.grad if p.grad is not None else self.torch.zeros_like(p)))
        return out

    def import_weights(self, tensors):
        given = dict(tensors)
        with self.torch.no_grad():
            for key, attr, _ in self.network.weight_names:
                if key not in given:
                    raise ValueError("the weights have no tensor %r" % key)
                target = getattr(self.network, attr)
                target.copy_(given[key].reshape(target.shape))
        if self.int8:
            # The quantised network holds the old weights, frozen: quantised again from
            # these (and calibrated again: the ranges follow the weights).
            self.run = None

    def memory(self):
        if self.cuda:
            return {"allocated": self.torch.cuda.max_memory_allocated(self.device),
                    "reserved": self.torch.cuda.max_memory_reserved(self.device)}
        return {"peak_rss": peak_rss()}


class NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def compiled_graphs(torch):
    """How many graphs dynamo has compiled in this process (forward graphs; a
    recompilation adds one)."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return 0
    return int(counters["stats"]["unique_graphs"])


def reset_peak_rss():
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class Worker:
    def __init__(self, torch):
        self.torch = torch
        self.ops = build_ops(torch)
        self.Network = make_network_class(torch)
        self.sessions = {}
        # oneDNN names its instruction set once per process: kept for later sessions.
        self.onednn_isa = None

    def session(self, request):
        sid = request.get("session")
        if sid not in self.sessions:
            raise KeyError("no session %r" % sid)
        return self.sessions[sid]

    def handle(self, request, payload):
        """One request: (reply fields, [(key, tensor)])."""
        cmd = request.get("cmd")
        torch = self.torch
        if cmd == "noop":
            return {}, []
        if cmd == "prepare":
            self.sessions[request["session"]] = Session(torch, self.Network, self.ops, request, payload)
            return {}, []
        if cmd == "drop":
            self.sessions.pop(request.get("session"), None)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return {}, []
        s = self.session(request)
        if cmd in ("batch", "forward", "output_grad", "backward", "update", "compile"):
            {"batch": s.prepare_batch, "forward": s.forward, "output_grad": s.output_grad,
             "backward": s.backward, "update": s.update, "compile": s.compile}[cmd]()
            s.sync()
            return {}, []
        if cmd == "kernels":
            lines = s.onednn_verbose_pass()
            isa = [line for line in lines if ",isa:" in line]
            if isa:
                self.onednn_isa = isa[0]
            elif self.onednn_isa:
                lines.insert(0, self.onednn_isa)
            return {"verbose": lines}, []
        if cmd == "graphs":
            return {"graphs": compiled_graphs(torch)}, []
        if cmd == "memory":
            return s.memory(), []
        if cmd == "export_weights":
            return {}, s.weights()
        if cmd == "gradients":
            return {}, s.gradients()
        if cmd == "import_weights":
            s.import_weights(from_payload(torch, request["tensors"], payload))
            return {}, []
        if cmd == "set_input":
            (_, x), = from_payload(torch, request["tensors"], payload)
            if list(x.shape) != s.input_shape:
                raise ValueError("the input has shape %s but the session takes %s" % (list(x.shape), s.input_shape))
            s.prepare_batch()
            s.input = s.place(x.to(s.device))
            return {}, []
        if cmd == "output":
            if s.output is None:
                raise RuntimeError("no output: run a forward pass in train or infer mode first")
            return {}, [("output", s.output)]
        if cmd == "set_output_grad":
            (_, g), = from_payload(torch, request["tensors"], payload)
            if s.output is None:
                raise RuntimeError("no output to backpropagate: run forward first")
            if list(g.shape) != list(s.output.shape):
                raise ValueError("the gradient has shape %s but the output has %s" % (list(g.shape), list(s.output.shape)))
            s.grad = g.to(device=s.device, dtype=s.output.dtype)
            return {}, []
        if cmd == "keep_node_outputs":
            if s.compiled:
                raise RuntimeError("a compiled network runs as a whole: its nodes' outputs cannot be kept")
            s.network.keep = []
            return {}, []
        if cmd == "node_outputs":
            if s.network.keep is None:
                raise RuntimeError("node outputs were not kept: ask before the forward pass")
            return {}, list(s.network.keep)
        raise ValueError("unknown request %r" % cmd)


if __name__ == "__main__":
    sys.exit(main())
