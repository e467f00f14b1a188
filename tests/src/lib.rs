//! The harness of svc's end-to-end tests: builds the `svc` binary once, runs its
//! subcommands on a temporary data directory, and talks to `svc up` over HTTP.

pub mod browser;
pub mod pds;
pub mod tamper;
pub mod topology;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_owned()
}

/// The committed sample of papers.
pub fn sample_papers() -> PathBuf {
    workspace_root().join("fixtures/arxiv-sample-3k.jsonl.gz")
}

/// The `svc` binary: `SVC_BIN` if set, else built (once per test process) with cargo.
///
/// The build selects the whole workspace and its tests, as `cargo test --workspace` does,
/// so cargo resolves the same features and reuses every library that run already built.
/// A plain `cargo build --bin svc` leaves out the dev-dependencies' features and would
/// compile a second copy of about seventy crates: minutes of CI time and gigabytes of disk.
/// The variables cargo sets for a test binary are removed from the build's environment:
/// build scripts that watch them (`ring`'s watches `CARGO_PKG_NAME` and `OUT_DIR`) would
/// otherwise rerun, and every crate above them would compile again, here and in the next
/// `cargo test`.
pub fn svc_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("SVC_BIN") {
            return PathBuf::from(bin);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(set_for_a_test_binary) {
                build.env_remove(name);
            }
        }
        let status = build
            .args(["build", "--workspace", "--tests", "--bin", "svc"])
            .current_dir(workspace_root())
            .status()
            .expect("failed to run cargo build for the svc binary");
        assert!(status.success(), "cargo build --workspace --tests --bin svc failed");
        let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| workspace_root().join("target"));
        target.join("debug/svc")
    })
}

/// Whether cargo sets the environment variable `name` for the test binaries it runs (not
/// for itself): <https://doc.rust-lang.org/cargo/reference/environment-variables.html>.
fn set_for_a_test_binary(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_EXE_"].iter().any(|p| name.starts_with(p))
        || ["OUT_DIR", "CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "CARGO_RUSTC_CURRENT_DIR"].contains(&name)
}

/// Runs an `svc` subcommand to completion and returns its stdout.
pub fn svc(args: &[&str]) -> Result<String> {
    svc_with_env(args, &[])
}

/// The topic of the Kafka backends.
pub const TOPIC: &str = "svc.e2e";

/// The event log and store the `svc` processes of a test use.
pub struct Backend {
    /// `embedded`, `kafka` or `kafka+scylla`.
    pub name: &'static str,
    env: Vec<(String, String)>,
    _broker: Option<eventlog::tansu::Tansu>,
    _cql: Option<CqlTestServer>,
}

/// The kassandra CQL test server (in-memory), serving on a thread of this test process
/// until dropped. It speaks CQL v4 but only a subset of the language: see
/// `store/tests/scylla.rs` for what the ScyllaDB store can and cannot be tested with on it.
pub struct CqlTestServer {
    /// `127.0.0.1:<port>`.
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl CqlTestServer {
    /// Starts a server with no data.
    pub fn start() -> CqlTestServer {
        use kassandra_tester::{kassandra::session::KassandraSession, KassandraTester};
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime for the CQL test server");
            let mut stopped = Some(stopped);
            let _ = runtime.block_on(KassandraTester::new(KassandraSession::new()).in_scope(move |addr| {
                let _ = addr_tx.send(addr);
                let stopped = stopped.take();
                async move {
                    if let Some(stopped) = stopped {
                        let _ = stopped.await;
                    }
                    Ok::<(), ()>(())
                }
            }));
        });
        let addr = addr_rx.recv().expect("the CQL test server starts");
        CqlTestServer { addr, stop: Some(stop) }
    }
}

impl Drop for CqlTestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Backend {
    /// The embedded log in the data directory.
    pub fn embedded() -> Backend {
        Backend { name: "embedded", env: Vec::new(), _broker: None, _cql: None }
    }

    /// A Kafka log on a tansu broker of this test's own (stopped when dropped).
    pub fn kafka() -> Backend {
        let broker = eventlog::tansu::Tansu::start();
        let url = format!("{}&topic={TOPIC}", broker.url());
        Backend { name: "kafka", env: vec![("SVC_LOG".into(), url)], _broker: Some(broker), _cql: None }
    }

