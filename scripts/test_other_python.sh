#!/usr/bin/env bash
# The version-sensitive part of the suite on the newest Python this machine has, beside the
# whole suite on .venv's (scripts/test.sh calls this after it). xce-gitops supports 3.11+,
# and the standard library changes under it between versions: HTTP reason phrases, the
# start method of multiprocessing (3.14: forkserver), argparse and stream handling,
# sqlite3. The whole suite twice would not fit the suite's time budget, so this runs the
# parts that lean on those (about a minute), with DeprecationWarnings as errors.
#
# The newest Python is the highest python3.N (newer than .venv's) on PATH or under pyenv
# (${PYENV_ROOT:-~/.pyenv}/versions/*/bin); XCE_OTHER_PYTHON=/path/to/python picks one,
# XCE_OTHER_PYTHON=none skips the step. Its venv is made once, in .venv/other-python-3.N/.
# Extra arguments go to pytest. Needs XCE_TEST_PG_URL for the PostgreSQL half, as test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# The version-sensitive part: HTTP to the forge double, the state store's processes and
# locks, the CLIs' arguments and streams (encodings, a full or closed stdout), the drift
# ledger's racing runs, the apply's lock.
streams=tests/compiler/test_cli_streams.py
SELECTED=(
  tests/pr
  tests/state/test_state_open.py tests/state/test_state_locks.py
  tests/state/test_state_epochs.py tests/state/test_state_migrations.py
  tests/state/test_state_journal.py tests/state/test_state_reconnect.py
  tests/test_cli_basics.py
  "$streams::test_a_full_stdout_is_one_line" "$streams::test_a_closed_stdout_runs_nothing"
  "$streams::test_characters_the_encoding_lacks_are_escaped"
  "$streams::test_a_name_that_is_not_utf8_in_json"
  tests/drift/test_ledger.py
  tests/apply/test_apply_locks.py
)

say() { echo "test_other_python.sh: $*" >&2; }

minor_of() { "$1" -c 'import sys; print(sys.version_info[1])' 2>/dev/null || echo 0; }

newest_python() {
  # The candidate with the highest 3.N above .venv's, or nothing.
  local best="" best_minor base_minor candidate minor
  base_minor=$(minor_of .venv/bin/python)
  best_minor=$base_minor
  for candidate in $(compgen -c python3. | sort -u) \
                   "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3.[0-9]*; do
    [[ $candidate == *-config ]] && continue
    candidate=$(command -v "$candidate" 2>/dev/null) || continue
    minor=$(minor_of "$candidate")
    if (( minor > best_minor )); then best=$candidate; best_minor=$minor; fi
  done
  echo "$best"
}

python=${XCE_OTHER_PYTHON:-}
if [ "$python" = none ]; then say "skipped (XCE_OTHER_PYTHON=none)"; exit 0; fi
[ -n "$python" ] || python=$(newest_python)
if [ -z "$python" ]; then
  say "skipped: no Python newer than .venv's ($(.venv/bin/python -V 2>&1)) on PATH or pyenv"
  exit 0
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv=.venv/other-python-$version
stamp=$venv/.xce-installed
if [ ! -x "$venv/bin/python" ]; then
  say "making $venv with $python"
  "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e ".[dev]"
  touch "$stamp"
fi
say "the version-sensitive part of the suite on Python $("$venv/bin/python" -V 2>&1 | cut -d' ' -f2)"
"$venv/bin/python" -m pytest -n 2 -p no:cacheprovider -W error::DeprecationWarning \
  "${SELECTED[@]}" "$@"
