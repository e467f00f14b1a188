//! A firehose proxy that forwards a PDS's `subscribeRepos` stream to one client and breaks
//! the signature of chosen commits on the way, re-addressing the commit block so that the
//! CAR stays well-formed: only the signature check can catch it.

use cid::Cid;
use futures::{SinkExt, StreamExt};
use ingest::car::Car;
use ingest::testing::{cid_of, write_car};
use ipld_core::ipld::Ipld;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// Starts the proxy of `upstream` (a `ws://` base); commits with an operation whose path ends
/// in `/<rkey>` get a broken signature. Returns the proxy's `ws://` base.
pub async fn start(upstream: String, rkey: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (upstream, rkey) = (upstream.clone(), rkey.clone());
            tokio::spawn(async move {
                let mut path = String::new();
                #[allow(clippy::result_large_err)] // the signature tungstenite's callback has
                let callback = |req: &tokio_tungstenite::tungstenite::handshake::server::Request, resp| {
                    path = req.uri().to_string();
                    Ok(resp)
                };
                let Ok(mut client) = tokio_tungstenite::accept_hdr_async(socket, callback).await else { return };
                let Ok((mut server, _)) = tokio_tungstenite::connect_async(format!("{upstream}{path}")).await else { return };
                while let Some(Ok(message)) = server.next().await {
                    let message = match message {
                        Message::Binary(bytes) => Message::Binary(tamper(&bytes, &rkey).unwrap_or(bytes.to_vec()).into()),
                        other => other,
                    };
                    if client.send(message).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("ws://{addr}")
}

/// The frame with the commit's signature broken, if it is a commit touching `rkey`.
fn tamper(bytes: &[u8], rkey: &str) -> Option<Vec<u8>> {
    let mut rest = bytes;
    let header: Ipld = serde_ipld_dagcbor::de::from_reader_once(&mut rest).ok()?;
    let Ipld::Map(h) = &header else { return None };
    if h.get("t") != Some(&Ipld::String("#commit".into())) {
        return None;
    }
    let Ipld::Map(mut body) = serde_ipld_dagcbor::from_slice::<Ipld>(rest).ok()? else { return None };
    let Some(Ipld::List(ops)) = body.get("ops") else { return None };
    let touches = ops
        .iter()
        .any(|op| matches!(op, Ipld::Map(m) if matches!(m.get("path"), Some(Ipld::String(p)) if p.ends_with(&format!("/{rkey}")))));
    if !touches {
        return None;
    }
    let Some(Ipld::Bytes(car_bytes)) = body.get("blocks") else { return None };
    let Some(Ipld::Link(root)) = body.get("commit").cloned() else { return None };
    let car = Car::read(car_bytes).ok()?;
    let Ipld::Map(mut commit) = serde_ipld_dagcbor::from_slice::<Ipld>(car.get(&root)?).ok()? else { return None };
    let Some(Ipld::Bytes(sig)) = commit.get_mut("sig") else { return None };
    sig[10] ^= 0x01;
    let commit_bytes = serde_ipld_dagcbor::to_vec(&Ipld::Map(commit)).ok()?;
    let new_root = cid_of(&commit_bytes);
    let mut blocks: Vec<(Cid, Vec<u8>)> = car.blocks().filter(|(cid, _)| **cid != root).map(|(c, d)| (*c, d.to_vec())).collect();
    blocks.push((new_root, commit_bytes));
    let out_car = write_car(new_root, &blocks);
    body.insert("blocks".into(), Ipld::Bytes(out_car));
    body.insert("commit".into(), Ipld::Link(new_root));
    let mut out = serde_ipld_dagcbor::to_vec(&header).ok()?;
    out.extend(serde_ipld_dagcbor::to_vec(&Ipld::Map(body)).ok()?);
    Some(out)
}
