#!/usr/bin/env python3
"""Fails when a dependency that `cargo test --release --workspace` (the README's test
command) and .ci/run's build of every optional engine share resolves with different
features in the two: cargo would then compile it, and everything above it (burn: 4.5
minutes on 2 cores), twice. Names the features to add to crates/workspace-hack/Cargo.toml.

Usage: scripts/check_feature_unity.py PACKAGE_ARGS... -- FEATURES
(.ci/run passes its optional packages and features). Takes seconds: it only resolves."""
import subprocess
import sys


def tree(args):
    out = subprocess.run(
        ["cargo", "tree", "--quiet", "-e", "normal,build,dev", "--prefix", "none",
         "--no-dedupe", "-f", "{p} {f}"] + args,
        check=True, capture_output=True, text=True).stdout
    features = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].startswith("cnnbench"):
            continue
        key = (parts[0], parts[1])
        last = parts[-1]
        on = set() if len(parts) == 2 or last.endswith(")") or last == "(*)" else set(last.split(","))
        features.setdefault(key, set()).update(on)
    return features


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    at = sys.argv.index("--")
    packages, optional_features = sys.argv[1:at], sys.argv[at + 1:]
    default = tree(["--workspace"])
    optional = tree(packages + ["--features", ",".join(optional_features)])
    missing = {k: sorted(optional[k] - default[k]) for k in default if k in optional and optional[k] - default[k]}
    if not missing:
        print(f"feature unity: the {len(default)} dependencies of the default build resolve alike in the build of every optional engine")
        return
    print("these dependencies resolve with more features in the build of every optional engine than in the default build,", file=sys.stderr)
    print("so both are compiled twice; add the features to crates/workspace-hack/Cargo.toml ([dependencies] and, for", file=sys.stderr)
    print("proc-macros and build scripts' dependencies, [build-dependencies]):", file=sys.stderr)
    for (name, version), extra in sorted(missing.items()):
        print(f"  {name} {version}: {', '.join(extra)}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
