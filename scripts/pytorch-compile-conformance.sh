#!/usr/bin/env bash
# The whole conformance suite on the pytorch-compile engine (torch.compile, inductor),
# against burn-flex: every op graph in train and infer modes and the suite's zoo models,
# through `verify` (outputs and every weight gradient), as TorchBench's --accuracy checks
# a compiled model. Each graph is compiled for each mode, which takes tens of seconds
# on two cores, so `.ci/run` checks the compiled engine on one small network only; run
# this before changing the worker (crates/engine-pytorch/worker/cnnbench_worker.py).
# Needs torch 2.11.0 in .venv-torch (as `.ci/run` installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-torch/bin/python ]; then
    echo "no .venv-torch: run .ci/run once, or: python3 -m venv .venv-torch && .venv-torch/bin/pip install torch==2.11.0" >&2
    exit 1
fi
cargo test --release -p cnnbench-engine-pytorch --features torch-tests --lib \
    the_compiled_engine_passes_the_conformance_suite -- --ignored --nocapture
