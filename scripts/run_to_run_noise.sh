#!/usr/bin/env bash
# This machine's run-to-run noise, and what `cnnbench compare` can find with it
# (docs/src/method.md, "The unit of evidence: the run"):
#
# 1. one configuration in RUNS fresh processes (`run --repeat RUNS`): the relative
#    standard deviation of the runs' medians is the run-to-run noise;
# 2. PAIRS pairs of same-configuration sets (SIDE runs a side, interleaved), each
#    compared: how many `compare` calls a change (it should call none);
# 3. the same configuration at --threads 1 against --threads 2 (a real change), PAIRS
#    times: how many it finds;
# 4. a table of the runs a side needed to find a change of 5, 10 and 20% with 80%
#    power at that noise.
#
# Needs a quiet machine (check /proc/pressure/cpu first) and a release build:
#   cargo build --release && scripts/run_to_run_noise.sh [OUT]
# Settings by environment: MODEL (resnet18), SIZE (64), BATCH (2), PASSES (5), RUNS (10),
# PAIRS (20), SIDE (3). About 15 minutes on a 2-core VM with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${CNNBENCH:-target/release/cnnbench}
OUT=${1:-run-to-run-noise}
MODEL=${MODEL:-resnet18} SIZE=${SIZE:-64} BATCH=${BATCH:-2} PASSES=${PASSES:-5}
RUNS=${RUNS:-10} PAIRS=${PAIRS:-20} SIDE=${SIDE:-3}
if [ -e "$OUT" ]; then
    echo "$OUT exists: give another folder, so that no result is mixed with an earlier one" >&2
    exit 1
fi
mkdir -p "$OUT"
run() {  # OUTDIR THREADS
    "$B" run "$MODEL" --image-size "$SIZE" -b "$BATCH" --passes "$PASSES" --threads "$2" \
        --repeat "$SIDE" -q -o "$1" >/dev/null
}
echo "== $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; CPU pressure before: $(head -1 /proc/pressure/cpu)"

echo "== 1. $MODEL ${SIZE}x$SIZE batch $BATCH, $PASSES passes, in $RUNS processes"
"$B" run "$MODEL" --image-size "$SIZE" -b "$BATCH" --passes "$PASSES" --threads 2 \
    --repeat "$RUNS" -q -o "$OUT/noise" >/dev/null
NOISE=$(python3 - "$OUT/noise" <<'EOF'
import json, pathlib, statistics, sys
medians = [statistics.median(json.loads(p.read_text())["samples"]["total"])
           for p in pathlib.Path(sys.argv[1]).rglob("*.json")]
print(f"{statistics.stdev(medians) / statistics.mean(medians):.4f}")
EOF
)
echo "run-to-run noise (relative standard deviation of the runs' medians): $(python3 -c "print(f'{100*$NOISE:.1f}%')")"

echo "== 2. $PAIRS pairs of the same configuration, $SIDE runs a side"
calls=0
for i in $(seq "$PAIRS"); do
    run "$OUT/same/$i/a" 2
    run "$OUT/same/$i/b" 2
    verdict=$("$B" compare "$OUT/same/$i/a" "$OUT/same/$i/b" -f csv | tail -1 | awk -F, '{print $(NF-1)}')
    echo "pair $i: $verdict"
    case "$verdict" in faster|slower) calls=$((calls + 1)) ;; esac
done
echo "same configuration: $calls of $PAIRS pairs called a change"

echo "== 3. $PAIRS pairs of --threads 2 against --threads 1, $SIDE runs a side"
found=0
for i in $(seq "$PAIRS"); do
    run "$OUT/threads/$i/two" 2
    run "$OUT/threads/$i/one" 1
    verdict=$("$B" compare "$OUT/threads/$i/two" "$OUT/threads/$i/one" -f csv 2>/dev/null | tail -1 | awk -F, '{print $(NF-1)}')
    echo "pair $i: $verdict"
    [ "$verdict" = slower ] && found=$((found + 1))
done
echo "one thread against two: found slower in $found of $PAIRS pairs"

echo "== 4. runs a side to find a change with 80% power at this noise (threshold 2%)"
python3 - "$NOISE" <<'EOF'
import math, sys
noise = float(sys.argv[1])
print("| change | runs a side |")
print("|---:|---:|")
for change in (0.05, 0.10, 0.20):
    margin = change - 0.02
    n = max(2, math.ceil(2 * ((1.96 + 0.84) * noise / margin) ** 2))
    print(f"| {change:.0%} | {n} |")
EOF
echo "CPU pressure after: $(head -1 /proc/pressure/cpu)"
