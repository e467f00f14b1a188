#!/usr/bin/env bash
# The scholarly layer's figures in docs/performance.md, in one run on this machine:
#   seed and projection of the papers alone and of the papers with `seed --social`
#   (events/s, side by side), a full replay of each, and requests/s and latency under wrk of
#   getSubmission beside the layer's list pages (25 per page) and a faceted search.
# Usage: scripts/loadtest/scholarly.sh [PAPERS_FILE] [DURATION] [CONNECTIONS]
#   SVC_LOADTEST_DATA=DIR: skip the seeding, projection and replay and serve DIR, a data
#   directory seeded with --social before (its HTTP figures only).
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only. Rate limits: none exist yet.
# Load tests measure the service, not its rate limiter: limits are off.
export SVC_RATE_LIMITS=off
set -euo pipefail
cd "$(dirname "$0")/../.."
PAPERS=${1:-../shared/data/arxiv-75k.jsonl.gz}
DURATION=${2:-15s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3312}
. scripts/loadtest/prelude.sh
now() { date +%s.%N; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_caught_up() {
  until curl -sf "http://127.0.0.1:$PORT/health/readiness" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(p["caughtUp"] for p in d["projections"]) else 1)' 2>/dev/null; do
    sleep 0.05
  done
}
start_svc() { RUST_LOG=warn $SVC up --data-dir "$1" --listen "127.0.0.1:$PORT" 2>>"$WORK/svc.log" & SVC_PID=$!; }
stop_svc() { kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null || true; }

echo "## machine"
echo "- $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
echo "- papers: $PAPERS"
echo
echo "## seed, project and replay"
echo
echo "| data | events | seed s | seed events/s | project s | project events/s | replay s | replay events/s |"
echo "|---|---|---|---|---|---|---|---|"
KINDS="papers social"
if [ -n "${SVC_LOADTEST_DATA:-}" ]; then KINDS=""; ln -s "$(realpath "$SVC_LOADTEST_DATA")" "$WORK/social"; fi
for kind in $KINDS; do
  data=$WORK/$kind
  flag=""; [ "$kind" = social ] && flag="--social"
  t0=$(now); events=$($SVC seed --data-dir "$data" $flag "$PAPERS" 2>/dev/null | json 'd["events"]'); t1=$(now)
  start_svc "$data"; wait_caught_up; t2=$(now); stop_svc
  t3=$(now); $SVC replay --data-dir "$data" >/dev/null 2>&1; t4=$(now)
  python3 -c "
ev=$events; s=$t1-$t0; p=$t2-$t1; r=$t4-$t3
print(f'| $kind | {ev:,} | {s:.1f} | {ev/s:,.0f} | {p:.1f} | {ev/p:,.0f} | {r:.1f} | {ev/r:,.0f} |')"
done

start_svc "$WORK/social"; wait_caught_up
python3 scripts/loadtest/mixes.py "$PORT" "$WORK"
python3 - "$PORT" "$WORK" <<'PY'
import json, sys, urllib.parse, urllib.request
port, work = sys.argv[1], sys.argv[2]
uris = [urllib.parse.unquote(l.strip().split("uri=", 1)[1]) for l in open(f"{work}/get.txt")]
# The eprints with reviews, for the list pages (as a frontend opens them).
base = f"http://127.0.0.1:{port}/xrpc/"
def total(path):
    return json.load(urllib.request.urlopen(base + path)).get("total", 0)
