#!/usr/bin/env bash
# Usage metrics' figures in docs/performance.md, in one run: requests/s and latency under wrk
# of getSubmission beside getMetrics, getTrending (first pages of each window, with and
# without fields) and recordView (through the log: each answer waits for the read models),
# and how long after the last recordView the counters have caught up; getSimilar's latency
# on the same papers.
# Usage: scripts/loadtest/usage.sh DATA_DIR [DURATION] [CONNECTIONS] [ROUNDS]
#   DATA_DIR: a data directory seeded with `svc seed --social` (60 days of generated usage).
#   ROUNDS: how many times every target is measured, in turn (default 3): each ratio is
#   taken within a round, and their median reported.
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
# Load tests measure the service, not its rate limiter: limits (and the per-viewer limit) are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
ROUNDS=${4:-3}
PORT=${SVC_LOADTEST_PORT:-3313}
. scripts/loadtest/prelude.sh
lag() {
  curl -sf "http://127.0.0.1:$PORT/health/readiness" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(p["lag"] for p in d["projections"] if p["model"] == "usage"))'
}
. scripts/loadtest/serve.sh
serve "$DATA" "$PORT"
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
python3 - "$PORT" "$WORK" <<'PY'
import sys, urllib.parse
port, work = sys.argv[1], sys.argv[2]
uris = [urllib.parse.unquote(l.strip().split("uri=", 1)[1]) for l in open(f"{work}/get.txt")]
q = lambda u: urllib.parse.quote(u, safe="")
open(f"{work}/metrics.txt", "w").write("".join(f"/xrpc/pub.svc.metrics.getMetrics?uri={q(u)}\n" for u in uris))
fields = ["cs.LG", "cs.CV", "cs.CL", "math.CO", "quant-ph", "hep-th", "astro-ph.GA", "cond-mat.mtrl-sci"]
trending = [f"/xrpc/pub.svc.metrics.getTrending?window={w}&limit={n}" for w in ["24h", "7d", "30d"] for n in [10, 20, 50]]
trending += [f"/xrpc/pub.svc.metrics.getTrending?window=7d&limit=20&fieldUris={f}" for f in fields]
open(f"{work}/trending.txt", "w").write("\n".join(trending) + "\n")
open(f"{work}/similar.txt", "w").write("".join(f"/xrpc/pub.svc.discovery.getSimilar?uri={q(u)}&limit=10\n" for u in uris))
PY
. scripts/loadtest/wrk.sh
# A started svc's first seconds under load are slower, whatever is asked (docs/performance.md,
# forty-seventh session: getSubmission's p99 503 ms, getSimilar's 152 ms in a first round):
# 3 s of getSubmission and 3 s of getSimilar, unmeasured, before the first round.
for warm in get similar; do
  WRK_PATHS="$WORK/$warm.txt" wrk -t2 -c"$CONNS" -d3s -s scripts/loadtest/paths.lua "http://127.0.0.1:$PORT" >/dev/null
done
# recordView: POSTs through the log, from one viewer (nearly every view a double click of
# its last one: the paper's row alone is rewritten), then each from another viewer (every
# view counted: all its rows written). Keeps how long after the last answer the usage model
# had applied every view in $WORK/NAME.caught.
record_views() {
  WRK_PATHS="$WORK/views.txt" wrk -t2 -c"$CONNS" -d"$DURATION" --latency -s scripts/loadtest/post.lua "http://127.0.0.1:$PORT" >"$WORK/$1.wrk"
  ended=$(date +%s.%N)
  until [ "$(lag)" = 0 ]; do sleep 0.02; done
  caught=$(date +%s.%N)
  table_row "$1" "$WORK/$1.wrk"
  echo "$caught - $ended" | python3 -c 'import sys; a, b = sys.stdin.read().split(" - "); print(float(a) - float(b))' >"$WORK/$1.caught"
}
# Each round measures every target once, each right after a run of getSubmission of its
# own: a ratio compares two adjacent runs, and the median over rounds is reported (a shared
# host's speed drifts by more than the differences being measured: by a tenth within
# minutes, docs/performance.md, fifty-seventh session).
for round in $(seq 1 "$ROUNDS"); do
  echo "## usage metrics under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server), round $round of $ROUNDS"
  echo
  echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
  echo "|---|---|---|---|---|"
  run_wrk "$round.getSubmission.1" "$PORT" "$WORK/get.txt"
  run_wrk "$round.metrics.getMetrics" "$PORT" "$WORK/metrics.txt"
  run_wrk "$round.getSubmission.2" "$PORT" "$WORK/get.txt"
  run_wrk "$round.metrics.getTrending" "$PORT" "$WORK/trending.txt"
  run_wrk "$round.getSubmission.3" "$PORT" "$WORK/get.txt"
  run_wrk "$round.discovery.getSimilar" "$PORT" "$WORK/similar.txt"
  run_wrk "$round.getSubmission.4" "$PORT" "$WORK/get.txt"
  record_views "$round.metrics.recordView"
  run_wrk "$round.getSubmission.5" "$PORT" "$WORK/get.txt"
  WRK_DISTINCT_VIEWERS=1 record_views "$round.metrics.recordView (distinct viewers)"
  echo
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
rps = lambda r, n: float(open(f"{w}/{r}.{n}.wrk.rps").read())
print(f"Of getSubmission's requests/s in the run just before (rounds: {rounds}; median, then each round):")
# In the order a round runs them: target i comes right after getSubmission.i.
targets = ["metrics.getMetrics", "metrics.getTrending", "discovery.getSimilar", "metrics.recordView", "metrics.recordView (distinct viewers)"]
for i, n in enumerate(targets, 1):
    shares = [100 * rps(r, n) / rps(r, f"getSubmission.{i}") for r in range(1, rounds + 1)]
    print(f"- {n} at {statistics.median(shares):.0f}% ({', '.join(f'{s:.0f}' for s in shares)})")
for n in ["metrics.recordView", "metrics.recordView (distinct viewers)"]:
    caught = [float(open(f"{w}/{r}.{n}.caught").read()) for r in range(1, rounds + 1)]
    print(f"- {n}: the usage model had applied every view {max(caught):.2f} s after the last answer at most ({', '.join(f'{c:.2f}' for c in caught)})")
PY
