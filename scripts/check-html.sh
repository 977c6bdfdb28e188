#!/usr/bin/env bash
# Renders `cnnbench report --format html` in headless Chromium with the network cut
# off, and checks the page laid out: every table and chart present in the DOM Chromium
# built, and a screenshot that is not blank. Needs Debian's `chromium` package
# (`apt-get install -y chromium`). Usage: scripts/check-html.sh [OUT_DIR]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
fixtures="$root/crates/report/tests/fixtures"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
    echo "check-html: no chromium found; install it with: apt-get install -y chromium" >&2
    exit 2
fi

cd "$root"
cargo run --quiet -p cnnbench-cli -- report "$fixtures/legacy/outputs" \
    --aliases "$fixtures/legacy-aliases.toml" --layout legacy --output "$out/report.html"

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --host-resolver-rules="MAP * ~NOTFOUND" --window-size=1200,2400 --hide-scrollbars)
"$browser" "${flags[@]}" --dump-dom "file://$out/report.html" > "$out/dom.html" 2>/dev/null
"$browser" "${flags[@]}" --screenshot="$out/report.png" "file://$out/report.html" 2>/dev/null

tables=$(grep -o '<table>' "$out/report.html" | wc -l)
dom_tables=$(grep -o '<table>' "$out/dom.html" | wc -l)
dom_svgs=$(grep -o '<svg' "$out/dom.html" | wc -l)
size=$(stat -c %s "$out/report.png")
echo "check-html: $tables tables in the file, $dom_tables tables and $dom_svgs charts in Chromium's DOM, screenshot $size bytes"
[ "$dom_tables" -eq "$tables" ] || { echo "check-html: Chromium lost tables" >&2; exit 1; }
[ "$dom_svgs" -eq "$tables" ] || { echo "check-html: expected one chart per table" >&2; exit 1; }
[ "$size" -gt 50000 ] || { echo "check-html: the screenshot looks blank" >&2; exit 1; }
echo "check-html: ok ($out/report.png)"
