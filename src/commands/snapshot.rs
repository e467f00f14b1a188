//! `svc snapshot create` and `svc snapshot restore`: a new query node starts from another
//! node's search index at a known log position instead of replaying the whole log.
//!
//! A snapshot is a folder: `snapshot.json` (what it holds and where it stands in the log;
//! written last, so a folder without it is incomplete), `store/search.v<N>.redb` (the
//! node store's file of that index version: what each document is made from) and
//! `search/v<N>/` (the tantivy index, whose commit holds its checkpoints). The checkpoints
//! are positions in the shared log, the same for every node that follows it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context as _;
use projections::search;
use serde::{Deserialize, Serialize};
use store::{consumer_name, Store};

use crate::config::DataArgs;

/// The snapshot's description, `snapshot.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    /// The layout's version (1).
    format: u32,
    /// The read model it holds (`search`).
    model: String,
    /// Its version: the number naming its tables and its index folder.
    version: u32,
    /// The next log offset to read, per partition, when it was taken.
    checkpoints: BTreeMap<u32, u64>,
    /// When it was taken (RFC 3339).
    created_at: String,
    /// The svc that took it.
    svc_version: String,
}

const MANIFEST: &str = "snapshot.json";
const FORMAT: u32 = 1;

/// `svc snapshot create`: copies the active search index version of the stopped node on
/// `data` into `to`, and prints a JSON line saying what it holds.
pub fn create(data: DataArgs, to: &Path) -> anyhow::Result<()> {
    super::require_data(&data, store::STORE_FILE, "snapshot")?;
    anyhow::ensure!(!to.exists(), "{} exists: a snapshot is written to a new folder", to.display());
    let dir = &data.data_dir;
    // Held open until the copy is done: no svc can start on the data directory meanwhile.
    let store = super::open_stopped_store(dir)?;
    let model = search::MODEL;
    let version =
        store.active_version(model)?.with_context(|| format!("{} has no search index yet: start svc on it first", dir.display()))?;
    let file = store.version_file(model, version).with_context(|| {
        format!("this node's search index (version {version}) was built before versions had files of their own: run `svc replay --model {model}` on it first")
    })?;
    let index = search::index_dir(&dir.join("search"), version);
    anyhow::ensure!(index.is_dir(), "{} is missing: the search index of version {version}", index.display());
    // The index's commit records where it stands; the node store's rows follow it.
    let checkpoints = search::committed_checkpoints(&index).with_context(|| format!("failed to read the index in {}", index.display()))?;

    std::fs::create_dir_all(to.join("store")).with_context(|| format!("failed to create {}", to.display()))?;
    let stored = to.join("store").join(file.file_name().context("a version file has a name")?);
    std::fs::copy(&file, &stored).with_context(|| format!("failed to copy {} to {}", file.display(), stored.display()))?;
    let copied = copy_index(&index, &search::index_dir(&to.join("search"), version))?;
    let manifest = Manifest {
        format: FORMAT,
        model: model.to_owned(),
        version,
        checkpoints,
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        svc_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let path = to.join(MANIFEST);
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest)?).with_context(|| format!("failed to write {}", path.display()))?;
    drop(store);
    let bytes = std::fs::metadata(&stored)?.len() + copied;
    let line = serde_json::json!({"snapshot": to.display().to_string(), "model": model, "version": version, "checkpoints": manifest.checkpoints, "bytes": bytes});
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// `svc snapshot restore`: makes the snapshot in `from` the search index of the node on
/// `data`, which must have none yet; prints a JSON line.
pub fn restore(data: DataArgs, from: &Path) -> anyhow::Result<()> {
    let path = from.join(MANIFEST);
    let manifest: Manifest = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("{} is not a complete snapshot (no {MANIFEST})", from.display()))?,
    )
    .with_context(|| format!("{} is not a snapshot's description", path.display()))?;
    anyhow::ensure!(manifest.format == FORMAT, "{}: snapshot format {} (this svc reads {FORMAT})", path.display(), manifest.format);
    anyhow::ensure!(manifest.model == search::MODEL, "{}: a snapshot of {}, not of the search index", path.display(), manifest.model);
    let (model, version) = (search::MODEL, manifest.version);
    let file = from.join("store").join(format!("{}.redb", consumer_name(model, version)));
    let source_index = search::index_dir(&from.join("search"), version);
    anyhow::ensure!(file.is_file() && source_index.is_dir(), "{} lacks {} or {}", from.display(), file.display(), source_index.display());

    let dir = &data.data_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let store = super::open_stopped_store(dir)?;
    anyhow::ensure!(
        store.versions(model)?.is_empty(),
        "{} has a search index already: restore a snapshot into a new node's data directory",
        dir.display()
    );
    let index = search::index_dir(&dir.join("search"), version);
    if index.exists() {
        // Left by an earlier restore that stopped before registering the version.
        std::fs::remove_dir_all(&index).with_context(|| format!("failed to remove {}", index.display()))?;
    }
    copy_index(&source_index, &index)?;
    store.adopt_version(model, version, &file).with_context(|| format!("failed to adopt {}", file.display()))?;
    drop(store);
    let line = serde_json::json!({
        "restored": from.display().to_string(), "dataDir": dir.display().to_string(), "model": model, "version": version,
        "checkpoints": manifest.checkpoints, "createdAt": manifest.created_at,
    });
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// Copies a tantivy index folder (its files; not its lock files) to `to`; the bytes copied.
fn copy_index(from: &Path, to: &Path) -> anyhow::Result<u64> {
    std::fs::create_dir_all(to).with_context(|| format!("failed to create {}", to.display()))?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(from).with_context(|| format!("failed to read {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if !entry.file_type()?.is_file() || name.to_string_lossy().ends_with(".lock") {
            continue;
        }
        bytes += std::fs::copy(entry.path(), to.join(&name)).with_context(|| format!("failed to copy {}", entry.path().display()))?;
    }
    Ok(bytes)
}
