#!/usr/bin/env python3
"""Writes a seed file N times the size of another: the original papers, then N-1 copies of
each with new identifiers (the arXiv id's first digit moved on, the DOI and URL marked, every
author's name marked with the copy's number, so each copy has its own accounts, records and
search documents).

    scripts/capacity/replicate.py IN.jsonl.gz OUT.jsonl.gz N
"""
import gzip
import json
import sys


def copy_of(paper, copy):
    """Copy number `copy` (1, 2, ...) of `paper`, with its own identifiers and authors."""
    paper = dict(paper)
    paper["id"] = str((int(paper["id"][0]) + copy) % 10) + paper["id"][1:]
    paper["authors"] = [f"{a} {copy + 1}" for a in paper.get("authors", [])]
    if paper.get("doi"):
        paper["doi"] = f"{paper['doi']}.c{copy + 1}"
    if paper.get("url"):
        paper["url"] = f"{paper['url']}?copy={copy + 1}"
    return paper


def main():
    src, dest, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with gzip.open(src, "rt") as f:
        papers = [json.loads(line) for line in f if line.strip()]
    with gzip.open(dest, "wt", compresslevel=3) as out:
        for copy in range(n):
            for paper in papers:
                out.write(json.dumps(copy_of(paper, copy) if copy else paper) + "\n")
    print(f"{len(papers) * n} papers written to {dest}")


if __name__ == "__main__":
    main()
