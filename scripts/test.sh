#!/usr/bin/env bash
# The README's test command: installs the real servers the tests need (scripts/peers.sh),
# then runs every test of the workspace, then the Kafka suites and the topology test again on
# tansu's PostgreSQL engine (durable, with truthful watermarks; the workspace run uses its
# memory engine).
# With arguments, runs `cargo test --workspace` with them instead (SVC_TEST_TANSU_ENGINE=postgres picks
# the PostgreSQL engine for the Kafka tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh
if [ $# -gt 0 ]; then
  exec cargo test --workspace "$@"
fi
status=0
SECONDS=0
cargo test --workspace --no-fail-fast || status=$?
echo "building and running the workspace's tests took ${SECONDS} s; the Kafka suites on tansu's PostgreSQL engine follow" >&2
# `--workspace` keeps the features of the run above (a package alone would resolve its own
# and compile again); only eventlog has a `kafka` test and only tests has `e2e::kafka` and
# `topology::` ones (the takeover of a killed projector's partitions: tansu's group
# coordinator, patched by scripts/peers.sh).
SVC_TEST_TANSU_ENGINE=postgres cargo test --workspace --no-fail-fast --test kafka || status=$?
SVC_TEST_TANSU_ENGINE=postgres cargo test --workspace --no-fail-fast --test integration -- e2e::kafka topology:: || status=$?
echo "building and running every test took ${SECONDS} s" >&2
exit "$status"
