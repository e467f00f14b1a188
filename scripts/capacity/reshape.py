#!/usr/bin/env python3
"""Writes a seed file shaped like another corpus: PAPERS papers (the input's, then copies
with new identifiers and authors as replicate.py makes them) whose JSON lines average about
BYTES bytes, abstracts cut at a word to get there. For estimating a corpus one cannot
measure here, such as the held-out one of issue 31 (95,000 papers, 104 MB: 1.1 KB a paper).

    scripts/capacity/reshape.py IN.jsonl.gz OUT.jsonl.gz PAPERS BYTES
"""
import gzip
import json
import sys

from replicate import copy_of


def main():
    src, dest, wanted, mean = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with gzip.open(src, "rt") as f:
        papers = [json.loads(line) for line in f if line.strip()]
    chosen = [copy_of(papers[i % len(papers)], i // len(papers)) if i >= len(papers) else papers[i] for i in range(wanted)]
    total = sum(len(json.dumps(p)) + 1 for p in chosen)
    abstracts = sum(len(p.get("abstract", "")) for p in chosen)
    # The share of each abstract kept so that the lines average `mean` bytes.
    keep = max(0.0, 1 - (total - mean * wanted) / abstracts) if abstracts else 1.0
    written = 0
    with gzip.open(dest, "wt", compresslevel=3) as out:
        for p in chosen:
            text = p.get("abstract", "")
            if text and keep < 1:
                cut = text[: int(len(text) * keep)]
                p = dict(p, abstract=cut.rsplit(" ", 1)[0] if " " in cut else cut)
            line = json.dumps(p) + "\n"
            written += len(line)
            out.write(line)
    print(f"{wanted} papers, {written / 1e6:.1f} MB ({written / wanted:.0f} bytes a paper, abstracts cut to {keep:.0%}) written to {dest}")


if __name__ == "__main__":
    main()
