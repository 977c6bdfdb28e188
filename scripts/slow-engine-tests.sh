#!/usr/bin/env bash
# The optional engines' slowest tests, which .ci/run leaves out to stay within its
# 30 minutes (docs/src/architecture.md, "Tests and CI time"); each is marked
# `#[ignore = "… scripts/slow-engine-tests.sh runs it …"]` where it is written:
#   - engine-pytorch: the pytorch engine against burn-flex on the seven small zoo models,
#     and the compiled engine against burn-flex (one small network);
#   - cli_torch / cli_pytorch: verify across precisions (bf16, amp-bf16).
# Needs what .ci/run's optional section needs: PyTorch 2.11.0 in .venv-torch. About
# 4 minutes on 2 cores after the build. Run after any change to the engines or verify.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
FEATURES=cnnbench-engine-torch/torch,cnnbench-engine-pytorch/torch-tests,cnnbench-cli/torch,cnnbench-cli/pytorch-tests
PACKAGES=(-p cnnbench-engine-torch -p cnnbench-engine-pytorch -p cnnbench-cli)
cargo test --release "${PACKAGES[@]}" --features "$FEATURES" -p cnnbench-engine-pytorch --lib -- --ignored \
    verify_agrees_with_burn_flex_on_zoo_models_at_small_sizes the_compiled_engine_computes_what_burn_flex_computes
cargo test --release "${PACKAGES[@]}" --features "$FEATURES" --test cli -- --ignored \
    cli_torch::verify_across_precisions cli_pytorch::verify_across_precisions
