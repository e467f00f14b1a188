#!/usr/bin/env bash
# Importing and claiming's figures in docs/performance.md, in one run: requests/s and
# latency under wrk of getSubmission beside claiming.autocomplete (a title's first word and
# the beginning of its second, for the 1,000 newest eprints) and import.get and
# import.exists (the papers those completions found).
# Usage: scripts/loadtest/claiming.sh DATA_DIR [DURATION] [CONNECTIONS]
#   DATA_DIR: a data directory seeded with `svc seed --imports` (the papers imported).
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3316}
. scripts/loadtest/prelude.sh
. scripts/loadtest/serve.sh
serve "$DATA" "$PORT"
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
python3 - "$PORT" "$WORK" <<'PY'
import json, re, sys, urllib.parse, urllib.request
port, work = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}/xrpc/"
q = lambda s: urllib.parse.quote(s, safe="")
typed, ids = [], []
for line in open(f"{work}/search.txt"):
    title = urllib.parse.unquote(line.strip().split("query=", 1)[1])
    words = [w for w in re.split(r"[^\w]+", title) if len(w) >= 2]
    if len(words) < 2 or len(words[1]) < 3:
        continue
    text = f"{words[0]} {words[1][:max(3, len(words[1]) // 2)]}"
    found = json.load(urllib.request.urlopen(base + "pub.svc.claiming.autocomplete?query=" + q(text)))["suggestions"]
    if found:
        typed.append(text)
        ids.append(found[0]["externalId"])
if not ids:
    sys.exit("no imported papers: seed the data directory with --imports")
w = lambda name, lines: open(f"{work}/{name}.txt", "w").write("".join(l + "\n" for l in lines))
w("autocomplete", [f"/xrpc/pub.svc.claiming.autocomplete?query={q(t)}" for t in typed])
w("import_get", [f"/xrpc/pub.svc.import.get?source=arxiv&externalId={q(i)}" for i in ids])
w("import_exists", [f"/xrpc/pub.svc.import.exists?externalId={q(i)}" for i in ids])
print(f"{len(typed)} completions", file=sys.stderr)
PY
. scripts/loadtest/wrk.sh
echo "## importing and claiming under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk claiming.autocomplete "$PORT" "$WORK/autocomplete.txt"
run_wrk import.get "$PORT" "$WORK/import_get.txt"
run_wrk import.exists "$PORT" "$WORK/import_exists.txt"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
rps = lambda n: float(open(f"{w}/{n}.wrk.rps").read())
g = rps("getSubmission")
print()
for n in ["claiming.autocomplete", "import.get", "import.exists"]:
    print(f"- {n} at {100 * rps(n) / g:.0f}% of getSubmission's requests/s")
PY
