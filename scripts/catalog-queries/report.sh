#!/usr/bin/env bash
# Writes docs/catalog-queries.md: captures what the clients send to PostgreSQL 15
# (capture.sh), starts a fresh `target/debug/redodb serve` (build it first: `cargo build -p
# redodb`) on a free port with a temporary data directory, and runs analyze.py against it
# (the replay, the probes, and the judges and psql themselves). redodb is stopped and its
# directory removed at the end.
#
# Usage: scripts/catalog-queries/report.sh [CAPTURE_DIR [OUT.md]]
# (defaults: a temporary capture directory, docs/catalog-queries.md). Needs what
# capture.sh needs, and pglast (pip install pglast==8.8).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
capture=${1:-}
out=${2:-$repo/docs/catalog-queries.md}
redodb=$repo/target/debug/redodb
[ -x "$redodb" ] || { echo "build redodb first: cargo build -p redodb" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
[ -n "$capture" ] || capture=$work/capture
"$here/capture.sh" "$capture"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$redodb" serve --data "$work/data" --port "$port" --log-file-size 16M --sync-method fdatasync \
    --log-level warn >"$work/redodb.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
    sleep 0.1
done
commit=$(git -C "$repo" rev-parse --short HEAD)
if ! git -C "$repo" diff --quiet HEAD -- db server cli/src redo; then
    commit="$commit with uncommitted changes"
fi
mkdir -p "$(dirname "$out")"
python3 "$here/analyze.py" "$capture" "$out" --redodb-port "$port" --redodb-commit "$commit"
echo "wrote $out"