with_reviews = [u for u in uris if total("pub.svc.review.listForEprint?limit=1&eprintUri=" + urllib.parse.quote(u, safe=""))][:300]
mixes = {
    "reviews": [f"/xrpc/pub.svc.review.listForEprint?limit=25&eprintUri={urllib.parse.quote(u, safe='')}" for u in with_reviews],
    "page": [f"/xrpc/pub.svc.annotation.listForPage?pageNumber={1 + i % 12}&eprintUri={urllib.parse.quote(u, safe='')}" for i, u in enumerate(uris)],
    "endorsements": [f"/xrpc/pub.svc.endorsement.getSummary?uri={urllib.parse.quote(u, safe='')}" for u in uris],
    "tags": [f"/xrpc/pub.svc.tag.listForEprint?uri={urllib.parse.quote(u, safe='')}" for u in uris],
    "annotations": [f"/xrpc/pub.svc.annotation.listForEprint?limit=25&eprintUri={urllib.parse.quote(u, safe='')}" for u in uris],
    "endorsementList": [f"/xrpc/pub.svc.endorsement.listForEprint?limit=25&uri={urllib.parse.quote(u, safe='')}" for u in uris],
    "citations": [f"/xrpc/pub.svc.eprint.listCitations?limit=25&uri={urllib.parse.quote(u, safe='')}" for u in uris],
    "graph": [f"/xrpc/pub.svc.discovery.getCitations?limit=25&uri={urllib.parse.quote(u, safe='')}" for u in uris],
    "threads": [],
    "profiles": [],
    "tagDetail": [],
}
# A thread per eprint with reviews (its first review), the profiles of the eprints' authors,
# the detail of the tags on them.
for u in with_reviews:
    first = json.load(urllib.request.urlopen(base + "pub.svc.review.listForEprint?limit=1&eprintUri=" + urllib.parse.quote(u, safe="")))["reviews"][0]
    mixes["threads"].append(f"/xrpc/pub.svc.review.getThread?uri={urllib.parse.quote(first['uri'], safe='')}")
    mixes["profiles"].append(f"/xrpc/pub.svc.author.getProfile?did={u.split('/')[2]}")
tags = set()
for u in uris[:300]:
    tags.update(t["normalizedForm"] for t in json.load(urllib.request.urlopen(base + "pub.svc.tag.listForEprint?uri=" + urllib.parse.quote(u, safe="")))["tags"])
mixes["tagDetail"] = [f"/xrpc/pub.svc.tag.getDetail?tag={urllib.parse.quote(t, safe='')}" for t in sorted(tags)] or ["/xrpc/pub.svc.tag.getTrending"]
mixes |= {
    "faceted": [l.strip() + "&facets=fields&facets=year&facets=author" for l in open(f"{work}/search.txt")],
}
for name, paths in mixes.items():
    open(f"{work}/{name}.txt", "w").write("\n".join(paths) + "\n")
print(f"\n- list pages from {len(with_reviews)} eprints with reviews; the rest over the 1,000 newest eprints")
PY
. scripts/loadtest/wrk.sh
# A warm-up pass, not reported: getSubmission runs first and is every ratio's base, so it
# must not be the one that fills the process's caches.
DURATION=3s run_wrk warm-up "$PORT" "$WORK/get.txt" >/dev/null
echo
echo "## HTTP under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk review.listForEprint "$PORT" "$WORK/reviews.txt"
run_wrk annotation.listForPage "$PORT" "$WORK/page.txt"
run_wrk endorsement.getSummary "$PORT" "$WORK/endorsements.txt"
run_wrk tag.listForEprint "$PORT" "$WORK/tags.txt"
run_wrk annotation.listForEprint "$PORT" "$WORK/annotations.txt"
run_wrk endorsement.listForEprint "$PORT" "$WORK/endorsementList.txt"
run_wrk review.getThread "$PORT" "$WORK/threads.txt"
run_wrk author.getProfile "$PORT" "$WORK/profiles.txt"
run_wrk tag.getDetail "$PORT" "$WORK/tagDetail.txt"
run_wrk eprint.listCitations "$PORT" "$WORK/citations.txt"
run_wrk discovery.getCitations "$PORT" "$WORK/graph.txt"
run_wrk "searchSubmissions (plain)" "$PORT" "$WORK/search.txt"
run_wrk "searchSubmissions (3 facets)" "$PORT" "$WORK/faceted.txt"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
rps = lambda n: float(open(f"{w}/{n}.wrk.rps").read())
g = rps("getSubmission")
print()
for n in ["review.listForEprint", "annotation.listForPage", "endorsement.getSummary", "tag.listForEprint", "annotation.listForEprint",
          "endorsement.listForEprint", "review.getThread", "author.getProfile", "tag.getDetail", "eprint.listCitations", "discovery.getCitations"]:
    print(f"- {n} at {100 * rps(n) / g:.0f}% of getSubmission's requests/s")
print(f"- searchSubmissions with 3 facets at {100 * rps('searchSubmissions (3 facets)') / rps('searchSubmissions (plain)'):.0f}% of the plain search's requests/s")
PY
