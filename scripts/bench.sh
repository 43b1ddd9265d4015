#!/usr/bin/env bash
# The benchmark gate (issue 23; docs/performance.md, "The gate"): compile and plan as ratios to
# a decode floor, compared with benchmarks/figures.json. Exit 1 on a ratio >15 % worse.
#   scripts/bench.sh            compare and print the table   (--format json for tools)
#   scripts/bench.sh --record   measure and rewrite benchmarks/figures.json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m benchmarks.gate "$@"
