#!/usr/bin/env bash
# CI for burn's GPU engines (burn-wgpu, burn-cuda), kept out of .ci/run because their
# builds take minutes each (numbers in docs/src/burn-gpu.md). Each step is separate so
# that it can be moved into .ci/run or a combined-feature build.
#   scripts/ci-gpu-backends.sh            # both
#   scripts/ci-gpu-backends.sh wgpu       # or one of them: wgpu, cuda
# Installs (Debian, as root) Mesa's Vulkan CPU driver for burn-wgpu's tests, and makes the
# LLVM stand-in for burn-cuda (scripts/llvm-standin.sh) when it is not there.
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH="${1:-all}"

if [ "$WHICH" = all ] || [ "$WHICH" = wgpu ]; then
    echo "== burn-wgpu: Mesa's Vulkan CPU driver (lavapipe) for the tests"
    if ! ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1; then
        apt-get install -y --no-install-recommends mesa-vulkan-drivers libvulkan1
    fi
    echo "== burn-wgpu: clippy, the engine's conformance suite on lavapipe, the CLI tests and examples"
    cargo clippy --release -p cnnbench-engine-burn-gpu -p cnnbench-cli \
        --features cnnbench-engine-burn-gpu/wgpu,cnnbench-cli/burn-wgpu --all-targets -- -D warnings
    cargo test --release -p cnnbench-engine-burn-gpu --features wgpu
    cargo test --release -p cnnbench-cli --features burn-wgpu --test cli_burn_gpu --test doc_examples
fi

if [ "$WHICH" = all ] || [ "$WHICH" = cuda ]; then
    echo "== burn-cuda: the LLVM stand-in, then clippy and the engine's tests (no GPU here: refusals only)"
    scripts/llvm-standin.sh
    cargo clippy --release -p cnnbench-engine-burn-gpu -p cnnbench-cli \
        --features cnnbench-engine-burn-gpu/cuda,cnnbench-cli/burn-cuda --all-targets -- -D warnings
    cargo test --release -p cnnbench-engine-burn-gpu --features cuda
fi
