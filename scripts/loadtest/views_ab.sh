#!/usr/bin/env bash
# recordView from distinct viewers under svc builds or settings taken in turn, on one data
# directory: per configuration a fresh `svc up`, a warm-up, then PAIRS pairs of 8 s of
# getSubmission and 8 s of distinct viewers' views. Prints, per pair, both requests/s and
# their ratio, how long after the last view the usage model had applied them all, and each
# view's CPU time by thread (request threads, the read models' appliers, the log's flusher),
# read from /proc around the views' run until every model has applied them. The CPU times
# vary less with the shared host's speed than the requests/s do (docs/performance.md,
# fifty-third session). Give the configurations alternately (A B A B).
# Usage: scripts/loadtest/views_ab.sh DATA_DIR CONFIG...
#   CONFIG: an svc binary, then optionally comma-separated VAR=value settings for it, e.g.
#   target/release/svc,SVC_USAGE_PAGE_CACHE_MIB=32. (PAIRS: pairs per configuration, 3.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
shift
PAIRS=${PAIRS:-3}
PORT=${SVC_LOADTEST_PORT:-3315}
# prelude.sh: WORK, and stopping the svc started last on exit; SVC_BIN keeps it from building.
SVC_BIN=${1%%,*}
. scripts/loadtest/prelude.sh
. scripts/loadtest/serve.sh
base="http://127.0.0.1:$PORT"
behind() { curl -sf "$base/health/readiness" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["lag"] for p in d["projections"]))'; }
# CPU ticks (1/100 s) per thread name, without its number (projection-0 and -1 are one).
ticks() {
  for t in /proc/"$SVC_PID"/task/*; do echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
    awk '{ sub(/-[0-9]+$/, "", $1); a[$1] += $2 } END { for (k in a) print k, a[k] }'
}
views() { WRK_DISTINCT_VIEWERS=1 WRK_PATHS="$WORK/views.txt" wrk -t2 -c32 -d"$1" -s scripts/loadtest/post.lua "$base"; }
gets() { WRK_PATHS="$WORK/get.txt" wrk -t2 -c32 -d"$1" -s scripts/loadtest/paths.lua "$base"; }
for config in "$@"; do
  SVC=${config%%,*}
  settings=$(echo "$config" | cut -s -d, -f2- | tr , ' ')
  # shellcheck disable=SC2086
  [ -z "$settings" ] || export $settings
  serve "$DATA" "$PORT"
  [ -f "$WORK/views.txt" ] || python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
  gets 3s >/dev/null
  views 3s >/dev/null
  until [ "$(behind)" = 0 ]; do sleep 0.05; done
  for pair in $(seq 1 "$PAIRS"); do
    gets 8s >"$WORK/get.wrk"
    sleep 1
    ticks >"$WORK/before"
    views 8s >"$WORK/views.wrk"
    caught=$(python3 - "$base" <<'PY'
import json, sys, time, urllib.request
started = time.time()
while True:
    d = json.load(urllib.request.urlopen(f"{sys.argv[1]}/health/readiness"))
    if sum(p["lag"] for p in d["projections"] if p["model"] == "usage") == 0:
        break
    time.sleep(0.01)
print(f"{time.time() - started:.2f}")
PY
)
    until [ "$(behind)" = 0 ]; do sleep 0.05; done
    ticks >"$WORK/after"
    python3 - "$config" "$pair" "$caught" "$WORK" <<'PY'
import re, sys
config, pair, caught, work = sys.argv[1:]
rps = lambda f: float(re.search(r"Requests/sec:\s+([\d.]+)", open(f"{work}/{f}").read()).group(1))
n = int(re.search(r"(\d+) requests in", open(f"{work}/views.wrk").read()).group(1))
before = dict(l.split() for l in open(f"{work}/before"))
after = dict(l.split() for l in open(f"{work}/after"))
per = {k: (int(v) - int(before.get(k, 0))) * 10_000 / n for k, v in after.items()}
shown = ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.3)
g, v = rps("get.wrk"), rps("views.wrk")
print(f"{config} #{pair}: getSubmission {g:,.0f}/s, views {v:,.0f}/s = {100 * v / g:.0f} %, applied {caught} s after the last; "
      f"µs of CPU a view {sum(per.values()):.1f} ({shown})", flush=True)
PY
    sleep 1
  done
  kill "$SVC_PID"
  wait "$SVC_PID" 2>/dev/null || true
  SVC_PID=
  # shellcheck disable=SC2046
  [ -z "$settings" ] || unset $(echo "$settings" | sed 's/=[^ ]*//g')
done
