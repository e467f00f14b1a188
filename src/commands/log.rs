//! `svc log tail`: the log as JSON lines, read from the log itself or, with `--url`, from a
//! running node's stream (`pub.svc.log.subscribe`).

use std::collections::VecDeque;
use std::io::Write;
use std::time::Duration;

use anyhow::Context as _;
use eventlog::cursor::Cursor;
use eventlog::EventLog;
use futures::StreamExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

use super::{open_log_to_read, require_log};
use crate::config::TailArgs;

/// Events read from one partition at a time.
const TAIL_PAGE: usize = 1000;

/// The longest wait between two attempts to reconnect to a node's stream.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// `svc log tail`.
pub fn tail(args: TailArgs) -> anyhow::Result<()> {
    let cursor: Option<Cursor> = args.from.as_deref().map(|f| f.parse().with_context(|| format!("--from {f:?}"))).transpose()?;
    match &args.url {
        Some(url) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(follow(url, &args, cursor))
        }
        None => {
            if !args.filter.is_empty() {
                anyhow::bail!("--kinds, --collections and --dids filter a node's stream: use them with --url");
            }
            tail_log(&args, &cursor.unwrap_or(Cursor::Offset(0)))
        }
    }
}

/// Every event of every partition from `cursor` on, merged in append order.
fn tail_log(args: &TailArgs, cursor: &Cursor) -> anyhow::Result<()> {
    require_log(&args.data, "read")?;
    let log = open_log_to_read(&args.data)?;
    let from = cursor.resolve(log.as_ref())?;
    let mut events = Merged::new(log.as_ref(), from, None);
    let mut left = args.limit.unwrap_or(usize::MAX);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    while left > 0 {
        let Some(event) = events.next_event()? else { break };
        left -= 1;
        if !print_line(&mut out, &event.to_json())? {
            return Ok(());
        }
    }
    finish(out)
}

/// The events of every partition from `next` up to `until` (exclusive, each partition's
/// offset; the end when `None`), merged in append order (`appendedAt`, then offset, then
/// partition). Each partition is read with its own position, one page at a time, so
/// nothing is skipped or repeated however the events spread over the partitions (offsets
/// are per partition on Kafka).
pub(super) struct Merged<'a> {
    log: &'a dyn EventLog,
    next: Vec<u64>,
    until: Option<Vec<u64>>,
    pages: Vec<VecDeque<event_schema::Envelope>>,
    exhausted: Vec<bool>,
}

