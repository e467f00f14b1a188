#!/usr/bin/env bash
# The load test behind docs/performance.md. Measures, in one run on this machine:
#   seed throughput, projection catch-up throughput, full replay time, getSubmission and
#   searchSubmissions latency and requests/s under wrk beside an axum hello-world baseline
#   (getSubmission's ratio also in back-to-back pairs, SVC_LOADTEST_PAIRS, default 5), and
#   svc's resident memory.
# Usage: scripts/loadtest/run.sh [PAPERS_FILE] [DURATION] [CONNECTIONS]
#   SEED_ARGS=--social seeds the scholarly layer beside the papers.
#   SVC_BIN=path/to/svc measures that binary instead of building this checkout (to compare
#   two builds on the same machine, one run after the other).
# Needs: wrk (Debian package `wrk`), python3, curl. Sends traffic to 127.0.0.1 only.
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
PAPERS=${1:-../shared/data/arxiv-75k.jsonl.gz}
DURATION=${2:-15s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3311}
BASE_PORT=${SVC_BASELINE_PORT:-3399}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

if [ -z "${SVC_BIN:-}" ]; then cargo build --release --bin svc -p svc >/dev/null 2>&1; fi
cargo build --release -p query-api --example hello_baseline >/dev/null 2>&1
SVC=${SVC_BIN:-target/release/svc}
WORK=$(mktemp -d)
DATA=$WORK/data
cleanup() { kill "${SVC_PID:-}" "${BASE_PID:-}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

now() { date +%s.%N; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_caught_up() {
  until curl -sf "http://127.0.0.1:$PORT/health/readiness" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(p["caughtUp"] for p in d["projections"]) else 1)' 2>/dev/null; do
    sleep 0.05
  done
}
start_svc() { RUST_LOG=warn $SVC up --data-dir "$DATA" --listen "127.0.0.1:$PORT" 2>>"$WORK/svc.log" & SVC_PID=$!; }

echo "## machine"
echo "- $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
echo "- papers: $PAPERS ${SEED_ARGS:-}"

t0=$(now)
seed=$($SVC seed --data-dir "$DATA" ${SEED_ARGS:-} "$PAPERS" 2>/dev/null)
t1=$(now)
events=$(echo "$seed" | json 'd["events"]')
start_svc
wait_caught_up
t2=$(now)
python3 - "$events" "$t0" "$t1" "$t2" <<'PY'
import sys
ev, t0, t1, t2 = int(sys.argv[1]), *map(float, sys.argv[2:])
print("\n## seed and project")
print(f"- events: {ev}")
print(f"- seed: {t1-t0:.2f} s ({ev/(t1-t0):,.0f} events/s)")
print(f"- project (svc up until every projection caught up, includes start-up): {t2-t1:.2f} s ({ev/(t2-t1):,.0f} events/s)")
print(f"- seed + project: {t2-t0:.2f} s ({ev/(t2-t0):,.0f} events/s)")
PY
rss_after_projection=$(awk '/VmHWM/{print $2" "$3}' /proc/$SVC_PID/status)

kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null || true
t3=$(now)
$SVC replay --data-dir "$DATA" >"$WORK/replay.json" 2>/dev/null
t4=$(now)
echo
echo "## replay"
echo "- full replay of every read model (both in parallel): $(python3 -c "print(f'{$t4-$t3:.2f}')") s"
sed 's/^/- /' "$WORK/replay.json"

start_svc
wait_caught_up
# Request mixes: 1,000 eprint URIs, and searches built from their title words.
curl -s "http://127.0.0.1:$PORT/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=100" >/dev/null
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
echo / >"$WORK/base.txt"
echo /health/liveness >"$WORK/live.txt"
target/release/examples/hello_baseline "127.0.0.1:$BASE_PORT" & BASE_PID=$!
sleep 0.5

. scripts/loadtest/wrk.sh
echo
echo "## HTTP under wrk (-t2 -c$CONNS -d$DURATION unless noted, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk baseline "$BASE_PORT" "$WORK/base.txt"
run_wrk "liveness (svc's stack, no read)" "$PORT" "$WORK/live.txt"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk searchSubmissions "$PORT" "$WORK/search.txt"
run_wrk "searchSubmissions -c4" "$PORT" "$WORK/search.txt" 4
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
r = {n: float(open(f"{w}/{n}.wrk.rps").read()) for n in ["baseline", "getSubmission", "searchSubmissions"]}
print(f"\n- getSubmission at {100*r['getSubmission']/r['baseline']:.0f}% of the baseline's requests/s")
print(f"- searchSubmissions at {100*r['searchSubmissions']/r['baseline']:.0f}% of the baseline's requests/s")
PY

# The same ratio in pairs: the baseline and getSubmission back to back, PAIRS times, for
# PAIR_DURATION each. The single runs above land minutes apart, and these VMs' speed drifts
# up to 2x in minutes; a pair's two runs share the host's speed of the moment.
PAIRS=${SVC_LOADTEST_PAIRS:-5}
PAIR_DURATION=${SVC_LOADTEST_PAIR_DURATION:-4s}
echo
echo "## getSubmission beside the baseline, in $PAIRS back-to-back pairs ($PAIR_DURATION each)"
echo
echo "| pair | baseline req/s | getSubmission req/s | ratio |"
echo "|---|---|---|---|"
for i in $(seq "$PAIRS"); do
  DURATION=$PAIR_DURATION run_wrk "pair-baseline-$i" "$BASE_PORT" "$WORK/base.txt" >/dev/null
  DURATION=$PAIR_DURATION run_wrk "pair-get-$i" "$PORT" "$WORK/get.txt" >/dev/null
  python3 - "$WORK" "$i" <<'PY'
import sys
w, i = sys.argv[1], sys.argv[2]
b, g = (float(open(f"{w}/pair-{n}-{i}.wrk.rps").read()) for n in ("baseline", "get"))
print(f"| {i} | {b:,.0f} | {g:,.0f} | {100 * g / b:.0f} % |")
open(f"{w}/pairs.txt", "a").write(f"{g / b}\n")
PY
done
python3 - "$WORK" <<'PY'
import statistics, sys
ratios = [float(l) for l in open(f"{sys.argv[1]}/pairs.txt")]
print(f"\n- getSubmission at {100 * statistics.median(ratios):.0f}% of the baseline's requests/s (median of the pairs; range {100 * min(ratios):.0f}-{100 * max(ratios):.0f} %)")
PY
echo
echo "## memory (svc up)"
echo "- peak resident while projecting from zero: $rss_after_projection"
echo "- resident after the load test: $(awk '/VmRSS/{print $2" "$3}' /proc/$SVC_PID/status) (peak $(awk '/VmHWM/{print $2" "$3}' /proc/$SVC_PID/status))"
