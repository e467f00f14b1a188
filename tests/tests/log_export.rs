//! `svc log export` read back by an independent reader (pyarrow, from PyPI): the Parquet
//! file of a seeded log holds every event `svc log tail` prints, with the same positions;
//! JSON lines, a stretch between two cursors, filters; exported while svc runs, on the
//! embedded log (opened to read only beside it) and on Kafka.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use tests::{workspace_root, write_papers, Backend, Service};

const PAPERS: usize = 300;

/// `(partition, offset)` of each row of a Parquet file, as pyarrow reads it, sorted.
fn parquet_positions(file: &Path) -> Vec<(u64, u64)> {
    let python = workspace_root().join(".peers/pyarrow/bin/python");
    assert!(python.exists(), "pyarrow is missing: run scripts/peers.sh");
    let script = "import json, sys, pyarrow.parquet as pq\n\
                  t = pq.read_table(sys.argv[1])\n\
                  assert str(t.schema.field('appended_at').type) == 'timestamp[us, tz=UTC]', t.schema\n\
                  print(json.dumps(sorted(zip(t.column('partition').to_pylist(), t.column('offset').to_pylist()))))";
    let out = Command::new(python).args(["-c", script]).arg(file).output().unwrap();
    assert!(out.status.success(), "pyarrow: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn positions(lines: &str) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| (e["position"]["partition"].as_u64().unwrap(), e["position"]["offset"].as_u64().unwrap()))
        .collect();
    all.sort_unstable();
    all
}

/// The lines of `tail` whose events anyone may see.
fn public(tail: &str) -> String {
    tail.lines()
        .filter(|l| {
            let kind = serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_owned();
            (kind.starts_with("repo.") && kind != "repo.rejected") || kind.starts_with("external.")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Exports with `args` to `file`: the summary line.
fn export(backend: &Backend, data: &Path, file: &Path, args: &[&str]) -> Value {
    let mut all = vec!["log", "export", "--data-dir", data.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push(file.to_str().unwrap());
    serde_json::from_str(backend.svc(&all).unwrap().trim()).unwrap()
}

/// A seeded svc running on `backend` in `dir`: its data directory, the service and the log
/// as `svc log tail` prints it beside it.
async fn running(backend: &Backend, dir: &Path) -> (std::path::PathBuf, Service, String) {
    let data = dir.join("data");
    let papers = dir.join("papers.jsonl");
    write_papers(&papers, PAPERS).unwrap();
    backend.svc(&["seed", "--social", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let svc = Service::start_with(&data, tests::free_port(), backend).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    let tail = backend.svc(&["log", "tail", "--data-dir", data.to_str().unwrap()]).unwrap();
    (data, svc, tail)
}

/// With svc running on the embedded log: the export opens the log to read only beside it.
#[tokio::test(flavor = "multi_thread")]
async fn an_export_of_the_log_reads_back_in_pyarrow_with_every_event() {
    let backend = Backend::embedded();
    let dir = tempfile::tempdir().unwrap();
    let (data, svc, tail) = running(&backend, dir.path()).await;
    let every = positions(&tail);
    assert!(every.len() > PAPERS);

    // The whole log (`--all`: the commands of the scholarly layer too), Parquet; its public
    // events, JSON lines.
    let parquet = dir.path().join("log.parquet");
    let summary = export(&backend, &data, &parquet, &["--format", "parquet", "--all"]);
    assert_eq!(summary["events"].as_u64(), Some(every.len() as u64), "{summary}");
    assert_eq!(parquet_positions(&parquet), every);
    let jsonl = dir.path().join("log.jsonl");
    export(&backend, &data, &jsonl, &[]);
    let exported = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(positions(&exported), positions(&public(&tail)));
    assert!(exported.lines().all(|l| !l.contains("\"kind\":\"command.")));

    // A stretch: from the cursor after the first 100 events of each partition to the end
    // the first export saw; and the records of one collection.
    let first: Vec<u64> = (0..4u64).map(|p| every.iter().filter(|(q, _)| *q == p).nth(100).unwrap().1).collect();
    let from = first.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let to = summary["to"].as_str().unwrap();
    let part = dir.path().join("part.parquet");
    let summary = export(&backend, &data, &part, &["--format", "parquet", "--all", "--from", &from, "--to", to]);
    let expected: Vec<(u64, u64)> = every.iter().copied().filter(|&(p, o)| o >= first[p as usize]).collect();
    assert_eq!((summary["events"].as_u64(), parquet_positions(&part)), (Some(expected.len() as u64), expected));
    let reviews = dir.path().join("reviews.jsonl");
    let summary = export(&backend, &data, &reviews, &["--kinds", "repo.record.create", "--collections", "pub.svc.review.comment"]);
    let lines = std::fs::read_to_string(&reviews).unwrap();
    assert!(summary["events"].as_u64().unwrap() > 0, "{summary}");
    assert!(lines.lines().all(|l| l.contains("\"collection\":\"pub.svc.review.comment\"")));

    // Bad input is refused, naming it.
    let bad = |args: &[&str]| {
        let mut all = vec!["log", "export", "--data-dir", data.to_str().unwrap()];
        all.extend_from_slice(args);
        all.push("/dev/null");
        backend.svc(&all).unwrap_err().to_string()
    };
    assert!(bad(&["--to", "yesterday"]).contains("--to"));
    assert!(bad(&["--format", "csv"]).contains("csv"));
    assert!(bad(&["--kinds", "command.admin"]).contains("--all"));
    // A writer is still refused beside the running svc.
    let papers = dir.path().join("papers.jsonl");
    let refused = backend.svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap_err().to_string();
    assert!(refused.contains("is another svc using it?"), "{refused}");
    svc.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn on_kafka_the_log_is_exported_while_svc_runs() {
    let backend = Backend::kafka();
    let dir = tempfile::tempdir().unwrap();
    let (data, svc, tail) = running(&backend, dir.path()).await;
    let parquet = dir.path().join("log.parquet");
    let summary = export(&backend, &data, &parquet, &["--format", "parquet", "--all"]);
    assert_eq!(summary["events"].as_u64(), Some(tail.lines().count() as u64), "{summary}");
    assert_eq!(parquet_positions(&parquet), positions(&tail));
    svc.stop().unwrap();
}
