#!/bin/bash
# usage: run.sh BIN DIR  -- seed 75k papers, catch up, replay, sizes
set -e
BIN=$1; D=$2; PORT=${PORT:-3900}
rm -rf $D
t0=$(date +%s.%N)
$BIN seed --data-dir $D ${INPUT:-../shared/data/arxiv-75k.jsonl.gz} > $D.seed.log 2>&1
t1=$(date +%s.%N)
$BIN up --data-dir $D --listen 127.0.0.1:$PORT > $D.up.log 2>&1 &
pid=$!
until curl -sf -o /dev/null http://127.0.0.1:$PORT/health/readiness; do sleep 1; done
t2=$(date +%s.%N)
kill $pid; wait $pid || true
du -sb $D/* | sed 's/^/caughtup /'
t3=$(date +%s.%N)
$BIN replay --data-dir $D > $D.replay.log 2>&1
t4=$(date +%s.%N)
echo "seed $(echo "$t1-$t0"|bc) catchup $(echo "$t2-$t1"|bc) replay $(echo "$t4-$t3"|bc)"
du -sb $D/* | sed 's/^/replayed /'
du -sb $D
