//! A real browser for the tests: Debian's Chromium, headless, driven over WebDriver by its
//! `chromedriver` (both from the `chromium` and `chromium-driver` packages that
//! `scripts/peers.sh` installs), through the `fantoccini` client.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};

use crate::free_port;

/// A running `chromedriver`, killed when dropped, and a browser session on it.
pub struct Browser {
    driver: Child,
    /// The session: every command of a test goes through it.
    pub client: Client,
}

impl Browser {
    /// Starts `chromedriver` (`CHROMEDRIVER`, else from `PATH`) and opens a headless
    /// Chromium session (`CHROMIUM`, else `/usr/bin/chromium`) that records the page's
    /// console, so a test can read what the page logged ([`Browser::console`]).
    pub async fn start() -> Result<Browser> {
        let port = free_port();
        let program = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let driver = Command::new(&program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("failed to start {program} (apt-get install chromium chromium-driver; scripts/peers.sh does)"))?;
        let binary = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        });
        let Value::Object(capabilities) = capabilities else { unreachable!("an object") };
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            match ClientBuilder::new(HttpConnector::new()).capabilities(capabilities.clone()).connect(&url).await {
                Ok(client) => break client,
                Err(e) if started.elapsed() > Duration::from_secs(20) => bail!("no browser session from {program}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Ok(Browser { driver, client })
    }

    /// What the page logged to its console since the last call: `(level, message)`, with
    /// Content-Security-Policy violations and failed loads as `SEVERE`.
    pub async fn console(&self) -> Result<Vec<(String, String)>> {
        let entries = self.client.issue_cmd(BrowserLog).await.context("reading the browser's console")?;
        Ok(entries
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| (e["level"].as_str().unwrap_or("").to_owned(), e["message"].as_str().unwrap_or("").to_owned()))
            .collect())
    }

    /// The console's errors since the last call.
    pub async fn console_errors(&self) -> Result<Vec<String>> {
        Ok(self.console().await?.into_iter().filter(|(level, _)| level == "SEVERE").map(|(_, m)| m).collect())
    }

    /// Writes what the browser shows to `<target>/screenshots/<name>.png` (the folder the
    /// README points to), for a reader to see each page as the test left it.
    pub async fn screenshot(&self, name: &str) -> Result<()> {
        let png = self.client.screenshot().await.context("taking a screenshot")?;
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join(format!("{name}.png")), png).context("writing a screenshot")
    }

    /// Ends the session and the driver.
    pub async fn close(mut self) -> Result<()> {
        let closed = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        closed.context("closing the browser session")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Where the browser tests write their screenshots: `target/screenshots` (or under
/// `CARGO_TARGET_DIR`).
pub fn screenshots_dir() -> std::path::PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| crate::workspace_root().join("target"));
    target.join("screenshots")
}

/// chromedriver's command for the console's entries (`goog:loggingPrefs`), outside the W3C
/// protocol: `POST /session/{id}/se/log {"type": "browser"}`.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/se/log", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({"type": "browser"}).to_string()))
    }
}
