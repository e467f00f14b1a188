//! The scale-out topology's helpers, for the tests that run `svc ingest`, `svc project`
//! and `svc serve` as processes (`tests/topology.rs`, `tests/broker_fault.rs`).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{enc, svc_bin, Backend, Projector, Service};

/// The papers of the committed sample (2,990), then as many more as asked for, made from
/// the first ones with new ids and titles.
pub fn papers(total: usize) -> Vec<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(crate::sample_papers()).unwrap();
    let sample: Vec<String> = std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines().map(Result::unwrap).collect();
    let extra = (0..total.saturating_sub(sample.len())).map(|i| {
        let mut paper: Value = serde_json::from_str(&sample[i % sample.len()]).unwrap();
        paper["id"] = Value::from(format!("9999.{i:05}"));
        paper["title"] = Value::from(format!("Replica {i}: {}", paper["title"].as_str().unwrap()));
        paper.to_string()
    });
    sample.iter().cloned().chain(extra).take(total).collect()
}

/// Writes papers `from..to` of `all` to a plain JSON-lines file.
pub fn write_slice(all: &[String], dest: &Path, from: usize, to: usize) {
    std::fs::write(dest, all[from..to].join("\n") + "\n").unwrap();
}

/// Writes `all[from..to]` of each `(from, to)` of `slices` to `dir/part<i>.jsonl`: the paths.
pub fn write_parts(all: &[String], dir: &Path, slices: &[(usize, usize)]) -> Vec<std::path::PathBuf> {
    slices
        .iter()
        .enumerate()
        .map(|(i, (from, to))| {
            let path = dir.join(format!("part{i}.jsonl"));
            write_slice(all, &path, *from, *to);
            path
        })
        .collect()
}

/// Starts an `svc` command of the backend without waiting for it.
pub fn spawn_svc(backend: &Backend, args: &[&str]) -> SvcProcess {
    let mut command = Command::new(svc_bin());
    command.args(args).envs(backend.env()).env("RUST_LOG", "warn");
    SvcProcess::spawn(command)
}

/// A command (`svc`'s, mostly) running as a process of its own, its output read as it comes: a pipe
/// nobody reads blocks the process once it holds 64 KiB (a few hundred lines of warnings
/// from a driver retrying).
pub struct SvcProcess {
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

impl SvcProcess {
    /// Starts `command` with its output piped and read by a thread per pipe.
    pub fn spawn(mut command: Command) -> SvcProcess {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stdout = read_on_a_thread(child.stdout.take().unwrap());
        let stderr = read_on_a_thread(child.stderr.take().unwrap());
        SvcProcess { child, stdout, stderr }
    }

    /// Kills it (`SIGKILL`).
    pub fn kill(&mut self) -> std::io::Result<()> {
        self.child.kill()
    }

    /// Its exit status if it has ended.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits for it to end: its status and everything it printed.
    pub fn wait_with_output(mut self) -> std::io::Result<Output> {
        let status = self.child.wait()?;
        let stdout = self.stdout.join().unwrap_or_default();
        let stderr = self.stderr.join().unwrap_or_default();
        Ok(Output { status, stdout, stderr })
    }
}

/// Reads `pipe` to its end on a thread of its own: what it read.
fn read_on_a_thread(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        out
    })
}

/// Every submission URI a query node's search finds, in the order of its date sort.
pub async fn all_uris(node: &Service) -> Vec<String> {
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = "/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=date&limit=100".to_owned();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={}", enc(c)));
        }
        let (status, _, page) = node.get(&path).await.unwrap();
        assert_eq!(status, 200, "{page}");
        uris.extend(page["submissions"].as_array().unwrap().iter().map(|s| s["uri"].as_str().unwrap().to_owned()));
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return uris,
        }
    }
}

/// Asserts that both nodes know exactly `expected` submissions, by search and by detail,
/// and answer every detail read identically; returns the URIs.
pub async fn assert_complete_and_equal(q1: &Service, q2: &Service, expected: usize) -> Vec<String> {
    let uris = all_uris(q1).await;
    assert_eq!(uris.len(), expected, "query node 1 finds every submission once");
    assert_eq!(all_uris(q2).await, uris, "both query nodes find the same submissions");
    let (first, second) = tokio::join!(details(q1, &uris), details(q2, &uris));
    for ((uri, (s1, b1)), (s2, b2)) in uris.iter().zip(first).zip(second) {
        assert_eq!(s1, 200, "{uri}: {}", String::from_utf8_lossy(&b1));
        assert_eq!((s1, &b1), (s2, &b2), "both query nodes answer {uri} the same");
    }
    uris
}

/// `getSubmission` of each of `uris` on `node`, in their order, a few requests at a time
/// (a query node answers several at once; one by one, thousands of them took minutes).
pub async fn details(node: &Service, uris: &[String]) -> Vec<(u16, Vec<u8>)> {
    use futures::StreamExt;
    futures::stream::iter(uris)
        .map(|uri| async move { node.get_bytes(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri))).await.unwrap() })
        .buffered(8)
        .collect()
        .await
}

/// Waits until `projector` logs that it owns some partitions.
pub fn wait_owns_partitions(projector: &Projector) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = projector.log();
        let last = log.lines().rfind(|l| l.contains("now owns these partitions")).unwrap_or_default().to_owned();
        if last.contains("partitions={") && !last.contains("partitions={}") {
            return;
        }
        assert!(Instant::now() < deadline, "the projector owns no partition after 60 s; its log:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
