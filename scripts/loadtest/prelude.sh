# The setup the load scripts share, sourced after they set PORT: checks for wrk, builds the
# release svc unless SVC_BIN names one (SVC), makes a work directory (WORK), and on exit
# stops the svc the script started (SVC_PID), waiting until it has closed its data directory
# (a script run next on it would find it locked), and removes the work directory.
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
if [ -z "${SVC_BIN:-}" ]; then cargo build --release --bin svc -p svc >/dev/null 2>&1; fi
SVC=${SVC_BIN:-target/release/svc}
WORK=$(mktemp -d)
cleanup() {
  if [ -n "${SVC_PID:-}" ] && kill "$SVC_PID" 2>/dev/null; then wait "$SVC_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
