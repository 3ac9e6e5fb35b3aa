#!/usr/bin/env bash
# The deterministic simulation of the whole database (db/tests/simulation.rs) at length:
# `scripts/simulate.sh [COUNT] [FIRST]` runs the seeds FIRST..FIRST+COUNT (default 0..100000;
# CI runs 0..1000). Every failing seed is printed with the command that replays it, and its
# last steps; the run ends with what the seeds exercised (power cuts, terminations, commits
# lost, log switches, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100000}
first=${2:-0}
export REDODB_SIM_SEEDS="$first..$((first + count))"
echo "seeds $REDODB_SIM_SEEDS"
exec cargo test -p redodb-db --test simulation -- --nocapture
