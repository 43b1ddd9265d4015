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
echo "== 9. proxies: proxy-a and proxy-b run the providers; the commands meet them in the store"
# A copy of the site with proxies turned on (site-config/ stays as it is). A proxy has no site
# folder, so the dataset sources get an absolute path. Both proxies run on this machine with
# the same workdir (a shared mount on real hosts) and the SQLite store; only their
# environment holds the cloud token: xce-plan and xce-apply run without it.
psite=build/proxied-site
state="$workdir/state.sqlite"
cp -r "$site" "$psite" && rm -rf "$psite/.xce"
printf '  proxies:\n    serve: all\n    lease_ttl: 3s\n    publish_interval: 5s\n' >> "$psite/site.yaml"
sed -i "s|source_base: sample-data|source_base: $PWD/$site/sample-data|" "$psite/providers.yaml"
pids=()
stop_proxies() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_proxies EXIT
start_proxy() {  # NAME: in the background, its JSON log lines in build/NAME.log
  env BURST_API_TOKEN=demo-token-only-here xce-proxy run "$1" --state "$state" \
    --workdir "$workdir" > /dev/null 2> "build/$1.log" &
  pids+=($!)
}
wait_for() {  # LOG PATTERN COUNT: until LOG has COUNT lines matching PATTERN (at most 20 s)
  for _ in $(seq 200); do
    [ "$(grep -c "$2" "$1" 2>/dev/null || true)" -ge "$3" ] && return 0; sleep 0.1
  done
  echo "timed out waiting for $2 in $1"; tail -n 5 "$1"; exit 1
}
unset BURST_API_TOKEN
start_proxy proxy-a; start_proxy proxy-b
echo "  xce-apply records the config the proxies follow (the bootstrap); proxy-a takes the leases:"
# its plan was made before any proxy served: the proxied providers are unknown in it, so it
# ends "incompletely" (exit 1) — what matters is the config it recorded
rc=0; xce-apply "$psite" --auto-approve --workdir "$workdir" --state "$state" \
  > build/bootstrap.log 2>&1 || rc=$?
[ "$rc" -le 1 ] && grep -q "^Applied" build/bootstrap.log \
  || { cat build/bootstrap.log; echo "the bootstrap apply exited $rc"; exit 1; }
wait_for build/proxy-a.log '"event":"published"' 5
grep '"event":"lease-taken"' build/proxy-a.log | head -n 2 | sed 's/^/  proxy-a: /'
echo "  plan through the proxies (bob's directory, removed by hand, comes back through proxy-a):"
rc=0; xce-plan "$psite" --workdir "$workdir" --state "$state" --out build/proxied-plan.json \
  > build/proxied-plan.txt 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat build/proxied-plan.txt; echo "xce-plan exited $rc, expected 2"; exit 1; }
grep -F '[shared-fs]' build/proxied-plan.txt | head -n 3 | sed 's/^/ /'
xce-apply build/proxied-plan.json > build/proxied-apply.log 2>&1
tail -n 1 build/proxied-apply.log | sed 's/^/  /'
echo "  proxy-a is killed (SIGKILL); proxy-b takes over once its leases lapse (3 s):"
{ kill -KILL "${pids[0]}"; wait "${pids[0]}"; } 2> /dev/null || true   # reaped, quietly
wait_for build/proxy-b.log '"event":"lease-taken"' 5
grep '"event":"lease-taken"' build/proxy-b.log | head -n 1 | sed 's/^/  proxy-b: /'
wait_for build/proxy-b.log '"event":"published"' 5
rc=0; xce-plan "$psite" --workdir "$workdir" --state "$state" > build/proxied-plan2.txt 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat build/proxied-plan2.txt; echo "xce-plan exited $rc, expected 0"; exit 1; }
echo "  plan again, from proxy-b's inventories: nothing to do (exit 0)"
echo "  the site's state from the store (xce-status; docs/status.md), leases and inventories:"
xce-status --state "$state" > build/status.txt
sed -n '/^Provider leases/,/^$/p' build/status.txt | sed 's/^/  /' | head -n 4
kill -TERM "${pids[1]}"; wait "${pids[1]}" || true
grep '"event":"lease-released"' build/proxy-b.log | head -n 1 | sed 's/^/  proxy-b (SIGTERM): /'
grep -q demo-token-only-here build/*.log build/*.txt build/*.json "$state" \
  && { echo "the proxies' token leaked"; exit 1; }
echo "  The proxies' logs: build/proxy-a.log, build/proxy-b.log (docs/proxies.md)"
echo
echo "Done: compiled, planned, applied, no drift, job retention previewed, drift reported, then applied through two proxies with a takeover. Look around in $workdir/ and build/."
