"""Writes the load test's request mixes into DIR, from a running svc on 127.0.0.1:PORT:
get.txt (getSubmission of the 1,000 newest eprints), views.txt (their URIs, the bodies of
post.lua's recordViews) and search.txt (searchSubmissions of the first three words of each of
their titles). Used by run.sh and ab.sh.

Usage: python3 scripts/loadtest/mixes.py PORT DIR
"""
import json
import sys
import urllib.parse
import urllib.request

port, work = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"
uris, words, cursor = [], [], None
while len(uris) < 1000:
    q = f"{base}/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=date&limit=100" + (f"&cursor={cursor}" if cursor else "")
    page = json.load(urllib.request.urlopen(q))
    for h in page["submissions"]:
        uris.append(h["uri"])
        words.append(" ".join(h["title"].split()[:3]))
    cursor = page.get("cursor")
    if not cursor:
        break
with open(f"{work}/get.txt", "w") as f:
    for u in uris:
        f.write("/xrpc/pub.svc.eprint.getSubmission?uri=" + urllib.parse.quote(u, safe="") + "\n")
with open(f"{work}/views.txt", "w") as f:
    f.write("".join(u + "\n" for u in uris))
with open(f"{work}/search.txt", "w") as f:
    for w in words:
        f.write("/xrpc/pub.svc.eprint.searchSubmissions?query=" + urllib.parse.quote(w, safe="") + "\n")
