#!/usr/bin/env bash
# The README's test command: installs the real servers the tests need (scripts/peers.sh),
# then runs every test of the workspace. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh
exec cargo test --workspace "$@"
