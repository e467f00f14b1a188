#!/usr/bin/env bash
# Importing and claiming's figures in docs/performance.md, in one run: requests/s and
# latency under wrk of getSubmission beside claiming.autocomplete (a title's first word and
# the beginning of its second, for the 1,000 newest eprints) and import.get and
# import.exists (the papers those completions found); and external lookups against the
# sources' fixture servers (a process of their own): cached ones under wrk (ORCID people,
# an OpenAlex works search), uncached ones one at a time (distinct queries), with their
# latency.
# Every request accepts gzip, as browsers and HTTP libraries do (WRK_GZIP=1; set
# WRK_GZIP= to measure identity answers).
# Usage: scripts/loadtest/claiming.sh DATA_DIR [DURATION] [CONNECTIONS]
#   DATA_DIR: a data directory seeded with `svc seed --imports` (the papers imported).
#   (SVC_BIN: the svc to run; by default a release build.)
# Needs: wrk, python3, curl. Sends traffic to 127.0.0.1 only.
export SVC_RATE_LIMITS=off
export WRK_GZIP=${WRK_GZIP-1}
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$1
DURATION=${2:-10s}
CONNS=${3:-32}
PORT=${SVC_LOADTEST_PORT:-3316}
. scripts/loadtest/prelude.sh
. scripts/loadtest/serve.sh
cargo build --release -p sources --example fixture_servers >/dev/null 2>&1
# The fixture servers live while their standard input (a fifo we hold open) does.
mkfifo "$WORK/fixtures.in"
target/release/examples/fixture_servers <"$WORK/fixtures.in" >"$WORK/fixtures.json" & FIXTURES_PID=$!
exec 9>"$WORK/fixtures.in"
until [ -s "$WORK/fixtures.json" ]; do sleep 0.1; done
REGISTRIES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["registries"])' "$WORK/fixtures.json")
export SVC_ORCID_URL=$REGISTRIES SVC_OPENALEX_URL=$REGISTRIES SVC_ROR_URL=$REGISTRIES
trap 'exec 9>&-; kill $FIXTURES_PID 2>/dev/null || true; cleanup' EXIT
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
w("import_search", [f"/xrpc/pub.svc.import.search?query={q(t.rsplit(' ', 1)[0])}&limit=10" for t in typed])
w("import_search_50", [f"/xrpc/pub.svc.import.search?query={q(t.rsplit(' ', 1)[0])}" for t in typed])
print(f"{len(typed)} completions", file=sys.stderr)
PY
# A signed-in caller for import.search: an authorization code signed with the node's own key
# (auth-keys.json in the data directory), redeemed at /oauth/token as the web client would.
BEARER=$(python3 - "$PORT" "$DATA/auth-keys.json" <<'PY'
import base64, hashlib, json, sys, time, urllib.request
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
port, keys = sys.argv[1], json.load(open(sys.argv[2]))
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = keys["signing"][-1]
private = serialization.load_pem_private_key(key["pkcs8_pem"].encode(), None)
verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
now, svc = int(time.time()), "did:web:localhost"
claims = {"iss": svc, "sub": "did:plc:loadtest00000000000000000", "aud": svc, "exp": now + 60, "iat": now,
          "jti": f"loadtest-{now}", "challenge": b64(hashlib.sha256(verifier.encode()).digest())}
signing_input = b64(json.dumps({"alg": "ES256", "typ": "code+jwt", "kid": key["kid"]}).encode()) + "." + b64(json.dumps(claims).encode())
r, s = decode_dss_signature(private.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
code = signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
body = json.dumps({"grant_type": "authorization_code", "code": code, "code_verifier": verifier}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/oauth/token", body, {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["access_token"])
PY
)
. scripts/loadtest/wrk.sh
echo "## importing and claiming under wrk (-t2 -c$CONNS -d$DURATION, same machine as the server)"
echo
echo "| target | requests/s | p50 ms | p99 ms | non-2xx |"
echo "|---|---|---|---|---|"
run_wrk getSubmission "$PORT" "$WORK/get.txt"
run_wrk claiming.autocomplete "$PORT" "$WORK/autocomplete.txt"
run_wrk import.get "$PORT" "$WORK/import_get.txt"
run_wrk import.exists "$PORT" "$WORK/import_exists.txt"
WRK_BEARER=$BEARER run_wrk "import.search (a page of 10)" "$PORT" "$WORK/import_search.txt"
WRK_BEARER=$BEARER run_wrk "import.search (50, the default)" "$PORT" "$WORK/import_search_50.txt"
# External lookups answered from the sources' response cache (each asked once before).
printf '%s\n' "/xrpc/pub.svc.actor.autocompleteOrcid?query=carberry" >"$WORK/orcid.txt"
printf '%s\n' "/xrpc/pub.svc.claiming.searchEprints?query=query-centric+retrieval&sources=openalex" >"$WORK/openalex.txt"
curl -sf "http://127.0.0.1:$PORT$(cat "$WORK/orcid.txt")" >/dev/null
curl -sf "http://127.0.0.1:$PORT$(cat "$WORK/openalex.txt")" >/dev/null
run_wrk "autocompleteOrcid (cached)" "$PORT" "$WORK/orcid.txt"
run_wrk "searchEprints, OpenAlex (cached)" "$PORT" "$WORK/openalex.txt"
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
rps = lambda n: float(open(f"{w}/{n}.wrk.rps").read())
g = rps("getSubmission")
print()
for n in ["claiming.autocomplete", "import.search (a page of 10)", "import.search (50, the default)", "import.get", "import.exists", "autocompleteOrcid (cached)", "searchEprints, OpenAlex (cached)"]:
    print(f"- {n} at {100 * rps(n) / g:.0f}% of getSubmission's requests/s")
PY
# Uncached: 200 distinct ORCID queries, one at a time, each a call to the fixture server.
python3 - "$PORT" <<'PY'
import sys, time, urllib.request
port = sys.argv[1]
took = []
for i in range(200):
    t = time.perf_counter()
    urllib.request.urlopen(f"http://127.0.0.1:{port}/xrpc/pub.svc.actor.autocompleteOrcid?query=carberry+{i}").read()
    took.append((time.perf_counter() - t) * 1000)
took.sort()
print(f"- autocompleteOrcid uncached (200 distinct queries, one at a time): p50 {took[100]:.2f} ms, p99 {took[197]:.2f} ms, max {took[-1]:.2f} ms (the deadline: 5 s)")
PY
