# Starting the svc a load script measures: `serve DATA_DIR PORT` runs `$SVC up` on the data
# directory at 127.0.0.1:PORT (its log in $WORK/svc.log), sets SVC_PID, and returns once
# every projection has caught up; it fails, with the log's end, if svc exits first (say the
# data directory is held by another svc). Needs $SVC and $WORK set by the caller.
serve() {
  RUST_LOG=warn $SVC up --data-dir "$1" --listen "127.0.0.1:$2" 2>>"$WORK/svc.log" & SVC_PID=$!
  until curl -sf "http://127.0.0.1:$2/health/readiness" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(p["caughtUp"] for p in d["projections"]) else 1)' 2>/dev/null; do
    if ! kill -0 "$SVC_PID" 2>/dev/null; then
      echo "svc exited before it caught up:" >&2
      tail -n 5 "$WORK/svc.log" >&2
      return 1
    fi
    sleep 0.1
  done
}