    /// A Kafka log on a tansu broker and the ScyllaDB store on a CQL test server, both of
    /// this test's own.
    pub fn kafka_scylla() -> Backend {
        let mut backend = Backend::kafka();
        let cql = CqlTestServer::start();
        backend.env.push(("SVC_STORE".into(), format!("scylla://{}/svc_e2e", cql.addr)));
        Backend { name: "kafka+scylla", _cql: Some(cql), ..backend }
    }

    /// [`Backend::kafka_scylla`] with the producers' real batching, under which tansu's
    /// memory engine's high watermarks lag behind its records: svc must read past them.
    pub fn kafka_scylla_batched() -> Backend {
        Backend::kafka_scylla_batched_on(eventlog::tansu::Engine::from_env())
    }

    /// [`Backend::kafka_scylla_batched`] on tansu's PostgreSQL engine: a broker that keeps
    /// its data when it is killed and restarted ([`Backend::broker`]).
    pub fn kafka_scylla_durable() -> Backend {
        Backend { name: "kafka(durable)+scylla", ..Backend::kafka_scylla_batched_on(eventlog::tansu::Engine::Postgres) }
    }

    fn kafka_scylla_batched_on(engine: eventlog::tansu::Engine) -> Backend {
        let broker = eventlog::tansu::Tansu::start_on(engine);
        let url = format!("{}topic={TOPIC}", broker.batched_url());
        let cql = CqlTestServer::start();
        let env = vec![("SVC_LOG".into(), url), ("SVC_STORE".into(), format!("scylla://{}/svc_e2e", cql.addr))];
        Backend { name: "kafka(batched)+scylla", env, _broker: Some(broker), _cql: Some(cql) }
    }

    /// This backend's broker, to kill and restart.
    ///
    /// # Panics
    /// On a backend without one.
    pub fn broker(&mut self) -> &mut eventlog::tansu::Tansu {
        self._broker.as_mut().expect("a Kafka backend")
    }

