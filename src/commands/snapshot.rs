//! `svc snapshot create` and `svc snapshot restore`: a new query node starts from another
//! node's search index at a known log position instead of replaying the whole log (the
//! folder's layout: [`projections::search::snapshot`]). `create` copies a stopped node's
//! index; a running node's is taken with `pub.svc.admin.createSnapshot`.

use std::io::Write;
use std::path::Path;

use anyhow::Context as _;
use projections::search::{self, snapshot};
use store::Store;

use crate::config::DataArgs;

/// `svc snapshot create`: copies the active search index version of the stopped node on
/// `data` into `to`, and prints a JSON line saying what it holds.
pub fn create(data: DataArgs, to: &Path) -> anyhow::Result<()> {
    super::require_data(&data, store::STORE_FILE, "snapshot")?;
    anyhow::ensure!(!to.exists(), "{} exists: a snapshot is written to a new folder", to.display());
    let dir = &data.data_dir;
    // Held open until the copy is done: no svc can start on the data directory meanwhile.
    let store = super::open_stopped_store(dir).context("a running node's snapshot is taken with `svc admin createSnapshot`")?;
    let model = search::MODEL;
    let version =
        store.active_version(model)?.with_context(|| format!("{} has no search index yet: start svc on it first", dir.display()))?;
    if store.version_file(model, version).is_none() {
        anyhow::bail!("this node's search index (version {version}) was built before versions had files of their own: run `svc replay --model {model}` on it first");
    }
    let written = snapshot::write(&store, &dir.join("search"), version, to, &mut || {})?;
    drop(store);
    let m = &written.manifest;
    let line = serde_json::json!({"snapshot": to.display().to_string(), "model": model, "version": version, "checkpoints": m.checkpoints, "bytes": written.bytes});
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// `svc snapshot restore`: makes the snapshot in `from` the search index of the node on
/// `data`, which must have none yet; prints a JSON line.
pub fn restore(data: DataArgs, from: &Path) -> anyhow::Result<()> {
    let (manifest, file, source_index) = snapshot::open(from)?;
    let (model, version) = (search::MODEL, manifest.version);
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
    snapshot::copy_index(&source_index, &index)?;
    store.adopt_version(model, version, &file).with_context(|| format!("failed to adopt {}", file.display()))?;
    drop(store);
    let line = serde_json::json!({
        "restored": from.display().to_string(), "dataDir": dir.display().to_string(), "model": model, "version": version,
        "checkpoints": manifest.checkpoints, "createdAt": manifest.created_at,
    });
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}
