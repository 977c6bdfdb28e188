#!/usr/bin/env bash
# Builds the LLVM that burn-cuda's build needs, from Debian's llvm-22 packages, where
# cubecl-cuda's build script would otherwise download one from GitHub (cnnbench's copy of
# tracel-llvm-bundler, patches/tracel-llvm-bundler-23.1.0-4, never downloads: without this
# stand-in the build stops with one line pointing here).
#
#   scripts/llvm-standin.sh            # then: cargo build --release --features cnnbench-cli/burn-cuda
#
# What it does (see docs/src/burn-gpu.md):
#   1. `apt-get download llvm-22-dev llvm-22 libllvm22` (about 100 MB; nothing else is
#      downloaded) and unpacks them with `dpkg -x` (no installation, no root needed);
#   2. makes the bundler's install folder, $XDG_DATA_HOME/tracel/tracel-llvm-23.1.0-4
#      (~/.local/share/... by default), hold a `bin/llvm-config` wrapper around Debian's
#      that answers --system-libs with the libraries Debian's static LLVM needs, --libdir
#      with a folder of links to Debian's static archives (plus libzstd.so), and drops
#      Polly from --libs; and the marker file `.tracel-llvm-installed`.
# Needs: apt-get (Debian 12 with bookworm-security, which carries llvm-22), dpkg,
# zlib and zstd development libraries' runtime parts (libz.so, libzstd.so.1).
set -euo pipefail

VERSION="23.1.0-4"                        # tracel-llvm-bundler's version, pinned by burn 0.22.1
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
PREFIX="$DATA/tracel/tracel-llvm-$VERSION" # where the bundler looks
DEBIAN="$DATA/tracel/debian-llvm-22"       # Debian's files, unpacked

if [ -e "$PREFIX/.tracel-llvm-installed" ]; then
  echo "the LLVM stand-in is already at $PREFIX"
  exit 0
fi
for tool in apt-get dpkg; do
  command -v "$tool" >/dev/null || { echo "llvm-standin.sh needs $tool (a Debian system)" >&2; exit 1; }
done
ZSTD="$(ls /usr/lib/*-linux-gnu/libzstd.so.1 2>/dev/null | head -n1 || true)"
[ -n "$ZSTD" ] || { echo "llvm-standin.sh needs libzstd.so.1 (apt-get install libzstd1)" >&2; exit 1; }

rm -rf "$DEBIAN" "$PREFIX"
mkdir -p "$DEBIAN/debs" "$DEBIAN/root"
(cd "$DEBIAN/debs" && apt-get download llvm-22-dev llvm-22 libllvm22)
for deb in "$DEBIAN"/debs/*.deb; do
  dpkg -x "$deb" "$DEBIAN/root"
done
LLVM="$DEBIAN/root/usr/lib/llvm-22"
[ -x "$LLVM/bin/llvm-config" ] || { echo "no llvm-config in the unpacked packages ($LLVM/bin)" >&2; exit 1; }

mkdir -p "$PREFIX/bin" "$PREFIX/lib"
for archive in "$LLVM"/lib/*.a; do
  ln -s "$archive" "$PREFIX/lib/"
done
ln -s "$ZSTD" "$PREFIX/lib/libzstd.so"

# The bundler runs `llvm-config --link-static ARG` for one ARG at a time.
cat > "$PREFIX/bin/llvm-config" <<EOF
#!/bin/sh
# cnnbench's LLVM stand-in (scripts/llvm-standin.sh): Debian's llvm-config, adjusted.
for arg in "\$@"; do
  case "\$arg" in
    # Debian's answer names z3 and xml2 in a form the bundler mangles (-llibz3); these are
    # what the static libraries need here.
    --system-libs) echo "-lrt -ldl -lm -lz -lzstd"; exit 0 ;;
    --libdir) echo "$PREFIX/lib"; exit 0 ;;
  esac
done
out="\$("$LLVM/bin/llvm-config" "\$@")" || exit \$?
printf '%s\n' "\$out" | sed -e 's/ *-lPollyISL//g' -e 's/ *-lPolly//g'
EOF
chmod +x "$PREFIX/bin/llvm-config"
"$PREFIX/bin/llvm-config" --link-static --version >/dev/null
touch "$PREFIX/.tracel-llvm-installed"
echo "LLVM stand-in ready at $PREFIX (LLVM $("$PREFIX/bin/llvm-config" --version))"
