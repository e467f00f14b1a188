//! A real Kafka-protocol broker for tests: tansu, started on a free loopback port, on one of
//! its storage engines.
//!
//! - [`Engine::Memory`]: tansu's memory engine. Its binary is `$SVC_TEST_KAFKA_BIN`, else
//!   `.peers/bin/tansu` in the workspace (installed by `scripts/peers.sh`), else `tansu` on
//!   the `PATH`. It loses everything when it stops and misreports high watermarks (see
//!   [`Tansu::url`]).
//! - [`Engine::Postgres`]: tansu's PostgreSQL engine, on a [`Postgres`] server of the
//!   broker's own: durable across the broker's restarts, with watermarks read from a table.
//!   Its binary, built with tansu's `postgres` feature, is `$SVC_TEST_KAFKA_POSTGRES_BIN`,
//!   else `.peers/bin/tansu-postgres`.
//!
//! [`Tansu::start`] takes the engine named by `$SVC_TEST_TANSU_ENGINE` (`memory`, the default,
//! or `postgres`), so one suite runs on either. A test that needs a broker and cannot find
//! it fails with a message saying how to install it. The broker is silent unless
//! `$SVC_TEST_TANSU_LOG` names a file for its log (at the level `$TANSU_LOG` gives, `info`
//! by default).

mod postgres;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use postgres::Postgres;

/// Where a tansu broker keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// In the broker's memory: gone when it stops.
    Memory,
    /// In a PostgreSQL server of the broker's own.
    Postgres,
}

impl Engine {
    /// The engine `$SVC_TEST_TANSU_ENGINE` names; memory when unset.
    ///
    /// # Panics
    /// On any other value.
    pub fn from_env() -> Engine {
        match std::env::var("SVC_TEST_TANSU_ENGINE").as_deref() {
            Err(_) | Ok("" | "memory") => Engine::Memory,
            Ok("postgres") => Engine::Postgres,
            Ok(other) => panic!("SVC_TEST_TANSU_ENGINE is memory or postgres, not {other}"),
        }
    }
}

/// A running tansu broker, stopped when dropped (with its PostgreSQL server, if any).
pub struct Tansu {
    child: Option<Child>,
    addr: SocketAddr,
    engine: Engine,
    // Declared after the broker: dropped after it.
    postgres: Option<Postgres>,
}

fn workspace_bin(name: &str) -> Option<PathBuf> {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers/bin").join(name);
    peers.is_file().then_some(peers)
}

fn binary(engine: Engine) -> Option<PathBuf> {
    match engine {
        Engine::Memory => std::env::var_os("SVC_TEST_KAFKA_BIN").map(PathBuf::from).or_else(|| workspace_bin("tansu")).or_else(|| {
            std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("tansu")).find(|p| p.is_file()))
        }),
        Engine::Postgres => std::env::var_os("SVC_TEST_KAFKA_POSTGRES_BIN").map(PathBuf::from).or_else(|| workspace_bin("tansu-postgres")),
    }
}

impl Tansu {
    /// Starts a broker on the engine `$SVC_TEST_TANSU_ENGINE` names (see [`Engine::from_env`])
    /// and waits until it accepts connections.
    ///
    /// # Panics
    /// When the broker (or its PostgreSQL) is not found or does not start: tests need the
    /// real broker.
    pub fn start() -> Tansu {
        Tansu::start_on(Engine::from_env())
    }

    /// Starts a broker on `engine` (see [`Tansu::start`]).
    pub fn start_on(engine: Engine) -> Tansu {
        let postgres = (engine == Engine::Postgres).then(Postgres::start);
        let port = free_port();
        let mut broker = Tansu { child: None, addr: ([127, 0, 0, 1], port).into(), engine, postgres };
        broker.restart();
        broker
    }

