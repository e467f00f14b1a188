#!/usr/bin/env bash
# The knowledge graph's figures in docs/performance.md, in one run: requests/s and latency
# under wrk of getSubmission beside graph.getFieldEprints (every field of the taxonomy, with
# includeChildren), graph.browseFaceted (each field as the subject facet),
# graph.expandSubgraph (depth 3 from each field), graph.getNode and graph.searchNodes.
# Usage: scripts/loadtest/graph.sh DATA_DIR [DURATION] [CONNECTIONS]
#   DATA_DIR: a data directory seeded with `svc seed --taxonomy` (or `--social`).
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3315}
. scripts/loadtest/prelude.sh
. scripts/loadtest/serve.sh
serve "$DATA" "$PORT"
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
python3 - "$PORT" "$WORK" <<'PY'
import json, sys, urllib.parse, urllib.request
port, work = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}/xrpc/"
q = lambda u: urllib.parse.quote(u, safe="")
fields, cursor = [], None
while True:
    page = json.load(urllib.request.urlopen(base + "pub.svc.graph.listNodes?subkind=field&limit=100" + (f"&cursor={cursor}" if cursor else "")))
    fields += page["nodes"]
    cursor = page.get("cursor")
    if not cursor:
        break
if not fields:
    sys.exit("no field nodes: seed the data directory with --taxonomy")
w = lambda name, lines: open(f"{work}/{name}.txt", "w").write("".join(l + "\n" for l in lines))
w("field_eprints", [f"/xrpc/pub.svc.graph.getFieldEprints?field={q(n['slug'])}&includeChildren=true&limit=20" for n in fields])
w("browse", [f"/xrpc/pub.svc.graph.browseFaceted?personality={q(n['slug'])}&limit=20" for n in fields])
w("subgraph", [f"/xrpc/pub.svc.graph.expandSubgraph?rootUris={q(n['uri'])}&depth=3" for n in fields])
w("node", [f"/xrpc/pub.svc.graph.getNode?id={q(n['slug'])}&includeEdges=true" for n in fields])
w("search_nodes", [f"/xrpc/pub.svc.graph.searchNodes?query={q(n['label'].split()[0][:4])}" for n in fields])
print(f"{len(fields)} fields", file=sys.stderr)
PY
. scripts/loadtest/wrk.sh
echo "## the knowledge graph under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk graph.getFieldEprints "$PORT" "$WORK/field_eprints.txt"
run_wrk graph.browseFaceted "$PORT" "$WORK/browse.txt"
run_wrk graph.expandSubgraph "$PORT" "$WORK/subgraph.txt"
run_wrk graph.getNode "$PORT" "$WORK/node.txt"
run_wrk graph.searchNodes "$PORT" "$WORK/search_nodes.txt"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
rps = lambda n: float(open(f"{w}/{n}.wrk.rps").read())
g = rps("getSubmission")
print()
for n in ["graph.getFieldEprints", "graph.browseFaceted", "graph.expandSubgraph", "graph.getNode", "graph.searchNodes"]:
    print(f"- {n} at {100 * rps(n) / g:.0f}% of getSubmission's requests/s")
PY
