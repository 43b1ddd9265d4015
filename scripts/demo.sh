#!/usr/bin/env bash
# The main job on the example site with the embedded defaults:
# compile → plan → apply → drift check (a plan that must show nothing to do), what the
# scheduler reads (locality, topology), job directories and a retention preview, then drift
# made on purpose and reported by xce-drift (build/drift.html, build/drift.txt).
# Everything lives in <site>/.xce (controller map, state store, provider roots) and build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
site=${1:-site-config}
workdir="$site/.xce"
rm -rf "$workdir" build   # start from an empty cluster so the whole loop is shown

echo "== 1. compile: validate $site and write the desired supply map"
xce-compile "$site" --out build

echo
echo "== 2. plan: what the providers must change (exit 2 = changes)"
rc=0; xce-plan "$site" --out build/plan.json > build/plan.txt || rc=$?
[ "$rc" -eq 2 ] || { cat build/plan.txt; echo "xce-plan exited $rc, expected 2"; exit 1; }
head -n 12 build/plan.txt; echo "  … (full plan in build/plan.txt)"; tail -n 1 build/plan.txt

echo
echo "== 3. apply the saved plan (journaled; state in $workdir/state.sqlite)"
xce-apply build/plan.json --site "$site" > build/apply.log 2>&1
head -n 3 build/apply.log; echo "  … (one line per action in build/apply.log)"; tail -n 2 build/apply.log

echo
echo "== 4. a worker joins: the node manager reports cn0001 (controller map)"
xce-map --site "$site" report join cn0001
xce-map --site "$site" report available cn0001

echo
echo "== 5. drift check: plan again; live now matches desired (exit 0 = nothing to do)"
rc=0; xce-plan "$site" || rc=$?
[ "$rc" -eq 0 ] || { echo "drift check exited $rc, expected 0"; exit 1; }

echo
echo "== 6. what the scheduler reads: the L1 attributes of group gpu and host gn001"
xce-map --site "$site" show --format json | python3 -c '
import json, sys
entries = {e["id"]: e for e in json.load(sys.stdin)["entries"]}
for eid, keys in (("host-group/gpu", ("datasets", "mounts")), ("host/gn001", ("topology", "mounts"))):
    attrs = entries[eid]["attributes"]
    print(f"  {eid}: " + "; ".join(f"{k} {json.dumps(attrs[k])}" for k in keys))'

echo
echo "== 7. jobs: workers write job directories on the shared volume; the map records the jobs"
vol="$workdir/fs/shared/xce"
ago() { date -u -d "$1 days ago" +%Y-%m-%dT%H:%M:%SZ; }
mkdir -p "$vol"/alice/{1001,1002}/{in,out,err} "$vol"/bob/1003/{1,2,3}/{in,out,err} \
    "$vol/bob/1003/2/attempt-2/out" "$vol/carol/977/out"   # 1003: an array; 977: unknown job
echo "result" > "$vol/alice/1001/out/result.txt"
xce-map --site "$site" job start 1001 1002 --user alice --at "$(ago 20)" > /dev/null
xce-map --site "$site" job start 1003 --user bob --at "$(ago 18)" > /dev/null
xce-map --site "$site" job end 1001 1003 --at "$(ago 17)"
echo "  Retention (storage/volumes.yaml): keep 14d from the job's end. Plan now: nothing to"
echo "  evict, every tree was just written. A preview 15 days ahead (xce-plan --as-of +15d):"
rc=0; xce-plan "$site" --as-of +15d --destroy > build/preview.txt 2> /dev/null || rc=$?
[ "$rc" -eq 2 ] || { cat build/preview.txt; echo "the preview exited $rc, expected 2"; exit 1; }
grep -E "job-dir/" build/preview.txt | sed 's/^/  /'

echo
echo "== 8. drift on purpose: bob's directory removed by hand, cn0001 reported lost"
rm -rf "$workdir/fs/shared/xce/bob"
xce-map --site "$site" report lost cn0001   # the node manager: the machine died
rc=0; xce-drift "$site" --out build/drift.html --out build/drift.txt > /dev/null || rc=$?
[ "$rc" -eq 2 ] || { echo "xce-drift exited $rc, expected 2 (drift)"; exit 1; }
sed -n '3,7p' build/drift.txt
echo "  The drift report: build/drift.txt (text) and build/drift.html (open it in a browser)"
echo
echo "Done: compiled, planned, applied, no drift, job retention previewed, then drift reported. Look around in $workdir/ and build/."
