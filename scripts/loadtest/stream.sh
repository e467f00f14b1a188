#!/usr/bin/env bash
# The log stream's figures in docs/performance.md, in one run: how fast one subscriber reads
# the whole log from cursor 0 (`svc log tail --follow --url`) against `svc log tail` reading
# the same log locally; and getSubmission's rate under wrk alone and with 100 live
# subscribers, a view recorded every 50 ms meanwhile in both runs (each a command event the
# subscribers read).
# Usage: scripts/loadtest/stream.sh DATA_DIR [DURATION] [CONNECTIONS]
#   DATA_DIR: a seeded data directory (40,000 papers with `svc seed --social` make about
#   250,000 events). (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3314}
SUBSCRIBERS=${SUBSCRIBERS:-100}
. scripts/loadtest/prelude.sh
seconds() { python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$1" "$2"; }

# The log read locally (svc stopped), and how many of its events are public.
t0=$(date +%s.%N)
total=$($SVC log tail --data-dir "$DATA" | wc -l)
t1=$(date +%s.%N)
local_s=$(seconds "$t0" "$t1")
public=$($SVC log export --data-dir "$DATA" "$WORK/public.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
rm -f "$WORK/public.jsonl"

. scripts/loadtest/serve.sh
serve "$DATA" "$PORT"
# One subscriber from cursor 0 (anonymous: it reads every event, receives the public ones).
t0=$(date +%s.%N)
got=$($SVC log tail --follow --url "http://127.0.0.1:$PORT" --from 0 --limit "$public" | wc -l)
t1=$(date +%s.%N)
stream_s=$(seconds "$t0" "$t1")

python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
head -n 1 "$WORK/get.txt" | sed 's/.*uri=//' | python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.stdin.read().strip()))' >"$WORK/view.uri"
views() {
  while true; do
    curl -s -o /dev/null -X POST -H 'content-type: application/json' -A 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' \
      -d "{\"uri\":\"$(cat "$WORK/view.uri")\"}" "http://127.0.0.1:$PORT/xrpc/pub.svc.metrics.recordView"
    sleep 0.05
  done
}
views & VIEWS_PID=$!
. scripts/loadtest/wrk.sh
echo "## the log stream (${total} events; same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
# Three pairs, alone then with the subscribers: the host's speed drifts between runs.
for pair in 1 2 3; do
  run_wrk "getSubmission.alone$pair" "$PORT" "$WORK/get.txt"
  pids=()
  for _ in $(seq "$SUBSCRIBERS"); do
    $SVC log tail --follow --url "http://127.0.0.1:$PORT" >/dev/null 2>&1 & pids+=($!)
  done
  sleep 2
  run_wrk "getSubmission.with${SUBSCRIBERS}subscribers$pair" "$PORT" "$WORK/get.txt"
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
done
kill "$VIEWS_PID" 2>/dev/null || true
echo
python3 - "$total" "$public" "$got" "$local_s" "$stream_s" "$WORK" "$SUBSCRIBERS" <<'PY'
import statistics, sys
total, public, got = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
local_s, stream_s = float(sys.argv[4]), float(sys.argv[5])
work, n = sys.argv[6], sys.argv[7]
rate = lambda name: float(open(f"{work}/{name}.wrk.rps").read())
pairs = [(rate(f"getSubmission.alone{i}"), rate(f"getSubmission.with{n}subscribers{i}")) for i in (1, 2, 3)]
# The pair whose ratio is the median.
alone, with_subs = sorted(pairs, key=lambda p: p[1] / p[0])[1]
print(f"- the three pairs' costs: {', '.join(f'{100 * (1 - w / a):.1f} %' for a, w in pairs)}")
print(f"- `svc log tail` locally: {total:,} events in {local_s:.2f} s ({total / local_s:,.0f} events/s)")
print(f"- one subscriber from cursor 0: {total:,} events read ({got:,} public received) in {stream_s:.2f} s "
      f"({total / stream_s:,.0f} events/s): **{(total / stream_s) / (total / local_s):.2f}x** the local tail (goal >= 0.5)")
print(f"- getSubmission with {n} live subscribers (the median pair): {with_subs:,.0f} against {alone:,.0f} requests/s alone: "
      f"**{100 * (1 - with_subs / alone):.1f} %** less (goal <= 10 %)")
PY