    /// The same backend with one more environment variable for the `svc` processes.
    pub fn with_env(mut self, key: &str, value: &str) -> Backend {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The `kafka://` URL of this backend's log, if it has one.
    pub fn log_url(&self) -> Option<&str> {
        self.env.iter().find(|(k, _)| k == "SVC_LOG").map(|(_, v)| v.as_str())
    }

    /// The environment that selects this backend.
    pub fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    /// Runs an `svc` subcommand on this backend.
    pub fn svc(&self, args: &[&str]) -> Result<String> {
        svc_with_env(args, &self.env())
    }
}

/// Runs an `svc` subcommand with extra environment variables.
pub fn svc_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let out = Command::new(svc_bin()).args(args).envs(env.iter().copied()).env("RUST_LOG", "warn").output().context("failed to run svc")?;
    if !out.status.success() {
        bail!("svc {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Writes the first `n` papers of the sample (or of `src`) to a plain JSON-lines file.
pub fn write_papers(dest: &Path, n: usize) -> Result<()> {
    let file = std::fs::File::open(sample_papers())?;
    let lines = BufReader::new(flate2::read::GzDecoder::new(file)).lines();
    let mut out = std::fs::File::create(dest)?;
    for line in lines.take(n) {
        writeln!(out, "{}", line?)?;
    }
    Ok(())
}

/// Runs the tests of one process that take it one at a time: each real-PDS scenario starts
/// a PDS, svc and, on Kafka + CQL, a broker and a CQL server, more than two cores serve at
/// once within the scenarios' deadlines. (An async lock: it is held across the scenario's
/// awaits, and a test that panics releases it as it unwinds.)
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// A free loopback port, never one this process was given before (see
/// [`eventlog::tansu::free_port`]).
pub fn free_port() -> u16 {
    eventlog::tansu::free_port()
}

/// A running `svc up`, killed when dropped.
pub struct Service {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    port: u16,
    data_dir: PathBuf,
    log_path: PathBuf,
    /// One client for every request to it: its connections are kept and reused (a client
    /// per request, as `reqwest::get` makes, costs a new client and connection each time).
    http: reqwest::Client,
}

impl Service {
    /// Starts `svc up` on `data_dir` and waits until it serves (liveness; readiness waits
    /// for the read models to be complete: [`Service::wait_caught_up`]).
    pub async fn start(data_dir: &Path) -> Result<Service> {
        Service::start_on(data_dir, free_port()).await
    }

    /// Starts `svc up` on a given port.
    pub async fn start_on(data_dir: &Path, port: u16) -> Result<Service> {
        Service::start_with(data_dir, port, &Backend::embedded()).await
    }

    /// Starts `svc up` on a given port and backend.
    pub async fn start_with(data_dir: &Path, port: u16, backend: &Backend) -> Result<Service> {
        Service::start_role("up", data_dir, port, backend).await
    }

    /// Starts `svc ROLE` (`up` or `serve`) on a given port and backend.
    pub async fn start_role(role: &str, data_dir: &Path, port: u16, backend: &Backend) -> Result<Service> {
        Service::start_args(role, data_dir, port, backend, &[]).await
    }

    /// Starts `svc ROLE` with extra flags.
    pub async fn start_args(role: &str, data_dir: &Path, port: u16, backend: &Backend, extra: &[&str]) -> Result<Service> {
        let log_path = data_dir.with_extension(format!("{port}.log"));
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(svc_bin())
            .args([role, "--data-dir"])
            .arg(data_dir)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .env("RUST_LOG", "info,scylla=error")
            // Tests call far more often than a person: limits are off unless a test passes
            // `--rate-limits`.
            .env("SVC_RATE_LIMITS", "off")
            .envs(backend.env())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("failed to start svc {role}"))?;
        let svc = Service {
            child,
            base: format!("http://127.0.0.1:{port}"),
            port,
            data_dir: data_dir.to_owned(),
            log_path,
            http: reqwest::Client::new(),
        };
        svc.wait_ready().await?;
        Ok(svc)
    }

    /// What it has logged so far (stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether its process is still running (it has not exited).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    async fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = self.http.get(format!("{}/health/liveness", self.base)).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                bail!("svc did not become ready; its log:\n{}", std::fs::read_to_string(&self.log_path).unwrap_or_default());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every projection has caught up with the log (at most 120 s).
    pub async fn wait_caught_up(&self) -> Result<()> {
        self.wait_caught_up_within(Duration::from_secs(120)).await
    }

    /// Waits until every projection has caught up with the log, at most `limit`.
    pub async fn wait_caught_up_within(&self, limit: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            // A live node always answers: a refused or broken connection fails the wait.
            let body: Value = async { self.http.get(format!("{}/health/readiness", self.base)).send().await?.json().await }.await.map_err(
                |e: reqwest::Error| anyhow::anyhow!("readiness unanswered {:.2} s into the wait: {e:?}", started.elapsed().as_secs_f64()),
            )?;
            let projections = body["projections"].as_array().cloned().unwrap_or_default();
            if !projections.is_empty() && projections.iter().all(|p| p["caughtUp"] == true && p["ready"] == true) {
                return Ok(());
            }
            if started.elapsed() > limit {
                bail!("projections did not catch up: {body}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How the process ended, if it has.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// GET a path; returns status, headers and the parsed JSON body.
    pub async fn get(&self, path: &str) -> Result<(u16, reqwest::header::HeaderMap, Value)> {
        let r = self.http.get(format!("{}{}", self.base, path)).send().await?;
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await?;
        let body = serde_json::from_str(&text).with_context(|| format!("{path} answered non-JSON: {text}"))?;
        Ok((status, headers, body))
    }

    /// POST a JSON body to a path, with `Authorization: Bearer <token>` when a token is given;
    /// returns status and the parsed JSON body.
    pub async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Result<(u16, Value)> {
        let mut request = self.http.post(format!("{}{}", self.base, path)).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let r = request.send().await?;
        let status = r.status().as_u16();
        let text = r.text().await?;
        let body = serde_json::from_str(&text).with_context(|| format!("{path} answered non-JSON: {text}"))?;
        Ok((status, body))
    }

    /// GET a path and return the raw body bytes (for byte-for-byte comparisons).
    pub async fn get_bytes(&self, path: &str) -> Result<(u16, Vec<u8>)> {
        let r = self.http.get(format!("{}{}", self.base, path)).send().await?;
        Ok((r.status().as_u16(), r.bytes().await?.to_vec()))
    }

    /// Its resident set in MB (`VmRSS`; Linux).
    pub fn resident_mb(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb / 1024)
    }

    /// The files under its data directory it maps though they were deleted (Linux): a
    /// search segment merged away but still held by a reader, its pages resident and its
    /// disk space not given back.
    pub fn mapped_deleted_files(&self) -> Vec<String> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.child.id())).unwrap_or_default();
        let dir = self.data_dir.canonicalize().unwrap_or_else(|_| self.data_dir.clone());
        let mut files: Vec<String> = maps
            .lines()
            .filter(|l| l.ends_with(" (deleted)") && l.contains(dir.to_string_lossy().as_ref()))
            .filter_map(|l| l.split_whitespace().nth(5).map(str::to_owned))
            .collect();
        files.dedup();
        files
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the process gracefully (SIGTERM) and waits for it.
    pub fn stop(mut self) -> Result<()> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                bail!("svc did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `svc project` (no API), killed when dropped.
pub struct Projector {
    child: Child,
    /// Its log (stderr).
    pub log_path: PathBuf,
}

impl Projector {
    /// Starts `svc project` in `work_dir`, logging to `<work_dir>/<name>.log`.
    pub fn start(name: &str, work_dir: &Path, backend: &Backend) -> Result<Projector> {
        let log_path = work_dir.join(format!("{name}.log"));
        let child = Command::new(svc_bin())
            .args(["project", "--data-dir"])
            .arg(work_dir)
            .env("RUST_LOG", "info,scylla=error")
            .envs(backend.env())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path)?)
            .spawn()
            .context("failed to start svc project")?;
        Ok(Projector { child, log_path })
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Projector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `pub.svc.eprint.submission` create event as another producer would append it (a fixed
/// CID and revision), for tests that put records straight into the log.
pub fn submission_event(did: &str, rkey: &str, record: Value, note: &str) -> event_schema::NewEvent {
    use event_schema::{NewEvent, Payload, RecordWrite, Source};
    NewEvent::repo(
        Source::Manual { note: note.into() },
        Payload::RecordCreate(RecordWrite {
            did: did.into(),
            collection: lexicons::SUBMISSION.into(),
            rkey: rkey.into(),
            cid: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".into(),
            rev: "3lbxqprzvpc2b".into(),
            record,
        }),
    )
}

/// URL-encodes one path segment or query value.
/// A session of `admin` on `node` (whose service DID is `service_did`): the code
/// `/oauth/authorize` makes after a PDS's service-auth token (no PDS here), minted with the
/// node's key file `keys` (`auth-keys.json` in its data directory, shared by query nodes),
/// exchanged with its PKCE verifier. The access token.
pub async fn admin_session(node: &Service, keys: &Path, service_did: &str, admin: &str) -> String {
    use data_encoding::BASE64URL_NOPAD;
    use sha2::{Digest, Sha256};
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let now = chrono::Utc::now().timestamp();
    let claims = query_api::identity::tokens::LoginClaims {
        iss: service_did.into(),
        sub: admin.into(),
        aud: service_did.into(),
        exp: now + 60,
        iat: now,
        jti: format!("session-{}", free_port()),
        challenge: Some(BASE64URL_NOPAD.encode(&Sha256::digest(verifier.as_bytes()))),
        handle: None,
    };
    let code = query_api::identity::keys::KeySet::load_or_create(keys).unwrap().sign(query_api::identity::tokens::CODE_TYP, &claims);
    let body = serde_json::json!({"grant_type": "authorization_code", "code": code, "code_verifier": verifier});
    let (status, tokens) = node.post("/oauth/token", None, &body).await.unwrap();
    assert_eq!(status, 200, "login: {tokens}\nthe node's last log lines:\n{}", last_lines(&node.log(), 40));
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// The last `n` lines of `text`, in order (a process's log, for a failure's message).
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
