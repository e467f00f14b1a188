//! The OpenAPI document tells the truth: schemathesis (an OpenAPI-driven fuzzer, installed
//! by `scripts/peers.sh`) generates requests from svc's own `/openapi.json` against a seeded
//! svc and checks every answer with all its checks: no server errors, every status and
//! header documented, every response matching its schema, every request the document
//! allows accepted, every request it forbids refused, 405s with `Allow`. The rejections a
//! schema cannot express are listed, with why, in `scripts/schemathesis.toml`.

use std::process::Command;

use tests::{free_port, svc, workspace_root, write_papers, Backend, Service};

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_survives_its_fuzzer() {
    let st = workspace_root().join(".peers/st/bin/st");
    assert!(st.exists(), "schemathesis is not installed at {}: run scripts/peers.sh", st.display());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 300).unwrap();
    svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    // DIDs resolve through a directory that is not there: the sync operations then answer
    // what they answer for a DID they cannot reach (the fuzzer's DIDs are made up anyway).
    let service = Service::start_args(
        "up",
        &data,
        free_port(),
        &Backend::embedded(),
        &[
            "--plc-url",
            "http://127.0.0.1:1",
            "--arxiv-url",
            "http://127.0.0.1:1",
            "--arxiv-interval-ms",
            "0",
            "--orcid-url",
            "http://127.0.0.1:1",
            "--ror-url",
            "http://127.0.0.1:1",
            "--wikidata-url",
            "http://127.0.0.1:1",
            "--fast-url",
            "http://127.0.0.1:1",
            "--openalex-url",
            "http://127.0.0.1:1",
            "--crossref-url",
            "http://127.0.0.1:1",
            "--semantic-scholar-url",
            "http://127.0.0.1:1",
            "--openreview-url",
            "http://127.0.0.1:1",
            "--arxiv-pdf-url",
            "http://127.0.0.1:1",
            "--github-url",
            "http://127.0.0.1:1",
            "--gitlab-url",
            "http://127.0.0.1:1",
            "--zenodo-url",
            "http://127.0.0.1:1",
            "--swh-url",
            "http://127.0.0.1:1",
        ],
    )
    .await
    .unwrap();
    service.wait_caught_up().await.unwrap();

    let config = workspace_root().join("scripts/schemathesis.toml");
    let out = Command::new(&st)
        .current_dir(dir.path())
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("{}/openapi.json", service.base), "--checks", "all"])
        .args(["--max-examples", "15", "--seed", "20261123", "--workers", "1", "--generation-database", "none"])
        .args(["--output-sanitize", "false", "--no-color"])
        .output()
        .expect("failed to run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.lines().filter(|l| l.contains("generated") || l.contains("passed") || l.contains("failures")).collect::<Vec<_>>();
    println!("schemathesis: {summary:?}");
    assert!(out.status.success(), "schemathesis found failures:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(" passed"), "schemathesis ran no test case:\n{stdout}");
}
