#!/usr/bin/env bash
# svc's CPU per request by thread, for getSubmission and for recordView from distinct
# viewers: each thread's own CPU time (/proc/PID/task/*/stat) read around a wrk run of
# DURATION (after 3 s unmeasured), until every read model has applied what it was sent.
# Prints, per target, requests/s and µs of CPU a request per thread name (request threads:
# tokio-rt-worker; the read models' appliers: projection-N; the embedded log's flusher).
# Threads are measured, not sampled: perf's DWARF stacks truncate axum's deep async ones.
# Usage: scripts/loadtest/threads.sh DATA_DIR [DURATION] [CONNECTIONS] [RUNS]
#   DATA_DIR: a data directory seeded with `svc seed --social`; RUNS: pairs of runs (1).
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
RUNS=${4:-1}
PORT=${SVC_LOADTEST_PORT:-3314}
. scripts/loadtest/prelude.sh
. scripts/loadtest/serve.sh
serve "$DATA" "$PORT"
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
behind() {
  curl -sf "http://127.0.0.1:$PORT/health/readiness" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["lag"] for p in d["projections"]))'
}
# CPU ticks (1/100 s) per thread name, summed over the threads of that name.
ticks() {
  for t in /proc/"$SVC_PID"/task/*; do echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
    awk '{ a[$1] += $2 } END { for (k in a) print k, a[k] }'
}
# `measure NAME SCRIPT PATHS [distinct]`
measure() {
  env WRK_PATHS="$3" ${4:+WRK_DISTINCT_VIEWERS=1} wrk -t2 -c"$CONNS" -d3s -s "$2" "http://127.0.0.1:$PORT" >/dev/null
  until [ "$(behind)" = 0 ]; do sleep 0.05; done
  ticks >"$WORK/before"
  env WRK_PATHS="$3" ${4:+WRK_DISTINCT_VIEWERS=1} wrk -t2 -c"$CONNS" -d"$DURATION" -s "$2" "http://127.0.0.1:$PORT" >"$WORK/wrk"
  until [ "$(behind)" = 0 ]; do sleep 0.05; done
  ticks >"$WORK/after"
  python3 - "$1" "$WORK" <<'PY'
import re, sys
name, work = sys.argv[1], sys.argv[2]
text = open(f"{work}/wrk").read()
n = int(re.search(r"(\d+) requests in", text).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
before = dict(l.split() for l in open(f"{work}/before"))
after = dict(l.split() for l in open(f"{work}/after"))
per = {k: (int(v) - int(before.get(k, 0))) * 10_000 / n for k, v in after.items()}
shown = " ".join(f"{k} {v:.1f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.1)
print(f"| {name} | {rps:,.0f} | {sum(per.values()):.1f} | {shown} |")
PY
}
echo "| target | requests/s | µs of CPU a request | by thread |"
echo "|---|---|---|---|"
for _ in $(seq 1 "$RUNS"); do
  measure getSubmission scripts/loadtest/paths.lua "$WORK/get.txt"
  measure "recordView (distinct viewers)" scripts/loadtest/post.lua "$WORK/views.txt" distinct
done
