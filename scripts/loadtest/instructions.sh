#!/usr/bin/env bash
# Instructions per request, counted by callgrind: a deterministic figure for comparing builds
# on machines whose speed drifts (wrk's rates on these VMs move up to 2x within minutes).
# It counts user-space instructions only (not the kernel's socket work, not wrk's), so it
# tells what a change does to svc's own cost, not the rate a client sees.
#
# Usage: scripts/loadtest/instructions.sh SVC [SVC...]   (env: PAPERS, REQUESTS)
# For each build: seeds a fresh data directory with PAPERS (default: the committed sample),
# projects it natively, then serves it under callgrind; warms the row cache with one pass
# over the load test's getSubmission mix (run.sh's 1,000 newest eprints), counts REQUESTS
# (default 2,000) more requests over one keep-alive connection, and prints instructions per
# request, and the same for /health/liveness (svc's stack without a read). The axum hello world (query-api/examples/hello_baseline.rs) is counted the same way.
# SVC_IR_KEEP=DIR keeps the callgrind profiles there (callgrind_annotate DIR/cg.*).
# Needs valgrind, python3, curl; sends traffic to 127.0.0.1 only.
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
PAPERS=${PAPERS:-fixtures/arxiv-sample-3k.jsonl.gz}
REQUESTS=${REQUESTS:-2000}
PORT=${SVC_IR_PORT:-3331}
command -v valgrind >/dev/null || { echo "valgrind not found: apt-get install valgrind" >&2; exit 1; }
cargo build --release -q -p query-api --example hello_baseline
HELLO=target/release/examples/hello_baseline

WORK=$(mktemp -d)
cleanup() { kill "${PID:-}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# drive PATHS_FILE N: one pass over the file (warm-up), then N requests, on one connection.
drive() {
  python3 - "$PORT" "$1" "$2" <<'PY'
import http.client, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
paths = [l.strip() for l in open(path) if l.strip()]
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    c.request("GET", paths[i % len(paths)])
    r = c.getresponse()
    r.read()
    assert r.status == 200, (paths[i % len(paths)], r.status)
PY
}

# count NAME PATHS_FILE CMD...: starts CMD under callgrind, warms it, counts REQUESTS requests.
count() {
  local name=$1 paths=$2 file
  shift 2
  file=$(echo "$name" | tr -c 'A-Za-z0-9\n' '_')
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$file.%p" "$@" >"$WORK/$file.log" 2>&1 & PID=$!
  local tries=0
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health/liveness" || curl -sf -o /dev/null "http://127.0.0.1:$PORT/"; do
    kill -0 "$PID" 2>/dev/null || { echo "$name exited under valgrind: $WORK/$file.log" >&2; cat "$WORK/$file.log" >&2; exit 1; }
    tries=$((tries + 1)); [ "$tries" -lt 600 ] || { echo "$name did not answer within 5 minutes" >&2; exit 1; }
    sleep 0.5
  done
  drive "$paths" "$(wc -l <"$paths")"
  callgrind_control -z "$PID" >/dev/null 2>&1
  drive "$paths" "$REQUESTS"
  callgrind_control -d "$PID" >/dev/null 2>&1
  kill "$PID"; wait "$PID" 2>/dev/null || true
  local total
  total=$(grep -h '^summary:\|^totals:' "$WORK"/cg."$file".*.1 | head -1 | awk '{print $2}')
  printf '%-40s %8d instructions/request\n' "$name" $((total / REQUESTS))
  if [ -n "${SVC_IR_KEEP:-}" ]; then mkdir -p "$SVC_IR_KEEP" && cp "$WORK"/cg."$file".*.1 "$SVC_IR_KEEP/"; fi
}

echo / >"$WORK/base.txt"
count "hello world" "$WORK/base.txt" "$HELLO" "127.0.0.1:$PORT"
for svc in "$@"; do
  dir="$WORK/data"
  rm -rf "$dir"
  "$svc" seed --data-dir "$dir" "$PAPERS" >/dev/null 2>&1
  RUST_LOG=warn "$svc" up --data-dir "$dir" --listen "127.0.0.1:$PORT" 2>>"$WORK/up.log" & PID=$!
  until curl -sf "http://127.0.0.1:$PORT/health/readiness" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(p["caughtUp"] for p in d["projections"]) else 1)' 2>/dev/null; do
    sleep 0.2
  done
  python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
  kill "$PID"; wait "$PID" 2>/dev/null || true
  echo /health/liveness >"$WORK/live.txt"
  RUST_LOG=warn count "liveness ($svc)" "$WORK/live.txt" "$svc" up --data-dir "$dir" --listen "127.0.0.1:$PORT"
  RUST_LOG=warn count "getSubmission ($svc)" "$WORK/get.txt" "$svc" up --data-dir "$dir" --listen "127.0.0.1:$PORT"
done
