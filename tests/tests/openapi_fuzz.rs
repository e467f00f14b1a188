//! The OpenAPI document tells the truth: schemathesis (an OpenAPI-driven fuzzer, installed
//! by `scripts/peers.sh`) generates requests from svc's own `/openapi.json` against a seeded
//! svc and checks every answer with all its checks: no server errors, every status and
//! header documented, every response matching its schema, every request the document
//! allows accepted, every request it forbids refused, 405s with `Allow`. It runs three times:
//! as nobody, as a user and as an admin, each signed in with a session made from a real
//! PDS's service-auth token, so the methods that need a caller or the admin role are fuzzed
//! past their 401 and 403. The rejections a schema
//! cannot express are listed, with why, in `scripts/schemathesis.toml`.

use std::process::{Command, Output};

use tests::pds::Pds;
use tests::{free_port, svc, workspace_root, write_papers, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";

/// Runs schemathesis on svc's document, as `bearer` when given.
fn fuzz(service: &Service, dir: &std::path::Path, bearer: Option<&str>) -> Output {
    let st = workspace_root().join(".peers/st/bin/st");
    assert!(st.exists(), "schemathesis is not installed at {}: run scripts/peers.sh", st.display());
    let config = workspace_root().join("scripts/schemathesis.toml");
    let mut command = Command::new(&st);
    command
        .current_dir(dir)
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("{}/openapi.json", service.base), "--checks", "all"])
        .args(["--max-examples", "15", "--seed", "20261123", "--workers", "1", "--generation-database", "none"])
        .args(["--output-sanitize", "false", "--no-color"]);
    if let Some(token) = bearer {
        command.args(["--header", &format!("Authorization: Bearer {token}")]);
    }
    command.output().expect("failed to run schemathesis")
}

fn assert_survived(who: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.lines().filter(|l| l.contains("generated") || l.contains("passed") || l.contains("failures")).collect::<Vec<_>>();
    println!("schemathesis as {who}: {summary:?}");
    assert!(out.status.success(), "schemathesis as {who} found failures:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(" passed"), "schemathesis as {who} ran no test case:\n{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_survives_its_fuzzer() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 300).unwrap();
    svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    // A real PDS for the sessions: a user and an admin log in with its service-auth tokens.
    // The fuzzer's DIDs are made up: the PDS's directory does not know them.
    let pds = Pds::start().unwrap();
    let user = pds.create_account("fuzzuser").await.unwrap();
    let admin = pds.create_account("fuzzadmin").await.unwrap();
    let backend = Backend::embedded()
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", &admin.did);
    let service = Service::start_args(
        "up",
        &data,
        free_port(),
        &backend,
        &[
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

    assert_survived("nobody", &fuzz(&service, dir.path(), None));
    let user_token = pds.svc_session(&service, &user, SERVICE_DID).await;
    assert_survived("a user", &fuzz(&service, dir.path(), Some(&user_token)));
    let admin_token = pds.svc_session(&service, &admin, SERVICE_DID).await;
    assert_survived("an admin", &fuzz(&service, dir.path(), Some(&admin_token)));
}
