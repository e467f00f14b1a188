#!/usr/bin/env bash
# Compares two svc builds under the same load, interleaved: both serve a copy of the same
# seeded data at once, and short wrk runs alternate between them, round after round, so the
# host's drift (up to 2x within minutes on these machines) hits both alike.
# Usage: scripts/loadtest/ab.sh OLD_SVC NEW_SVC [PAPERS_FILE] [ROUNDS] [SECONDS]
# Prints one line per run and, per target, each build's median requests/s and p99, and the
# ratio new/old. Needs wrk, python3, curl. Sends traffic to 127.0.0.1 only.
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=$1
NEW=$2
PAPERS=${3:-../shared/data/arxiv-75k.jsonl.gz}
ROUNDS=${4:-4}
SECS=${5:-4}
PORT_OLD=${SVC_AB_PORT_OLD:-3321}
PORT_NEW=${SVC_AB_PORT_NEW:-3322}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() { kill "${PID_OLD:-}" "${PID_NEW:-}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

"$OLD" seed --data-dir "$WORK/old" "$PAPERS" >/dev/null 2>&1
cp -r "$WORK/old" "$WORK/new"
RUST_LOG=warn "$OLD" up --data-dir "$WORK/old" --listen "127.0.0.1:$PORT_OLD" 2>>"$WORK/old.log" & PID_OLD=$!
RUST_LOG=warn "$NEW" up --data-dir "$WORK/new" --listen "127.0.0.1:$PORT_NEW" 2>>"$WORK/new.log" & PID_NEW=$!
for port in "$PORT_OLD" "$PORT_NEW"; do
  until curl -sf "http://127.0.0.1:$port/health/readiness" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(p["caughtUp"] for p in d["projections"]) else 1)' 2>/dev/null; do
    sleep 0.2
  done
done

# The same request mixes as run.sh: 1,000 eprint URIs, and searches from their titles.
python3 scripts/loadtest/mixes.py "$PORT_OLD" "$WORK"

run() { # build port target paths connections
  WRK_PATHS="$WORK/$4" wrk -t2 -c"$5" -d"${SECS}s" --latency -s scripts/loadtest/paths.lua "http://127.0.0.1:$2" >"$WORK/out.wrk"
  python3 - "$1" "$3" "$WORK/out.wrk" "$WORK/results.jsonl" <<'PY'
import json, re, sys
build, target, path, results = sys.argv[1:]
text = open(path).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
m = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", text)
p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"{target:<20} {build}  {rps:>9,.0f} req/s  p99 {p99:7.2f} ms" + (f"  NON-2XX {non2xx.group(1)}" if non2xx else ""))
open(results, "a").write(json.dumps({"build": build, "target": target, "rps": rps, "p99": p99}) + "\n")
PY
}
for round in $(seq "$ROUNDS"); do
  for spec in "getSubmission get.txt 32" "search-c32 search.txt 32" "search-c4 search.txt 4"; do
    set -- $spec
    run old "$PORT_OLD" "$1" "$2" "$3"
    run new "$PORT_NEW" "$1" "$2" "$3"
  done
done
python3 - "$WORK/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| target | old req/s | new req/s | new/old | old p99 ms | new p99 ms |")
print("|---|---|---|---|---|---|")
for target in dict.fromkeys(r["target"] for r in rows):
    med = lambda b, k: statistics.median(r[k] for r in rows if r["target"] == target and r["build"] == b)
    print(f"| {target} | {med('old','rps'):,.0f} | {med('new','rps'):,.0f} | {med('new','rps')/med('old','rps'):.2f} | {med('old','p99'):.2f} | {med('new','p99'):.2f} |")
PY
echo
echo "search index size: old $(du -sh "$WORK/old/search" | cut -f1), new $(du -sh "$WORK/new/search" | cut -f1)"
