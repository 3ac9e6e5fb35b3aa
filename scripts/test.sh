#!/usr/bin/env bash
# The tests, on any machine: installs what the tests drive that is missing (real clients
# and tools, never mocks), runs the workspace's tests, then runs each fuzz target for 5
# seconds (scripts/fuzz.sh). README.md's test command and what `.ci/run` calls after its
# format and lint checks. Arguments go to `cargo test` (for example `scripts/test.sh -p
# redodb-redo`; FUZZ_SECONDS=0 skips the fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is required (the machine's Rust toolchain)" >&2
    exit 1
fi
# gdb is optional: the crash simulation uses it to print thread stacks if it ever stalls.

# Debian packages: psql and pgbench (PostgreSQL 15), headless Chromium to render the HTML
# report, openssl to make the TLS tests' certificate, PgJDBC and a JDK to compile its test
# program, Prometheus (with promtool) to scrape and lint the server's /metrics.
need=()
command -v psql >/dev/null 2>&1 || need+=(postgresql-client-15)
[ -x /usr/lib/postgresql/15/bin/pgbench ] || need+=(postgresql-15)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# A C++ compiler: libfuzzer-sys builds libFuzzer (C++) for the fuzz targets.
command -v c++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${need[@]}"
fi
# psycopg 3 from PyPI, at the pinned version (pip does nothing when it is there already;
# Debian's own python3 refuses to install beside its packages unless told to).
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m pip install --quiet -r cli/tests/clients/requirements.txt \
    || python3 -m pip install --quiet --break-system-packages -r cli/tests/clients/requirements.txt

cargo test --workspace "$@"

# Then every fuzz target for a short while from its seed corpus, in a work directory of
# its own (so this run does not start from, or add to, a local fuzz/work); any finding
# fails the run. FUZZ_SECONDS sets the time per target (0 skips fuzzing). The build of the
# instrumented targets is most of this step's time.
fuzz_seconds=${FUZZ_SECONDS:-5}
if [ "$fuzz_seconds" -gt 0 ]; then
    fuzz_work=$(mktemp -d)
    trap 'rm -rf "$fuzz_work"' EXIT
    FUZZ_WORK="$fuzz_work" scripts/fuzz.sh "$fuzz_seconds"
fi
