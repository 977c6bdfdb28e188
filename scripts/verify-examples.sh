#!/usr/bin/env bash
# Regenerates the output of `cnnbench verify resnet18 --image-size 64 -b 4` shown in README.md
# and docs/src/commands/verify.md (build with --features torch first). Not run by the examples
# test since 2026-12-01: on an AVX2-only EPYC (no AVX-512) torch-cpu's weight gradients differ
# from burn-flex's by 4.5e-2 (noise floor 1.7e-5), while on the AVX-512 Zen 4 the pages were
# made on they agree; open, see docs/src/commands/verify.md, "On an AVX2-only CPU". Paste the
# output into both pages.
set -euo pipefail
cd "$(dirname "$0")/.."
LIBTORCH_USE_PYTORCH=1 target/release/cnnbench verify resnet18 --image-size 64 -b 4
