#!/usr/bin/env bash
# The Debian packages some tests use for real, installed when their command is missing:
#   scontrol (slurm-client): tests/compiler/test_hostlist_slurm.py compares hostlists with
#            `scontrol show hostnames`, which needs no controller;
#   chromium (chromium):     tests/drift/test_chromium.py opens the HTML drift report in a
#            headless browser (a screenshot and the page's DOM).
# As root the missing ones are installed in one apt-get run, and a failed install is an
# error, so CI never passes with a comparison skipped on a machine that could run it. Not
# root: says what is missing (the Slurm comparison is then skipped with that reason; the
# browser test fails and says how to install one).
set -euo pipefail

say() { echo "system-packages.sh: $*" >&2; }

missing=()
for pair in scontrol:slurm-client chromium:chromium; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
    say "not root, so not installing: ${missing[*]} (install these Debian packages)"
    exit 0
fi
say "installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
timeout 600 apt-get update -q >&2 || { say "error: apt-get update failed"; exit 1; }
timeout 900 apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
    || { say "error: apt-get install ${missing[*]} failed"; exit 1; }
for pair in scontrol:slurm-client chromium:chromium; do
    command -v "${pair%%:*}" >/dev/null 2>&1 \
        || { say "error: ${pair#*:} installed but no ${pair%%:*} on PATH"; exit 1; }
done
