# The wrk runner the load scripts share: `run_wrk NAME PORT PATHS_FILE [CONNECTIONS]` drives
# the paths of PATHS_FILE (one per line, in turn) for $DURATION, prints a table row
# `| name | requests/s | p50 ms | p99 ms | non-2xx |` and keeps the rate in
# $WORK/NAME.wrk.rps. Needs $WORK, $DURATION and $CONNS set by the caller.
run_wrk() {
  WRK_PATHS="$3" wrk -t2 -c"${4:-$CONNS}" -d"$DURATION" --latency -s scripts/loadtest/paths.lua "http://127.0.0.1:$2" >"$WORK/$1.wrk"
  table_row "$1" "$WORK/$1.wrk"
}

# `table_row NAME WRK_OUTPUT`: the table row of a wrk run's output (run with --latency), its
# rate kept in WRK_OUTPUT.rps.
table_row() {
  python3 - "$1" "$2" <<'PY'
import re, sys
name, text = sys.argv[1], open(sys.argv[2]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
def pct(p):
    m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", text)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"| {name} | {rps:,.0f} | {pct(50):.2f} | {pct(99):.2f} | {non2xx.group(1) if non2xx else 0} |")
open(sys.argv[2] + ".rps", "w").write(str(rps))
PY
}
