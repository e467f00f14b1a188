#!/usr/bin/env bash
# Seed and catch-up time of one file on the embedded log and on Kafka (a tansu broker from
# .peers/, see scripts/peers.sh), in the same run, both with the embedded store.
# Usage: scripts/loadtest/backends.sh [FILE]   (default: the committed 3k sample)
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet
SVC=target/release/svc
TANSU=${SVC_TEST_KAFKA_BIN:-.peers/bin/tansu}
FILE=${1:-fixtures/arxiv-sample-3k.jsonl.gz}
PORT=$((20000 + RANDOM % 10000))

now() { date +%s.%N; }

run() {
  local name=$1; shift
  local dir api pid t0 t1 t2
  dir=$(mktemp -d)
  api=$((PORT + 1))
  t0=$(now)
  env "$@" $SVC seed --data-dir "$dir" "$FILE" >/dev/null 2>&1
  t1=$(now)
  env "$@" $SVC up --data-dir "$dir" --listen 127.0.0.1:$api >/dev/null 2>"$dir.log" &
  pid=$!
  # Caught up: readiness answers and no projection says caughtUp false.
  until body=$(curl -sf http://127.0.0.1:$api/health/readiness) && ! grep -q '"caughtUp":false' <<<"$body"; do sleep 0.2; done
  t2=$(now)
  kill $pid; wait $pid 2>/dev/null || true
  echo "$name: seed $(echo "$t1 - $t0" | bc) s, svc up to caught up $(echo "$t2 - $t1" | bc) s"
  rm -rf "$dir" "$dir.log"
}

run embedded SVC_BENCH=embedded
"$TANSU" broker --listener-url tcp://127.0.0.1:$PORT --advertised-listener-url tcp://127.0.0.1:$PORT --storage-engine memory://tansu/ >/dev/null 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null || true' EXIT
sleep 1
run kafka "SVC_LOG=kafka://127.0.0.1:$PORT?topic=bench"
