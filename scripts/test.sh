#!/usr/bin/env bash
# The whole test suite: set up, start a real PostgreSQL, lint, type-check, test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

pg_started=""
cleanup() { if [ -n "$pg_started" ]; then bash scripts/postgres.sh stop >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT
if [ -z "${XCE_TEST_PG_URL:-}" ]; then
  eval "$(bash scripts/postgres.sh start)"
  pg_started=1
fi
echo "PostgreSQL for tests: ${XCE_TEST_PG_URL%%\?*}"
bash scripts/system-packages.sh  # scontrol (hostlists against real Slurm), chromium (HTML report)

echo "== ruff"; ruff check compiler reconciler tests benchmarks
echo "== import-linter (the layers: docs/architecture.md)"; lint-imports --no-cache
echo "== mypy (strict)"; mypy
echo "== pytest"; pytest -n 2 -p no:cacheprovider --durations=15 "$@"

# The whole suite runs on .venv's Python (the oldest supported, 3.11); the version-sensitive
# part runs again on the newest Python the machine has, if any (about 40 s; README.md).
echo "== pytest, version-sensitive part, on the newest Python"; bash scripts/test_other_python.sh
