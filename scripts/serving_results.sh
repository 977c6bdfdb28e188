#!/usr/bin/env bash
# Reproduces the guide's serving results (Serving scenarios, "Results on a 2-core CPU"):
# MLPerf LoadGen's four scenarios for ResNet-50 and MobileNet-V2 at 224×224 on the CPU
# inference engines this build has, each run a fresh process, then one report with the
# serving table and the latency-against-load charts. Run it on a quiet machine, with a
# build that has the optional engines:
#   export PATH="$PWD/.venv-torch/bin:$PATH" LIBTORCH_USE_PYTORCH=1
#   cargo build --release --features torch,ort,openvino,tract,candle
# (the pytorch engines need only torch in that Python). Results go to $OUT (default
# results-serving/); ENGINES overrides the engine list (default: every CPU inference
# engine; those this build lacks are skipped, saying so).
#
# Short of MLPerf's run rules by design (the results say so): single-stream 100 queries
# (enough to bound its p90), multi-stream 60 queries of 8 (too few to bound a p99: said
# so), offline 256 samples 8 at a time, and the server's peak search with 459 queries a
# probe (the fewest that bound a p99) under a bound two cores can meet: 100 ms for
# ResNet-50 (MLPerf's is 15 ms, for a data-centre accelerator), 50 ms for MobileNet-V2
# (burn-flex's p99 at the lightest load is 31 ms on a 2-core Zen 5). burn-flex's ResNet-50
# takes 3–4× ort-cpu's time a query, so its peak search (probes of 459 queries at a query
# or two a second: 15 minutes) is left out unless SLOW=1. A search whose bound is below
# one query's compute time (candle's) is refused at once and said. MODELS overrides the
# models; a cell that fails is said and the script goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results-serving}
BIN=${BIN:-./target/release/cnnbench}
read -r -a ENGINES <<<"${ENGINES:-burn-flex ort-cpu openvino-cpu torch-cpu tract candle pytorch pytorch-compile}"

available() { "$BIN" engines | grep -E "^\| $1 +\| yes" >/dev/null; }
lscpu | grep -E 'Model name|^CPU\(s\)' || true
grep -E '^(some|full)' /proc/pressure/cpu || true
engines=()
for e in "${ENGINES[@]}"; do
    if available "$e"; then engines+=("$e"); else echo "skipping $e: not available in this build (see \`$BIN engines\`)"; fi
done

bound_of() {
    case $1 in
    resnet50) echo 100 ;;
    mobilenet-v2) echo 50 ;;
    *) echo "no bound chosen for $1" >&2 && exit 1 ;;
    esac
}

read -r -a MODELS <<<"${MODELS:-resnet50 mobilenet-v2}"
failed=0
cell() { "$BIN" "$@" || { echo "FAILED: cnnbench $*"; failed=1; }; }
# A peak search under a bound below one query's compute time is refused at once: that
# is the engine's result under this bound (said in the log), not a failure.
server_cell() {
    local said
    if ! said=$("$BIN" "$@" 2>&1); then
        echo "$said"
        grep -q "so no load can meet it" <<<"$said" || { echo "FAILED: cnnbench $*"; failed=1; }
    else
        echo "$said"
    fi
}
for model in "${MODELS[@]}"; do
    bound=$(bound_of "$model")
    for e in "${engines[@]}"; do
        echo "== $model on $e"
        common=(run "$model" --engine "$e" --mode infer --scenario-time 0 -q -o "$OUT")
        cell "${common[@]}" --scenario single-stream --min-queries 100
        cell "${common[@]}" --scenario multi-stream --samples-per-query 8 --min-queries 60
        cell "${common[@]}" --scenario offline -b 8 --min-queries 256
        if [ "$model/$e" = resnet50/burn-flex ] && [ "${SLOW:-0}" != 1 ]; then
            echo "(the server's peak search of burn-flex's ResNet-50 is left out: SLOW=1 runs it)"
            continue
        fi
        server_cell "${common[@]}" --scenario server --find-peak --latency-bound "$bound" --min-queries 459
    done
done

echo "== the report"
"$BIN" report "$OUT" --charts "$OUT/charts"
exit "$failed"
