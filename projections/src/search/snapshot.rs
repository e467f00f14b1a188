//! Snapshots of a node's search index: what a new query node starts from instead of
//! reading the whole log (`svc snapshot`, `pub.svc.admin.createSnapshot`).
//!
//! A snapshot is a folder: `snapshot.json` (what it holds and where it stands in the log;
//! written last, so a folder without it is incomplete), `store/search.v<N>.redb` (the node
//! store's tables of that index version: what each document is made from) and
//! `search/v<N>/` (the tantivy index, whose commit holds its checkpoints). The checkpoints
//! are positions in the shared log, the same for every node that follows it.
//!
//! A snapshot is taken from a node whose index does not change meanwhile: a stopped one,
//! or a running one whose projection worker is held ([`crate::HoldHandle`]) until
//! [`write`] calls its `frozen`. The index's files are hard links where the snapshot's
//! folder is on the index's file system (a tantivy segment file is never written again
//! once made), so a running node is held for the time it takes to list them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use store::{consumer_name, Store, StoreError};
use thiserror::Error;

use super::{index_dir, MODEL};
use crate::ProjectionError;

/// The snapshot's description, `snapshot.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The layout's version (1).
    pub format: u32,
    /// The read model it holds (`search`).
    pub model: String,
    /// Its version: the number naming its tables and its index folder.
    pub version: u32,
    /// The next log offset to read, per partition, when it was taken.
    pub checkpoints: BTreeMap<u32, u64>,
    /// When it was taken (RFC 3339).
    pub created_at: String,
    /// The svc that took it.
    pub svc_version: String,
}

/// The description's file name inside a snapshot.
pub const MANIFEST: &str = "snapshot.json";
const FORMAT: u32 = 1;

/// tantivy's file of the index's commit.
const META: &str = "meta.json";
/// tantivy's list of the files it made (and may delete once no commit uses them).
const MANAGED: &str = ".managed.json";

/// Why a snapshot could not be written or read.
#[derive(Debug, Error)]
pub enum SnapshotError {
    /// A file could not be read or written.
    #[error("failed to {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// To which file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The node store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The index could not be read.
    #[error(transparent)]
    Index(#[from] ProjectionError),
    /// The snapshot cannot be made or used as asked (the message says why).
    #[error("{0}")]
    Refused(String),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_owned();
    move |source| SnapshotError::Io { what, path, source }
}

/// What [`write`] made.
#[derive(Debug, Clone)]
pub struct Written {
    /// Its description, as written to `snapshot.json`.
    pub manifest: Manifest,
    /// Bytes of its files (hard-linked index files included).
    pub bytes: u64,
    /// Whether the index's files are hard links (else copies).
    pub linked: bool,
}

/// Writes a snapshot of the search index `version` of a node (its index folders under
/// `root`, its tables in `node`) to the new folder `to`. The index must not change until
/// `frozen` is called (once its files are in `to` and the node store's copy is fixed);
/// the node store's rows are written after that.
///
/// # Errors
/// When `to` exists, the version has no files of its own, or a file operation fails; what
/// was written of it is removed then (`snapshot.json`, written last, marks it complete).
pub fn write(node: &dyn Store, root: &Path, version: u32, to: &Path, frozen: &mut dyn FnMut()) -> Result<Written, SnapshotError> {
    if to.exists() {
        return Err(SnapshotError::Refused(format!("{} exists: a snapshot is written to a new folder", to.display())));
    }
    let written = write_new(node, root, version, to, frozen);
    if written.is_err() && to.exists() {
        // A partial folder would only keep its name taken.
        if let Err(e) = std::fs::remove_dir_all(to) {
            tracing::warn!(folder = %to.display(), error = %e, "could not remove a snapshot that failed");
        }
    }
    written
}

/// [`write`], into `to`, which does not exist yet.
fn write_new(node: &dyn Store, root: &Path, version: u32, to: &Path, frozen: &mut dyn FnMut()) -> Result<Written, SnapshotError> {
    let index = index_dir(root, version);
    if !index.is_dir() {
        return Err(SnapshotError::Refused(format!("{} is missing: the search index of version {version}", index.display())));
    }
    let target = index_dir(&to.join("search"), version);
    let (mut bytes, linked) = link_index(&index, &target)?;
    // Its index of users beside it ([`super::people`]), held still with it.
    let people = index.join(super::people::DIR);
    if people.join(META).is_file() {
        bytes += link_index(&people, &target.join(super::people::DIR))?.0;
    }
    // The index's commit records where it stands; the node store's rows follow it.
    let checkpoints = super::committed_checkpoints(&target)?;
    let stored = to.join("store").join(format!("{}.redb", consumer_name(MODEL, version)));
    std::fs::create_dir_all(to.join("store")).map_err(io("create", &to.join("store")))?;
    bytes += node
        .copy_version(MODEL, version, &stored, frozen)?
        .ok_or_else(|| SnapshotError::Refused("this node's store keeps no files of its own: no snapshot can be taken of it".into()))?;
    let manifest = Manifest {
        format: FORMAT,
        model: MODEL.to_owned(),
        version,
        checkpoints,
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        svc_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let path = to.join(MANIFEST);
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| SnapshotError::Refused(e.to_string()))?;
    std::fs::write(&path, json).map_err(io("write", &path))?;
    Ok(Written { manifest, bytes, linked })
}

/// Reads and checks the description of the snapshot in `from`; the node store's file and
/// the index folder it holds.
///
/// # Errors
/// When `from` is not a complete snapshot of the search index in a format this svc reads.
pub fn open(from: &Path) -> Result<(Manifest, PathBuf, PathBuf), SnapshotError> {
    let path = from.join(MANIFEST);
    let bytes = std::fs::read(&path)
        .map_err(|_| SnapshotError::Refused(format!("{} is not a complete snapshot (no {MANIFEST})", from.display())))?;
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| SnapshotError::Refused(format!("{} is not a snapshot's description: {e}", path.display())))?;
    if manifest.format != FORMAT {
        return Err(SnapshotError::Refused(format!("{}: snapshot format {} (this svc reads {FORMAT})", path.display(), manifest.format)));
    }
    if manifest.model != MODEL {
        return Err(SnapshotError::Refused(format!("{}: a snapshot of {}, not of the search index", path.display(), manifest.model)));
    }
    let file = from.join("store").join(format!("{}.redb", consumer_name(MODEL, manifest.version)));
    let index = index_dir(&from.join("search"), manifest.version);
    if !file.is_file() || !index.is_dir() {
        return Err(SnapshotError::Refused(format!("{} lacks {} or {}", from.display(), file.display(), index.display())));
    }
    Ok((manifest, file, index))
}