    /// Starts the broker again after [`Tansu::kill`], on the same port and storage.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the broker is running");
        let bin = binary(self.engine).unwrap_or_else(|| {
            panic!(
                "the Kafka backend tests need a Kafka-protocol broker ({:?} engine) and none was found: run `scripts/peers.sh` \
                 (installs tansu into .peers/bin) or set SVC_TEST_KAFKA_BIN / SVC_TEST_KAFKA_POSTGRES_BIN",
                self.engine
            )
        });
        let url = format!("tcp://{}", self.addr);
        let storage = self.postgres.as_ref().map_or_else(|| "memory://tansu/".to_owned(), Postgres::url);
        // `$SVC_TEST_TANSU_LOG` names a file to keep the broker's own log in (its level from
        // `$TANSU_LOG`, as `RUST_LOG` filters), for a test that needs the broker's side told.
        let log = std::env::var_os("SVC_TEST_TANSU_LOG").map(|path| {
            std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap_or_else(|e| panic!("failed to open {path:?}: {e}"))
        });
        let mut command = Command::new(&bin);
        command.args(["broker", "--listener-url", &url, "--advertised-listener-url", &url, "--storage-engine", &storage]);
        match log {
            Some(file) => {
                let level = std::env::var("TANSU_LOG").unwrap_or_else(|_| "info".into());
                command.env("RUST_LOG", level).stdout(file.try_clone().expect("a log file handle")).stderr(file)
            }
            None => command.arg("--silent").stdout(Stdio::null()).stderr(Stdio::null()),
        };
        let child = command.spawn().unwrap_or_else(|e| panic!("failed to start {}: {e}", bin.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "tansu ({}) did not listen on {} within 15 s", bin.display(), self.addr);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the broker at once (SIGKILL), as a crash would; its PostgreSQL server, if any,
    /// keeps running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The engine this broker runs on.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The broker's `kafka://` URL, with the client settings tansu needs.
    ///
    /// tansu 0.6's memory engine reports a partition's high watermark as the base offset of
    /// its last record batch plus one, so a batch of several records hides all but its first
    /// from readers that trust the watermark (Kafka reports the last offset plus one). One
    /// record per producer batch keeps the two equal (the PostgreSQL engine needs no such
    /// setting; it is harmless there).
    pub fn url(&self) -> String {
        format!("kafka://{}?rdkafka.batch.num.messages=1", self.addr)
    }

    /// The broker's `kafka://` URL with the producer's real batching, under which the memory
    /// engine's watermarks lag behind its records (see [`Tansu::url`]): for the tests of
    /// readers that must not trust them.
    pub fn batched_url(&self) -> String {
        format!("kafka://{}?", self.addr)
    }

    /// What an independent client (a plain librdkafka consumer, not svc's reader) reads of
    /// `topic`'s `partitions`: every record as (partition, offset, value), sorted by position,
    /// until every partition was read to the high watermark the broker gave at the start and
    /// then nothing more came for 3 s (the memory engine's watermarks lag behind its records),
    /// or two minutes passed. A pause of 3 s alone, on a busy machine, stopped it early.
    pub fn independent_read(&self, topic: &str, partitions: u32) -> Vec<(u32, u64, Vec<u8>)> {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        use rdkafka::Message;
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", self.addr.to_string())
            .set("group.id", "independent-reader")
            .set("enable.auto.commit", "false")
            .create()
            .expect("an independent consumer");
        let mut tpl = rdkafka::TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition_offset(topic, p as i32, rdkafka::Offset::Beginning).expect("a partition to read");
        }
        consumer.assign(&tpl).expect("the independent consumer's partitions");
        let ends: Vec<i64> = (0..partitions)
            .map(|p| consumer.fetch_watermarks(topic, p as i32, Duration::from_secs(10)).map_or(0, |(_, high)| high))
            .collect();
        let mut next = vec![0i64; partitions as usize];
        let mut seen = Vec::new();
        let mut last = Instant::now();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                if let Some(n) = next.get_mut(m.partition() as usize) {
                    *n = (*n).max(m.offset() + 1);
                }
                seen.push((m.partition() as u32, m.offset() as u64, m.payload().unwrap_or_default().to_vec()));
                last = Instant::now();
            }
            let reached = next.iter().zip(&ends).all(|(n, end)| n >= end);
            if (reached && last.elapsed() >= Duration::from_secs(3)) || Instant::now() >= deadline {
                break;
            }
        }
        seen.sort();
        seen
    }

    /// `host:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A free port on the loopback interface, never one this process was given before: a test
/// that stops a node and starts it again on its port keeps it (while the node is down the
/// port is free, and another test would otherwise be handed it).
///
/// The port is below the kernel's ephemeral range (`ip_local_port_range`): the peer it is
/// for binds it a moment later, and a port from that range could be taken in between by any
/// process's outgoing connection (which is how a PDS once failed to start in CI). Every
/// peer the tests start takes its port from here.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (low, high) = ports_below_the_ephemeral_range();
    let span = u32::from(high - low);
    // A start that differs per process, so two test binaries do not walk the same ports.
    let start = std::process::id().wrapping_mul(7919) % span;
    for step in 0..span {
        let port = low + ((start + step) % span) as u16;
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port in {low}..{high}");
}

/// From 10000 up to the low end of the ephemeral range (32768 when it cannot be read).
fn ports_below_the_ephemeral_range() -> (u16, u16) {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .filter(|&low| low > 12_000)
        .unwrap_or(32_768);
    (10_000, low)
}
