#!/usr/bin/env bash
# Every zoo model, torch-cpu against burn-flex through `verify` (outputs in both modes and
# every weight gradient, at 32×32 or the model's smallest input, batch 4): the test
# `every_zoo_model_computes_what_burn_computes` in crates/engine-torch/src/torch_tests.rs.
# It takes about 4 minutes on the 2-core development VM, so `.ci/run` leaves it out (CI
# runs four zoo models through the conformance suite). Needs the venv `.ci/run` makes
# (.venv-torch with torch==2.11.0). Run it before changing a lowering or the kit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-torch/bin/python ]; then
    echo "no .venv-torch: run .ci/run once, or: python3 -m venv .venv-torch && .venv-torch/bin/pip install torch==2.11.0" >&2
    exit 1
fi
export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
cargo test --release -p cnnbench-engine-torch --features torch --lib \
    every_zoo_model_computes_what_burn_computes -- --ignored
