#!/usr/bin/env bash
# Resident memory of `svc up` right after its first catch-up from zero, and of a restarted
# process serving the same data (docs/performance.md, "Memory after catch-up").
#
#   scripts/loadtest/memory.sh SVC_BIN SEED_FILE     (env: SEED_ARGS, e.g. --social)
#
# Seeds a fresh data directory from SEED_FILE, starts `svc up`, waits until readiness
# answers 200 (every read model complete), waits 10 s more and reads the resident set
# (VmRSS); then serves the load test's mixes once (run.sh's 1,000 getSubmission and
# their searches) and reads it again. Then stops it, starts it again on the same data and
# does the same. Beside each resident set, what /metrics says holds it.
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
bin=${1:?usage: memory.sh SVC_BIN SEED_FILE}
seed=${2:?usage: memory.sh SVC_BIN SEED_FILE}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
port=${PORT:-3931}
"$bin" seed --data-dir "$dir/data" ${SEED_ARGS:-} "$seed" >/dev/null 2>&1

# What svc's /metrics says holds the memory, in MB: the allocator's statistics, the caches.
parts() {
  curl -s "http://127.0.0.1:$port/metrics" | awk '/^svc_(allocator|cache)_bytes/ { printf "  %s %.1f MB\n", $1, $2 / 1e6 }'
}

measure() {
  local label=$1 started
  started=$(date +%s.%N)
  "$bin" up --data-dir "$dir/data" --listen "127.0.0.1:$port" >"$dir/$label.log" 2>&1 &
  pid=$!
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health/readiness")" = 200 ]; do sleep 0.2; done
  local ready
  ready=$(echo "$(date +%s.%N) - $started" | bc | xargs printf "%.1f")
  sleep 10
  local mb
  mb() { awk -v k="$1:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"; }
  echo "$label: ready after ${ready} s; 10 s later resident $(mb VmRSS) MB" \
    "(anonymous $(mb RssAnon) MB, mapped files $(mb RssFile) MB), peak $(mb VmHWM) MB"
  parts
  [ -f "$dir/get.txt" ] || python3 "$(dirname "$0")/mixes.py" "$port" "$dir"
  python3 - "$port" "$dir/get.txt" "$dir/search.txt" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for path in [l.strip() for f in sys.argv[2:] for l in open(f) if l.strip()]:
    c.request("GET", path)
    c.getresponse().read()
PY
  echo "$label: after serving the mixes once, resident $(mb VmRSS) MB (anonymous $(mb RssAnon) MB)"
  parts
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

measure "first catch-up"
measure "restarted"
