#!/usr/bin/env bash
# Every stress suite at full size, one at a time, niced (docs/reliability.md records a run).
#   scripts/stress.sh                 # all suites, full size, a random seed each (printed)
#   scripts/stress.sh compile_fuzz    # some suites only
#   XCE_STRESS_SEED=7 scripts/stress.sh   # the same seed for every suite
# PostgreSQL: the suites use XCE_TEST_PG_URL when it is set (else SQLite only).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"

declare -A SIZE=(
  [compile_fuzz]=20000     # mutants (a tenth as processes), /10 schema documents, /200 plans
  [provider_faults]=300    # fault modes (singles, then seeded pairs)
  [apply_kills]=200        # SIGKILLs of xce-apply, in series of 2-7
  [concurrency]=40         # cases, each on SQLite and PostgreSQL
  [fs_races]=4000          # provider calls under a symlink race
  [canaries]=10            # rounds, fresh canaries each
)
ORDER=(compile_fuzz provider_faults apply_kills concurrency fs_races canaries)
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=("${ORDER[@]}")

echo "PostgreSQL: ${XCE_TEST_PG_URL:-(none: SQLite only)}"
failed=0
for suite in "${suites[@]}"; do
  count="${SIZE[$suite]:?unknown suite $suite (one of: ${ORDER[*]})}"
  args=(--count "$count")
  [ -n "${XCE_STRESS_SEED:-}" ] && args+=(--seed "$XCE_STRESS_SEED")
  echo "== $suite: nice -n 10 $PY -m tests.stress.$suite ${args[*]}"
  nice -n 10 "$PY" -m "tests.stress.$suite" "${args[@]}" | grep -v -e ' → ' -e '^recorded ' \
    || failed=1
done
exit "$failed"
