#!/usr/bin/env bash
# The checks of burn's GPU engines that .ci/run leaves out (timings in docs/src/burn-gpu.md):
#   wgpu: burn-wgpu's whole conformance suite on Mesa's Vulkan CPU renderer, with the zoo
#         models (9 minutes on lavapipe) and the other models of verify's small set (about
#         5 more), its CLI tests and its doc examples (none of it is in .ci/run);
#   cuda: burn-cuda's build (the LLVM stand-in first), clippy and its tests without a GPU
#         (the device is refused, not a panic).
#   scripts/ci-gpu-backends.sh            # both
#   scripts/ci-gpu-backends.sh wgpu       # or one of them: wgpu, cuda
# Installs (Debian, as root) Mesa's Vulkan CPU driver for burn-wgpu's tests, and makes the
# LLVM stand-in for burn-cuda (scripts/llvm-standin.sh) when it is not there. Each engine's
# commands share one package set and feature list, so burn is built once per engine.
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH="${1:-all}"
PACKAGES=(-p cnnbench-engine-burn-gpu -p cnnbench-cli)

if [ "$WHICH" = all ] || [ "$WHICH" = wgpu ]; then
    echo "== burn-wgpu: Mesa's Vulkan CPU driver (lavapipe) for the tests"
    if ! ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1; then
        apt-get install -y --no-install-recommends mesa-vulkan-drivers libvulkan1
    fi
    FEATURES=cnnbench-engine-burn-gpu/wgpu,cnnbench-cli/burn-wgpu
    echo "== burn-wgpu: clippy, the engine's whole conformance suite on lavapipe, the CLI tests"
    cargo clippy --release "${PACKAGES[@]}" --features "$FEATURES" --all-targets -- -D warnings
    cargo test --release "${PACKAGES[@]}" --features "$FEATURES" --lib
    cargo test --release "${PACKAGES[@]}" --features "$FEATURES" --test cli -- cli_burn_gpu:: doc_examples::
fi

if [ "$WHICH" = all ] || [ "$WHICH" = cuda ]; then
    echo "== burn-cuda: the LLVM stand-in, then clippy and the engine's tests (no GPU here: refusals only)"
    scripts/llvm-standin.sh
    FEATURES=cnnbench-engine-burn-gpu/cuda,cnnbench-cli/burn-cuda
    export CUDARC_CUDA_VERSION="${CUDARC_CUDA_VERSION:-13000}"
    cargo clippy --release "${PACKAGES[@]}" --features "$FEATURES" --all-targets -- -D warnings
    cargo test --release "${PACKAGES[@]}" --features "$FEATURES" --lib
fi
