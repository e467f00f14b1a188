//! A firehose proxy that forwards a PDS's `subscribeRepos` stream to one client and breaks
//! the signature of chosen commits on the way, re-addressing the commit block so that the
//! CAR stays well-formed: only the signature check can catch it.

use std::collections::BTreeMap;

use cid::Cid;
use futures::{SinkExt, StreamExt};
use ingest::car::Car;
use ipld_core::ipld::Ipld;
use multihash_codetable::{Code, MultihashDigest};
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

fn varint(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
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
    let new_root = Cid::new_v1(0x71, Code::Sha2_256.digest(&commit_bytes));
    let mut blocks: BTreeMap<Cid, Vec<u8>> = car.blocks().filter(|(cid, _)| **cid != root).map(|(c, d)| (*c, d.to_vec())).collect();
    blocks.insert(new_root, commit_bytes);
    let car_header = serde_ipld_dagcbor::to_vec(&Ipld::Map(
        [("version".to_owned(), Ipld::Integer(1)), ("roots".to_owned(), Ipld::List(vec![Ipld::Link(new_root)]))].into(),
    ))
    .ok()?;
    let mut out_car = Vec::new();
    varint(car_header.len(), &mut out_car);
    out_car.extend(car_header);
    for (cid, data) in blocks {
        let cid_bytes = cid.to_bytes();
        varint(cid_bytes.len() + data.len(), &mut out_car);
        out_car.extend(cid_bytes);
        out_car.extend(data);
    }
    body.insert("blocks".into(), Ipld::Bytes(out_car));
    body.insert("commit".into(), Ipld::Link(new_root));
    let mut out = serde_ipld_dagcbor::to_vec(&header).ok()?;
    out.extend(serde_ipld_dagcbor::to_vec(&Ipld::Map(body)).ok()?);
    Some(out)
}
