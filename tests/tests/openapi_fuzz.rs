//! The OpenAPI document tells the truth: schemathesis (an OpenAPI-driven fuzzer, installed
//! by `scripts/peers.sh`) generates requests from svc's own `/openapi.json` against a seeded
//! svc and checks every answer with all its checks: no server errors, every status and
//! header documented, every response matching its schema, every request the document
//! allows accepted, every request it forbids refused, 405s with `Allow`. It runs three times:
//! as nobody on every operation; as a user on those that take a credential (`security`);
//! as an admin on those that need a role (`x-svc-role`): user and admin are signed in with
//! a session made from a real PDS's service-auth token, so the methods that need a caller
//! or the admin role are fuzzed past their 401 and 403. The rejections a schema
//! cannot express are listed, with why, in `scripts/schemathesis.toml`.
//!
//! Then what the fuzzed calls changed is checked against what they asked: every command
//! event the fuzzer's user or admin caused is one a 2xx request to its procedure asked
//! for, naming every account and record it names (the requests from schemathesis's HAR
//! reports, the events from `svc log tail`), and every seeded paper is still served unless
//! such an event named it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use tests::pds::Pds;
use tests::{enc, free_port, svc, workspace_root, write_papers, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";

/// Runs schemathesis on svc's document, as `bearer` when given, on the operations `only`
/// names (every one when empty), writing the requests and answers to `har`.
fn fuzz(service: &Service, dir: &Path, bearer: Option<&str>, only: &[String], har: &Path) -> Output {
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
        .args(["--output-sanitize", "false", "--no-color", "--report", "har"])
        .arg("--report-har-path")
        .arg(har);
    if let Some(token) = bearer {
        command.args(["--header", &format!("Authorization: Bearer {token}")]);
    }
    for name in only {
        command.args(["--include-name", name]);
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
    let seeded: Vec<String> = log_events(&data)
        .into_iter()
        .filter(|e| e["kind"] == "repo.record.create" && e["payload"]["collection"] == "pub.svc.eprint.submission")
        .map(|e| {
            format!("at://{}/pub.svc.eprint.submission/{}", e["payload"]["did"].as_str().unwrap(), e["payload"]["rkey"].as_str().unwrap())
        })
        .collect();
    assert_eq!(seeded.len(), 300);
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

    // Anonymous, every operation; as a user, those that take a credential; as an admin,
    // those that need the role (what a credential changes nowhere else is fuzzed once).
    let (_, _, document) = service.get("/openapi.json").await.unwrap();
    let with_credential = operations_where(&document, |op| op.get("security").is_some());
    let with_role = operations_where(&document, |op| op.get("x-svc-role").is_some());
    assert!(with_role.len() > 20 && with_credential.len() > with_role.len(), "{} and {}", with_credential.len(), with_role.len());
    let har = |who: &str| dir.path().join(format!("{who}.har"));
    assert_survived("nobody", &fuzz(&service, dir.path(), None, &[], &har("nobody")));
    let user_token = pds.svc_session(&service, &user, SERVICE_DID).await;
    assert_survived("a user", &fuzz(&service, dir.path(), Some(&user_token), &with_credential, &har("user")));
    let admin_token = pds.svc_session(&service, &admin, SERVICE_DID).await;
    assert_survived("an admin", &fuzz(&service, dir.path(), Some(&admin_token), &with_role, &har("admin")));

    // What the fuzzer's calls changed.
    let accepted: Vec<Accepted> = ["user", "admin"].iter().flat_map(|who| accepted_requests(&har(who))).collect();
    let fuzzers = BTreeSet::from([user.did.clone(), admin.did.clone()]);
    let missing = papers_not_served(&service, &seeded).await;
    service.stop().unwrap();
    let commands: Vec<Value> = log_events(&data)
        .into_iter()
        .filter(|e| e["source"]["type"] == "command" && e["source"]["caller"].as_str().is_some_and(|c| fuzzers.contains(c)))
        .collect();
    // The test's own two logins (a session from a PDS token) are not the fuzzer's.
    let (logins, commands): (Vec<&Value>, Vec<&Value>) =
        commands.iter().partition(|e| e["source"]["nsid"] == "/oauth/token" && e["payload"]["change"]["method"] == "serviceAuth");
    assert_eq!(logins.len(), 2, "{logins:?}");
    println!("the fuzzed calls appended {} command events", commands.len());
    // An event's key (the account or record it is about) was named by an accepted request to
    // its procedure; anything else it names (what that record pointed at, say) by some
    // accepted request of the fuzzer's.
    let mut named_by_commands = BTreeSet::new();
    for event in commands {
        let (nsid, caller) = (event["source"]["nsid"].as_str().unwrap(), event["source"]["caller"].as_str().unwrap());
        let mut names = BTreeSet::new();
        identifiers(&event["payload"], &mut names);
        names.remove(caller);
        assert!(accepted.iter().any(|r| r.nsid == nsid), "no accepted request to {nsid} asked for {event}");
        let key = event["key"].as_str().unwrap_or_default();
        if key != caller && (key.starts_with("did:") || key.starts_with("at://")) {
            assert!(
                named(accepted.iter().filter(|r| r.nsid == nsid), key),
                "{nsid} changed {key}, which no accepted request to it named: {event}"
            );
        }
        for name in &names {
            assert!(named(accepted.iter(), name), "{nsid} changed {name}, which no accepted request named: {event}");
        }
        named_by_commands.extend(names);
    }
    for uri in &missing {
        let did = uri.trim_start_matches("at://").split('/').next().unwrap();
        assert!(
            named_by_commands.contains(uri) || named_by_commands.contains(did),
            "the seeded paper {uri} is no longer served, and no fuzzed command named it"
        );
    }
}

/// The operations of an OpenAPI document for which `keep` holds, named as schemathesis
/// names them (`GET /xrpc/…`).
fn operations_where(document: &Value, keep: impl Fn(&Value) -> bool) -> Vec<String> {
    let mut names = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if keep(op) {
                names.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    names
}

/// Every event of the log in `data` (svc stopped), as `svc log tail` prints them.
fn log_events(data: &Path) -> Vec<Value> {
    svc(&["log", "tail", "--data-dir", data.to_str().unwrap()]).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A request schemathesis made that svc accepted (2xx): its procedure and its text (URL and
/// body, where a name it asked about appears).
struct Accepted {
    nsid: String,
    text: String,
}

/// Whether one of `requests` names `name` (as it is, or percent-encoded in a query).
fn named<'a>(mut requests: impl Iterator<Item = &'a Accepted>, name: &str) -> bool {
    let encoded = enc(name);
    requests.any(|r| r.text.contains(name) || r.text.contains(&encoded))
}

/// The 2xx requests of a HAR report.
fn accepted_requests(har: &Path) -> Vec<Accepted> {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(har).unwrap()).unwrap();
    let entries = report["log"]["entries"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["response"]["status"].as_u64().is_some_and(|s| (200..300).contains(&s)))
        .filter_map(|e| {
            let url = e["request"]["url"].as_str()?;
            // An XRPC method by its NSID, another route by its path (as events name them).
            let path = url.split('?').next()?;
            let after_scheme = path.split_once("://").map_or(path, |(_, rest)| rest);
            let route = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
            let nsid = route.strip_prefix("/xrpc/").unwrap_or(route);
            let body = e["request"]["postData"]["text"].as_str().unwrap_or_default();
            Some(Accepted { nsid: nsid.to_owned(), text: format!("{url} {body}") })
        })
        .collect()
}

/// Every DID and AT-URI in `v` (the accounts and records an event names).
fn identifiers(v: &Value, into: &mut BTreeSet<String>) {
    match v {
        Value::String(s) if s.starts_with("did:") || s.starts_with("at://") => {
            into.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|i| identifiers(i, into)),
        Value::Object(fields) => fields.values().for_each(|f| identifiers(f, into)),
        _ => {}
    }
}

/// The seeded papers (from the log before svc started) svc no longer serves.
async fn papers_not_served(service: &Service, seeded: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for uri in seeded {
        let (status, _, _) = service.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri))).await.unwrap();
        if status != 200 {
            missing.push(uri.clone());
        }
    }
    missing
}