impl<'a> Merged<'a> {
    pub(super) fn new(log: &'a dyn EventLog, next: Vec<u64>, until: Option<Vec<u64>>) -> Merged<'a> {
        let partitions = next.len();
        Merged { log, next, until, pages: (0..partitions).map(|_| VecDeque::new()).collect(), exhausted: vec![false; partitions] }
    }

    /// The next event in append order, `None` once every partition is read to its bound.
    pub(super) fn next_event(&mut self) -> anyhow::Result<Option<event_schema::Envelope>> {
        for p in 0..self.next.len() {
            if self.pages[p].is_empty() && !self.exhausted[p] {
                let bound = self.until.as_ref().map_or(u64::MAX, |u| u[p]);
                let page = if self.next[p] >= bound { Vec::new() } else { self.log.read(p as u32, self.next[p], TAIL_PAGE)? };
                match page.last() {
                    Some(last) => self.next[p] = last.position.offset + 1,
                    None => self.exhausted[p] = true,
                }
                self.pages[p].extend(page.into_iter().filter(|e| e.position.offset < bound));
                if self.pages[p].is_empty() {
                    self.exhausted[p] = true;
                }
            }
        }
        let first = (0..self.next.len())
            .filter_map(|p| self.pages[p].front().map(|e| ((e.appended_at, e.position.offset, e.position.partition), p)))
            .min();
        Ok(first.and_then(|(_, p)| self.pages[p].pop_front()))
    }
}

/// Follows a node's stream from `cursor`, printing each event as `svc log tail` does (its
/// `cursor` dropped), reconnecting from the last cursor when the connection drops: nothing
/// is missed or printed twice. Stops at `--limit`, at a closed output, or at an error frame
/// other than `ConsumerTooSlow` (after which it reconnects).
async fn follow(base: &str, args: &TailArgs, cursor: Option<Cursor>) -> anyhow::Result<()> {
    // Live from now without a cursor: the first message's cursor is kept for reconnecting.
    let mut cursor = match cursor {
        None => String::new(),
        Some(Cursor::Offset(o)) => o.to_string(),
        Some(Cursor::Offsets(offsets)) => eventlog::cursor::format(&offsets),
        Some(Cursor::Time(t)) => t.to_rfc3339(),
    };
    let mut left = args.limit.unwrap_or(usize::MAX);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut backoff = Duration::from_millis(250);
    while left > 0 {
        let request = subscribe_request(base, args, &cursor)?;
        let mut socket = match tokio_tungstenite::connect_async(request).await {
            Ok((socket, _)) => socket,
            Err(e) => {
                eprintln!("svc log tail: cannot reach {base} ({e}); trying again in {} s", backoff.as_secs_f64());
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MOST_BACKOFF);
                continue;
            }
        };
        backoff = Duration::from_millis(250);
        while left > 0 {
            let message = match tokio::time::timeout(Duration::from_millis(500), socket.next()).await {
                // Nothing for a while: show what came so far.
                Err(_) => {
                    out.flush()?;
                    continue;
                }
                Ok(Some(Ok(message))) => message,
                Ok(Some(Err(e))) => {
                    eprintln!("svc log tail: the stream broke ({e}); resuming from {cursor}");
                    break;
                }
                Ok(None) => break,
            };
            let Message::Text(text) = message else { continue };
            let mut event: serde_json::Value = serde_json::from_str(&text).context("the stream sent a message that is not JSON")?;
            if let Some(error) = event.get("error").and_then(|e| e.as_str()) {
                let message = event.get("message").and_then(|m| m.as_str()).unwrap_or_default();
                if error == "ConsumerTooSlow" {
                    eprintln!("svc log tail: {message}; resuming from {cursor}");
                    break;
                }
                anyhow::bail!("{base} refused the stream: {error}: {message}");
            }
            if let Some(serde_json::Value::String(next)) = event.as_object_mut().and_then(|o| o.remove("cursor")) {
                cursor = next;
            }
            left -= 1;
            if !print_line(&mut out, &event)? {
                return Ok(());
            }
        }
        out.flush()?;
    }
    finish(out)
}

/// The upgrade request of the stream at `base` from `cursor`, with the filters and token.
fn subscribe_request(
    base: &str,
    args: &TailArgs,
    cursor: &str,
) -> anyhow::Result<tokio_tungstenite::tungstenite::handshake::client::Request> {
    let base = base.trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        anyhow::bail!("--url {base:?} must start with http:// or https://");
    };
    let mut query = form_urlencoded::Serializer::new(String::new());
    if !cursor.is_empty() {
        query.append_pair("cursor", cursor);
    }
    let f = &args.filter;
    for (name, values) in [("wantedKinds", &f.kinds), ("wantedCollections", &f.collections), ("wantedDids", &f.dids)] {
        for v in values {
            query.append_pair(name, v);
        }
    }
    let url = format!("{ws}/xrpc/pub.svc.log.subscribe?{}", query.finish());
    let mut request = url.as_str().into_client_request().with_context(|| format!("{url} is no WebSocket URL"))?;
    if let Some(token) = &args.token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).context("--token holds characters a header cannot")?;
        request.headers_mut().insert("authorization", value);
    }
    Ok(request)
}

/// Writes one JSON line; `false` once the reader of the output has gone (a closed pipe).
fn print_line(out: &mut impl Write, event: &serde_json::Value) -> anyhow::Result<bool> {
    match writeln!(out, "{event}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        other => other.map(|()| true).map_err(Into::into),
    }
}

fn finish(mut out: impl Write) -> anyhow::Result<()> {
    out.flush().or_else(|e| if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) })?;
    Ok(())
}
