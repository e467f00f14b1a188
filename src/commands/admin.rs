//! `svc admin`: the admin API (`pub.svc.admin.*`) from a shell, over HTTP, with an admin's
//! credential. Operations are named as in the contract; the built-in lexicons say whether
//! each is a query or a procedure and what type each parameter has. A trigger's operation
//! is followed with a progress bar (or log lines) until it ends.

use std::time::Duration;

use anyhow::{bail, Context as _};
use data_encoding::BASE64URL_NOPAD;
use lexicons::Lexicons;
use rand::RngCore;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::config::{AdminArgs, AdminCommand};
use crate::progress::Progress;

/// Runs `svc admin …`.
pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    // Some procedures answer once their work is done (`createSnapshot` of a large index).
    let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).timeout(Duration::from_secs(900)).build()?;
    let url = args.url.trim_end_matches('/').to_owned();
    match args.command {
        AdminCommand::Login { pds, identifier, password } => login(&http, &url, pds.trim_end_matches('/'), &identifier, &password).await,
        AdminCommand::Call(words) => {
            let token = args.token.context("an admin credential is needed: --token or SVC_ADMIN_TOKEN (see `svc admin login`)")?;
            call(&http, &url, &token, &words).await
        }
    }
}

/// The NSID of an operation named `name` (`getOverview`, or a whole NSID).
fn nsid_of(name: &str) -> String {
    if name.contains('.') {
        name.to_owned()
    } else {
        format!("pub.svc.admin.{name}")
    }
}

/// A `name=value` typed by the method's lexicon: integers and booleans where it says so.
fn typed(schema: Option<&Value>, value: &str) -> Value {
    match schema.and_then(|s| s["type"].as_str()) {
        Some("integer") => value.parse::<i64>().map(Value::from).unwrap_or_else(|_| json!(value)),
        Some("boolean") => value.parse::<bool>().map(Value::from).unwrap_or_else(|_| json!(value)),
        _ => json!(value),
    }
}

async fn call(http: &reqwest::Client, url: &str, token: &str, words: &[String]) -> anyhow::Result<()> {
    let (name, rest) = words.split_first().context("name an operation, e.g. `svc admin getOverview`")?;
    let wait = !rest.iter().any(|w| w == "--no-wait");
    let nsid = nsid_of(name);
    let lexicons = Lexicons::builtin();
    let main = lexicons.document(&nsid).and_then(|d| d.pointer("/defs/main")).with_context(|| format!("no operation {nsid}"))?;
    let procedure = main["type"] == "procedure";
    let fields = if procedure { main.pointer("/input/schema/properties") } else { main.pointer("/parameters/properties") };
    let mut pairs = Map::new();
    for word in rest.iter().filter(|w| *w != "--no-wait") {
        let (k, v) = word.split_once('=').with_context(|| format!("{word:?}: parameters are name=value"))?;
        pairs.insert(k.to_owned(), typed(fields.and_then(|f| f.get(k)), v));
    }
    let endpoint = format!("{url}/xrpc/{nsid}");
    let request = if procedure {
        http.post(&endpoint).json(&Value::Object(pairs))
    } else {
        let query: Vec<(String, String)> =
            pairs.into_iter().map(|(k, v)| (k, v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))).collect();
        http.get(&endpoint).query(&query)
    };
    let answer = send(request.bearer_auth(token)).await?;
    println!("{}", serde_json::to_string_pretty(&answer)?);
    if let (Some(id), true) = (answer["operationId"].as_str(), wait) {
        follow(http, url, token, id).await?;
    }
    Ok(())
}

/// Sends a request; the JSON answer, or an error with the API's envelope.
async fn send(request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
    let response = request.send().await.context("the node did not answer")?;
    let status = response.status();
    let text = response.text().await?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        bail!("HTTP {status}: {}", serde_json::to_string(&body)?);
    }
    Ok(body)
}

/// Follows an operation until it ends: a progress bar (records processed of the total) on
/// a terminal, log lines otherwise; fails unless it completed.
async fn follow(http: &reqwest::Client, url: &str, token: &str, id: &str) -> anyhow::Result<()> {
    let progress = Progress::new("operation", "events", 0);
    loop {
        let status = send(http.get(format!("{url}/xrpc/pub.svc.admin.getBackfillStatus")).query(&[("id", id)]).bearer_auth(token)).await?;
        let op = &status["operation"];
        if let Some(total) = op["recordsTotal"].as_u64() {
            progress.set_total(total);
        }
        progress.set(op["recordsProcessed"].as_u64().unwrap_or(0));
        match op["status"].as_str() {
            Some("running") => tokio::time::sleep(Duration::from_millis(500)).await,
            Some("completed") => {
                progress.finish();
                println!("{}", serde_json::to_string_pretty(op)?);
                return Ok(());
            }
            other => {
                progress.finish();
                println!("{}", serde_json::to_string_pretty(op)?);
                bail!("the operation ended {}", other.unwrap_or("in an unknown state"));
            }
        }
    }
}

/// `svc admin login`: a PDS session, a service-auth token for svc's authorize step, and
/// the PKCE code exchange; prints svc's tokens.
async fn login(http: &reqwest::Client, url: &str, pds: &str, identifier: &str, password: &str) -> anyhow::Result<()> {
    let session = send(
        http.post(format!("{pds}/xrpc/com.atproto.server.createSession")).json(&json!({"identifier": identifier, "password": password})),
    )
    .await
    .context("logging in to the PDS")?;
    let pds_jwt = session["accessJwt"].as_str().context("the PDS gave no accessJwt")?;
    let svc_did =
        send(http.get(format!("{url}/.well-known/did.json"))).await?["id"].as_str().context("svc's DID document has no id")?.to_owned();
    let proof = send(
        http.get(format!("{pds}/xrpc/com.atproto.server.getServiceAuth"))
            .query(&[("aud", svc_did.as_str()), ("lxm", query_api::auth::oauth::AUTHORIZE_LXM)])
            .bearer_auth(pds_jwt),
    )
    .await
    .context("asking the PDS for a service-auth token")?;
    let proof = proof["token"].as_str().context("the PDS gave no token")?;
    let mut secret = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut secret);
    let verifier = BASE64URL_NOPAD.encode(&secret);
    let challenge = BASE64URL_NOPAD.encode(&Sha256::digest(verifier.as_bytes()));
    let code = send(
        http.post(format!("{url}/oauth/authorize"))
            .bearer_auth(proof)
            .json(&json!({"code_challenge": challenge, "code_challenge_method": "S256"})),
    )
    .await?;
    let body = json!({"grant_type": "authorization_code", "code": code["code"], "code_verifier": verifier});
    let tokens = send(http.post(format!("{url}/oauth/token")).json(&body)).await?;
    if tokens["error"] == "mfa_required" {
        bail!("this account has MFA on: finish the login with /oauth/mfa/verify (mfa_token {})", tokens["mfa_token"]);
    }
    println!("{}", serde_json::to_string(&tokens)?);
    Ok(())
}
