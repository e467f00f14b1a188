#!/usr/bin/env bash
# The README's test command: installs the real servers the tests need (scripts/peers.sh),
# then runs every test of the workspace, then the Kafka suites again on tansu's PostgreSQL
# engine (durable, with truthful watermarks; the workspace run uses its memory engine).
# With arguments, runs `cargo test --workspace` with them instead (SVC_TEST_TANSU_ENGINE=postgres picks
# the PostgreSQL engine for the Kafka tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh
if [ $# -gt 0 ]; then
  exec cargo test --workspace "$@"
fi
status=0
cargo test --workspace --no-fail-fast || status=$?
echo "the Kafka suites on tansu's PostgreSQL engine" >&2
SVC_TEST_TANSU_ENGINE=postgres cargo test --no-fail-fast -p eventlog --test kafka || status=$?
SVC_TEST_TANSU_ENGINE=postgres cargo test --no-fail-fast -p tests --test integration e2e::kafka || status=$?
exit "$status"
