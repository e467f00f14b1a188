#!/usr/bin/env bash
# Usage metrics' figures in docs/performance.md, in one run: requests/s and latency under wrk
# of getSubmission beside getMetrics, getTrending (first pages of each window, with and
# without fields) and recordView (through the log: each answer waits for the read models),
# and how long after the last recordView the counters have caught up; getSimilar's latency
# on the same papers.
# Usage: scripts/loadtest/usage.sh DATA_DIR [DURATION] [CONNECTIONS]
#   DATA_DIR: a data directory seeded with `svc seed --social` (60 days of generated usage).
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
# Load tests measure the service, not its rate limiter: limits (and the per-viewer limit) are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
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
open(f"{work}/views.txt", "w").write("\n".join(uris) + "\n")
open(f"{work}/similar.txt", "w").write("".join(f"/xrpc/pub.svc.discovery.getSimilar?uri={q(u)}&limit=10\n" for u in uris))
PY
. scripts/loadtest/wrk.sh
echo "## usage metrics under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk metrics.getMetrics "$PORT" "$WORK/metrics.txt"
run_wrk metrics.getTrending "$PORT" "$WORK/trending.txt"
run_wrk discovery.getSimilar "$PORT" "$WORK/similar.txt"
# recordView: POSTs through the log, from one viewer (nearly every view a double click of
# its last one: the paper's row alone is rewritten), then each from another viewer (every
# view counted: all its rows written).
record_views() {
  WRK_PATHS="$WORK/views.txt" wrk -t2 -c"$CONNS" -d"$DURATION" --latency -s scripts/loadtest/post.lua "http://127.0.0.1:$PORT" >"$WORK/$1.wrk"
  ended=$(date +%s.%N)
  until [ "$(lag)" = 0 ]; do sleep 0.02; done
  caught=$(date +%s.%N)
  python3 - "$1" "$WORK/$1.wrk" <<'PY'
import re, sys
name, text = sys.argv[1], open(sys.argv[2]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
def pct(p):
    m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", text)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"| {name} | {rps:,.0f} | {pct(50):.2f} | {pct(99):.2f} | {non2xx.group(1) if non2xx else 0} |")
open(sys.argv[2] + ".rps", "w").write(str(rps))
PY
  echo "$caught - $ended" | python3 -c 'import sys; a, b = sys.stdin.read().split(" - "); print(float(a) - float(b))' >"$WORK/$1.caught"
}
record_views metrics.recordView
WRK_DISTINCT_VIEWERS=1 record_views "metrics.recordView (distinct viewers)"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
rps = lambda n: float(open(f"{w}/{n}.wrk.rps").read())
g = rps("getSubmission")
print()
for n in ["metrics.getMetrics", "metrics.getTrending", "discovery.getSimilar", "metrics.recordView", "metrics.recordView (distinct viewers)"]:
    print(f"- {n} at {100 * rps(n) / g:.0f}% of getSubmission's requests/s")
for n in ["metrics.recordView", "metrics.recordView (distinct viewers)"]:
    print(f"- {n}: the usage model had applied every view {float(open(f'{w}/{n}.caught').read()):.2f} s after the last answer")
PY
