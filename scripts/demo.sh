#!/usr/bin/env bash
# The main job on the example site with the embedded defaults: compile, plan, apply, drift.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
site=${1:-site-config}

echo "== compile"
xce-compile "$site" --out build
