#!/usr/bin/env bash
# Checks data-parallel training on c10d's NCCL backend (torch-cuda) on a machine with one
# NVIDIA GPU and PyTorch 2.11.0 (CUDA) in its python3, using a cnnbench binary built
# elsewhere with `--features torch` and the CUDA/NCCL headers (see the guide,
# "Data-parallel training", NCCL section), optionally compressed with zstd:
#   1. `cnnbench engines`: torch-cuda must say "yes" and the data-parallel line must list
#      it on NCCL (else the script stops with the reason, exit 3),
#   2. one NCCL rank (`--nproc 1`) trains resnet18 at 64×64, batch 4, a few steps,
#   3. ResNet-50 at batch 16, one rank with --distributed under a launcher's variables
#      (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and the same under torchrun
#      (its agent serves the store), then the same model without --distributed, so the
#      cost of the all-reduce phase at world size 1 shows,
#   4. every data-parallel result must record backend "nccl", NCCL's version and
#      `allreduce` samples; then `cnnbench report`.
# Every step has a time limit: a hang fails the script instead of holding the machine.
# Usage: scripts/gpu-check-nccl.sh [path/to/cnnbench or cnnbench.zst] [OUT folder]
#   prepared where cnnbench builds (the header packages installed, see the guide):
#     cargo build --release --features torch      # its warnings must not mention NCCL
#     mkdir -p gpu-bin && zstd -19 -f target/release/cnnbench -o gpu-bin/cnnbench.zst
#   then on the GPU machine, in a copy of the repository holding gpu-bin/:
#     scripts/gpu-check-nccl.sh gpu-bin/cnnbench.zst "$OUT"
# The binary finds libtorch through LD_LIBRARY_PATH, set here from this machine's torch.
# Rehearsal without a GPU: ENGINE=torch-cpu PASSES=1 runs the same steps on Gloo (and
# checks for "gloo" in the results); with the default ENGINE=torch-cuda and no GPU the
# script stops after step 1 with exit status 3.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${1:-$HERE/../target/release/cnnbench}"
OUT="${2:-gpu-check-nccl-results}"
PASSES="${PASSES:-10}"
ENGINE="${ENGINE:-torch-cuda}"
if [ "$ENGINE" = torch-cpu ]; then BACKEND=gloo; else BACKEND=nccl; fi
STEP_LIMIT="${STEP_LIMIT:-300}"
mkdir -p "$OUT/results"
LOG="$OUT/log.txt"
log() { echo "== $*" | tee -a "$LOG"; }
fail() {
  echo "FAILED: $1" | tee -a "$LOG" >&2
  exit "${2:-1}"
}

if [ ! -f "$BIN" ]; then
  fail "no cnnbench binary at $BIN (build it with --features torch, see the guide)" 2
fi
if [[ "$BIN" == *.zst ]]; then
  plain="$(mktemp "${TMPDIR:-/tmp}/cnnbench-nccl.XXXXXX")"
  if command -v zstd >/dev/null; then
    zstd -q -d -f -o "$plain" "$BIN"
  elif python3 -c 'import zstandard' 2>/dev/null; then
    python3 -c 'import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(open(sys.argv[1], "rb"), open(sys.argv[2], "wb"))' "$BIN" "$plain"
  else
    fail "cannot decompress $BIN: neither the zstd program nor Python's zstandard is here" 2
  fi
  chmod +x "$plain"
  BIN="$plain"
fi
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

TORCH_LIB="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')" ||
  fail "python3 has no torch here: install PyTorch 2.11.0 (CUDA)" 2
export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

{
  log "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "(no nvidia-smi)"
  python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "GPUs", torch.cuda.device_count(), "NCCL", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")'
  "$BIN" --version
} 2>&1 | tee -a "$LOG"

log "1. engines"
engines="$("$BIN" engines 2>&1)" || fail "cnnbench engines failed: $engines"
echo "$engines" | tee -a "$LOG"
if [ "$BACKEND" = nccl ]; then
  grep -q "torch-cuda and torch-cuda-nocudnn (c10d's NCCL backend)" <<<"$engines" ||
    fail "this binary has no NCCL backend (see the data-parallel line above): build it where the CUDA and NCCL headers are installed" 3
fi
grep -Eq "^\| $ENGINE +\| yes" <<<"$engines" ||
  fail "$ENGINE cannot run here (see its line above)" 3

# One step of the check, under a time limit, its output in the log.
step() {
  local what="$1"
  shift
  log "$what"
  set +e
  timeout --kill-after=10 "$STEP_LIMIT" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "$what: still running after $STEP_LIMIT s (a hang?)"
  elif [ "$rc" -ne 0 ]; then
    fail "$what: exit status $rc"
  fi
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

step "2. one NCCL rank (--nproc 1): resnet18, 64x64, batch 4, step mode, 3 passes" \
  "$BIN" run resnet18 -e "$ENGINE" --image-size 64 -b 4 --mode step --passes 3 --nproc 1 \
  --label nccl-tiny -q -o "$OUT/results"

step "3a. resnet50, batch 16, one rank with --distributed (launcher's variables), $PASSES passes" \
  env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" \
  "$BIN" run resnet50 -e "$ENGINE" --mode step -b 16 --passes "$PASSES" --distributed \
  --label nccl-env -q -o "$OUT/results"

if python3 -c 'import torch.distributed.run' 2>/dev/null; then
  step "3b. resnet50, batch 16, one rank under torchrun --no-python, $PASSES passes" \
    python3 -m torch.distributed.run --no-python --nproc-per-node 1 --master-port "$(free_port)" \
    "$BIN" run resnet50 -e "$ENGINE" --mode step -b 16 --passes "$PASSES" --distributed \
    --label nccl-torchrun -q -o "$OUT/results"
else
  log "3b. skipped: python3 has no torch.distributed.run (torchrun)"
fi

step "3c. resnet50, batch 16, without --distributed (no all-reduce), $PASSES passes" \
  "$BIN" run resnet50 -e "$ENGINE" --mode step -b 16 --passes "$PASSES" \
  --label single -q -o "$OUT/results"

log "4. the data-parallel results record $BACKEND"
if ! python3 - "$OUT/results" "$BACKEND" <<'EOF' 2>&1 | tee -a "$LOG"
import json, pathlib, sys

found = 0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    r = json.loads(path.read_text())
    d = r.get("distributed")
    label = r.get("config", {}).get("label") or r.get("label")
    if d is None:
        print(f"{path.name}: single process ({label})")
        continue
    found += 1
    libs = r["engine"].get("libraries", {})
    allreduce = d["ranks"][0]["samples"].get("allreduce", [])
    print(f"{path.name}: backend {d['backend']}, transport {d['transport']}, world {r['config']['world_size']}, "
          f"NCCL {libs.get('nccl')}, allreduce samples {len(allreduce)}, median total {r['summary']['total']['median']:.4f} s")
    assert d["backend"] == sys.argv[2], d["backend"]
    assert sys.argv[2] != "nccl" or "nccl" in libs, libs
    assert allreduce and all(v > 0 for v in allreduce), allreduce
if found == 0:
    sys.exit("no data-parallel result was written")
EOF
then
  fail "a data-parallel result does not record $BACKEND (above)"
fi

log "report"
"$BIN" report "$OUT/results" 2>&1 | tee -a "$LOG"
echo "data-parallel check on $ENGINE ($BACKEND) passed; results in $OUT" | tee -a "$LOG"