/// Copies an index folder (its commit and its segments' files, and its index of users'
/// folder; not its lock files) to `to`: the bytes copied.
///
/// # Errors
/// On a file error.
pub fn copy_index(from: &Path, to: &Path) -> Result<u64, SnapshotError> {
    std::fs::create_dir_all(to).map_err(io("create", to))?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(from).map_err(io("read", from))? {
        let entry = entry.map_err(io("read", from))?;
        let name = entry.file_name();
        let kind = entry.file_type().map_err(io("read", &entry.path()))?;
        if kind.is_dir() && name == super::people::DIR {
            bytes += copy_index(&entry.path(), &to.join(&name))?;
            continue;
        }
        if !kind.is_file() || name.to_string_lossy().ends_with(".lock") {
            continue;
        }
        bytes += std::fs::copy(entry.path(), to.join(&name)).map_err(io("copy", &entry.path()))?;
    }
    Ok(bytes)
}

/// How often [`link_index`] starts again when a merge replaced the segments it was linking.
const ATTEMPTS: usize = 5;

/// Puts the index in `from` as of its last commit into `to`: its `meta.json`, the files of
/// the segments it names (hard links, or copies across file systems) and a
/// `.managed.json` naming them (so the index that is made of them deletes them once
/// merged away). A merge finishing meanwhile replaces segments (the commit's contents
/// stay the same): a file gone before it was linked starts the listing again. The bytes
/// and whether the files are links.
fn link_index(from: &Path, to: &Path) -> Result<(u64, bool), SnapshotError> {
    for _ in 0..ATTEMPTS {
        if to.exists() {
            std::fs::remove_dir_all(to).map_err(io("remove", to))?;
        }
        std::fs::create_dir_all(to).map_err(io("create", to))?;
        let meta = std::fs::read(from.join(META)).map_err(io("read", &from.join(META)))?;
        let segments = segment_ids(&meta).map_err(|e| SnapshotError::Refused(format!("{}: {e}", from.join(META).display())))?;
        match link_segments(from, to, &segments) {
            Ok((files, bytes, linked)) => {
                std::fs::write(to.join(META), &meta).map_err(io("write", &to.join(META)))?;
                let managed = serde_json::to_vec(&files).map_err(|e| SnapshotError::Refused(e.to_string()))?;
                std::fs::write(to.join(MANAGED), [managed.as_slice(), b"\n"].concat()).map_err(io("write", &to.join(MANAGED)))?;
                return Ok((bytes + meta.len() as u64, linked));
            }
            Err(SnapshotError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                tracing::debug!("a merge replaced segments while the index was linked: listing it again");
            }
            Err(e) => return Err(e),
        }
    }
    Err(SnapshotError::Refused(format!("the index in {} kept changing while it was copied", from.display())))
}

/// The ids of the segments a `meta.json` names, as its files are named (hex, no dashes).
fn segment_ids(meta: &[u8]) -> Result<BTreeSet<String>, String> {
    let meta: serde_json::Value = serde_json::from_slice(meta).map_err(|e| e.to_string())?;
    let segments = meta["segments"].as_array().ok_or("no segments")?;
    segments
        .iter()
        .map(|s| s["segment_id"].as_str().map(|id| id.replace('-', "")).ok_or_else(|| "a segment without an id".to_owned()))
        .collect()
}

/// Links (or copies) the files of `segments` from `from` into `to`: their names, bytes,
/// and whether they are links.
fn link_segments(from: &Path, to: &Path, segments: &BTreeSet<String>) -> Result<(Vec<String>, u64, bool), SnapshotError> {
    let (mut files, mut bytes, mut linked) = (Vec::new(), 0, true);
    for entry in std::fs::read_dir(from).map_err(io("read", from))? {
        let entry = entry.map_err(io("read", from))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.split('.').next().is_some_and(|id| segments.contains(id)) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        match std::fs::hard_link(&source, &target) {
            Ok(()) => bytes += std::fs::metadata(&target).map_err(io("read", &target))?.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(io("link", &source)(e)),
            Err(_) => {
                linked = false;
                bytes += std::fs::copy(&source, &target).map_err(io("copy", &source))?;
            }
        }
        files.push(name);
    }
    Ok((files, bytes, linked))
}
