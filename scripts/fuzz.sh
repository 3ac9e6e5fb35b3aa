#!/usr/bin/env bash
# Fuzzing: builds the fuzz targets of fuzz/ (libFuzzer through libfuzzer-sys, coverage
# instrumentation, debug assertions and overflow checks on) and runs each for DURATION
# seconds from the committed seed corpus (fuzz/seeds/<target>), one target at a time.
# Fails if any target found anything: a crash (a panic or a failed check), an input
# running past -timeout, an allocation over -malloc_limit_mb or a process over
# -rss_limit_mb.
#
#   scripts/fuzz.sh [DURATION_SECONDS] [TARGET...]     default: 20 seconds, every target
#
# The targets: redo_log, control_file, checkpoint_image, sql, wire_startup, wire_session
# (what each feeds and checks: fuzz/src/*.rs). Work files go to $FUZZ_WORK (default
# fuzz/work, ignored by git): <target>/corpus (the inputs libFuzzer kept, so a second run
# goes on from the first; the seeds are only read), <target>/artifacts (the input of a
# finding: replay it with `<binary> FILE`, the binary named in the output, and make it a
# regression test beside the code it broke), <target>/log. The last lines printed are
# each target's executions, exec/s and coverage, and `findings: ...`.
#
# The build is cargo-fuzz's (`cargo fuzz build -O -a -s none --codegen-units 16`, the
# same instrumentation flags), done here with cargo itself: installing cargo-fuzz on a
# fresh machine would cost CI a minute more, without a sanitizer every flag is stable
# Rust, and the instrumentation goes to the repository's crates only (fuzz/rustc-wrapper).
# `cargo fuzz run <target>` from fuzz/ works too. FUZZ_SANITIZER=address adds
# AddressSanitizer (for the engine's unsafe code; a nightly flag, which RUSTC_BOOTSTRAP=1
# lets the stable toolchain take), in a build directory of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(redo_log control_file checkpoint_image sql wire_startup wire_session)
fi
case "$duration" in
    '' | *[!0-9]*)
        echo "usage: scripts/fuzz.sh [DURATION_SECONDS] [TARGET...]" >&2
        exit 2
        ;;
esac
work=${FUZZ_WORK:-fuzz/work}
mkdir -p "$work"
work=$(cd "$work" && pwd)

host=$(rustc -vV | sed -n 's/^host: //p')
# The instrumentation, for the repository's crates only (see fuzz/rustc-wrapper).
instrument=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cllvm-args=-sanitizer-coverage-stack-depth
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0
)
# For every crate: `cfg(fuzzing)`, debug assertions and overflow checks, and 16 codegen
# units (a third of the build time of cargo-fuzz's default of one).
rustflags=(--cfg fuzzing -Cdebug-assertions -Ccodegen-units=16)
target_dir=${FUZZ_TARGET_DIR:-fuzz/target}
case "${FUZZ_SANITIZER:-none}" in
    none) ;;
    address)
        rustflags+=(-Zsanitizer=address)
        export RUSTC_BOOTSTRAP=1
        target_dir=fuzz/target/asan
        ;;
    *)
        echo "FUZZ_SANITIZER must be none or address" >&2
        exit 2
        ;;
esac
echo "building the fuzz targets"
# --target: the flags apply to the targets' code only, not to build scripts and
# procedural macros (as cargo-fuzz does it). The profile (opt-levels, debug info) is
# fuzz/Cargo.toml's.
RUSTC_WRAPPER="$PWD/fuzz/rustc-wrapper" FUZZ_REPO="$PWD" FUZZ_INSTRUMENT="${instrument[*]}" \
    RUSTFLAGS="${rustflags[*]}" \
    cargo build --manifest-path fuzz/Cargo.toml --release --bins --target "$host" \
    --target-dir "$target_dir"
bin_dir=$target_dir/$host/release

# Per target: the longest input, and the dictionary. -timeout is far above what a
# harness lets one input do (sizes bounded, statements cancelled after 0.5 s): reaching
# it means something ignores its bounds.
max_len() {
    case "$1" in
        redo_log) echo 32768 ;;          # 8 blocks: into the next log file from NEAR_END
        control_file) echo 177 ;;        # flags + the 88 bytes each of two slots use
        checkpoint_image) echo 16384 ;;
        sql) echo 4096 ;;
        wire_startup) echo 4096 ;;
        wire_session) echo 8192 ;;
        *) echo 4096 ;;
    esac
}
dict() {
    case "$1" in
        sql | wire_session) echo "-dict=fuzz/sql.dict" ;;
    esac
}

failed=()
summary=()
for target in "${targets[@]}"; do
    dir="$work/$target"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    log="$dir/log"
    echo "fuzzing $target for ${duration}s"
    set +e
    # shellcheck disable=SC2046
    ASAN_OPTIONS="detect_odr_violation=0:detect_leaks=0" "$bin_dir/$target" \
        -max_total_time="$duration" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -max_len="$(max_len "$target")" $(dict "$target") -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" "fuzz/seeds/$target" >"$log" 2>&1
    status=$?
    set -e
    stats=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 || true)
    runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    speed=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    cov=$(echo "$stats" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    ft=$(echo "$stats" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo "?")
    corp=$(echo "$stats" | grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' | cut -d' ' -f2 || echo "?")
    findings=$(grep -c 'Test unit written to' "$log" || true)
    line="$target: $runs executions, $speed exec/s, cov $cov, ft $ft, corpus $corp, $findings findings"
    summary+=("$line")
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        echo "FINDING in $target (exit $status):" >&2
        grep -E '^(==[0-9]+==|thread .* panicked|SUMMARY|ERROR|Test unit written)' "$log" | head -20 >&2 || true
        echo "(full log: $log; replay: $bin_dir/$target ARTIFACT)" >&2
    fi
done

echo
for line in "${summary[@]}"; do
    echo "$line"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "findings: ${failed[*]}"
    exit 1
fi
echo "findings: none"
