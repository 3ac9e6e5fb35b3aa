#!/usr/bin/env bash
# Builds redodb with profile-guided optimisation, for benchmark figures: an instrumented
# build runs `redodb sql-bench --quick` (the raw engine and the SQL commit loops) to
# record which code is hot, then a second build lays the code out by that profile.
# Measured on the commit_loop example: a prepared UPDATE + COMMIT in 6,967 instructions
# and 92 L1i misses instead of 9,304 and 562 (see ARCHITECTURE.md). Both builds are full
# release builds (about 7 minutes each on a 2-vCPU machine); the plain `cargo build
# --release` is unchanged. Prints the binary's path last: target/pgo/release/redodb.
set -euo pipefail
cd "$(dirname "$0")/.."

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    # llvm-profdata must be the one of rustc's own LLVM: rustup's llvm-tools component.
    rustup component add llvm-tools
fi
if [ ! -x "$profdata" ]; then
    echo "pgo-build: no llvm-profdata at $profdata (rustup component add llvm-tools)" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "pgo-build: 1/3 instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$work/raw" cargo build --release --target-dir target/pgo-gen -p redodb
echo "pgo-build: 2/3 training run: redodb sql-bench --quick" >&2
target/pgo-gen/release/redodb sql-bench --quick --dir "$work" --json "$work/train.json" >/dev/null
"$profdata" merge -o "$work/redodb.profdata" "$work/raw"
echo "pgo-build: 3/3 optimised build (target/pgo)" >&2
# A function changed since the profile was taken is built without it, silently.
RUSTFLAGS="-Cprofile-use=$work/redodb.profdata -Cllvm-args=-no-pgo-warn-mismatch" \
    cargo build --release --target-dir target/pgo -p redodb
echo "target/pgo/release/redodb"
