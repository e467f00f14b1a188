//! The ScyllaDB store (scylla driver): the read models of a cluster of query nodes.
//!
//! ScyllaDB has no multi-partition transactions, so [`Store::apply`] keeps the
//! architecture's rule for it: every row write is idempotent by log position (the write
//! timestamp is the op's stamp: the position of the event that made it, so an older position
//! never overwrites a newer row; for a projection's aggregates, the projector's clock),
//! writes between [`Op::Barrier`]s go out concurrently, waves land
//! in order, and the checkpoints land last. A crash mid-batch leaves rows that the next run
//! rewrites identically from the old checkpoint. See [`schema`] for the tables.

mod config;
mod db;
mod schema;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::batch::{Batch as CqlBatch, BatchType};
use tokio::runtime::Runtime;
use tracing::info;

pub use config::{ScyllaConfig, DEFAULT_KEYSPACE};
use db::Db;
use schema::RowStatements;

use crate::value::decode_columns;
use crate::{Batch, Columns, Op, Page, Row, Scan, Store, StoreError, TableRef, VersionState};

/// How long a lookup of the keyspace's tables is trusted for tables it did not list.
const TABLES_TTL: Duration = Duration::from_secs(1);

/// Row writes in flight at once while applying a batch.
const WRITE_CONCURRENCY: usize = 128;

/// The [`Store`] on a ScyllaDB (or other CQL) cluster.
pub struct ScyllaStore {
    runtime: Option<Runtime>,
    db: Arc<Db>,
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn state_name(state: VersionState) -> &'static str {
    match state {
        VersionState::Building => "building",
        VersionState::Active => "active",
        VersionState::Retired => "retired",
    }
}

/// A version's state as stored; `None` for a dropped version (its number stays taken).
fn state_from(name: &str) -> Option<VersionState> {
    match name {
        "building" => Some(VersionState::Building),
        "active" => Some(VersionState::Active),
        "retired" => Some(VersionState::Retired),
        _ => None,
    }
}

fn table_name(table: &TableRef) -> Result<String, StoreError> {
    schema::table_name(table).ok_or_else(|| {
        StoreError::Config(format!(
            "{} cannot be a CQL table name (lower-case letters, digits, _ and at most 48 characters)",
            table.physical_name()
        ))
    })
}

impl ScyllaStore {
    /// Connects, creating the keyspace and the bookkeeping tables when missing.
    pub fn connect(config: &ScyllaConfig) -> Result<ScyllaStore, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("scylla")
            .enable_all()
            .build()
            .map_err(unavailable)?;
        let config = config.clone();
        // Spawned and waited for, not `block_on`: callers may be inside a runtime themselves.
        let connecting = runtime.spawn(async move {
            let session = SessionBuilder::new()
                .known_nodes(&config.nodes)
                .connection_timeout(Duration::from_secs(5))
                // Statements are prepared by the store itself; it never needs the driver's
                // schema metadata (and test servers without system.peers fail its refresh).
                .fetch_schema_metadata(false)
                .refresh_metadata_on_auto_schema_agreement(false)
                .build()
                .await
                .map_err(|e| unavailable(format!("cannot connect to {}: {e}", config.nodes.join(","))))?;
            let mut db = Db {
                session,
                keyspace: config.keyspace.clone(),
                prepared: Mutex::default(),
                tables: Mutex::default(),
                tables_read_at: Mutex::default(),
                progress_seen_at: Mutex::default(),
                limited: false,
            };
            db.ddl(&schema::create_keyspace(&config.keyspace, config.replication_factor)).await?;
            for ddl in schema::create_bookkeeping(&config.keyspace) {
                db.ddl(&ddl).await?;
            }
            db.limited = !db.probe_ranges().await?;
            if db.limited {
                tracing::warn!(
                    "the CQL server reads no clustering ranges, limits or descending order (a test server?): \
                     scans and counts read whole partitions, and tables are emptied instead of dropped"
                );
            }
            db.refresh_tables().await?;
            info!(nodes = config.nodes.join(","), keyspace = config.keyspace, "connected to the ScyllaDB store");
            Ok::<_, StoreError>(db)
        });
        let db = futures::executor::block_on(connecting).map_err(unavailable)??;
        Ok(ScyllaStore { runtime: Some(runtime), db: Arc::new(db) })
    }

    /// Runs a request on the store's own runtime and waits for it, so that callers need no
    /// runtime of their own (and may have one).
    fn run<T, F>(&self, request: impl FnOnce(Arc<Db>) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let runtime = self.runtime.as_ref().expect("the runtime lives as long as the store");
        let task = runtime.spawn(request(self.db.clone()));
        futures::executor::block_on(task).map_err(unavailable)?
    }
}

impl Drop for ScyllaStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Keeps the last write per row: the store sends a wave's writes concurrently, and a later
/// op of the batch on the same row must win even at an equal position.
fn last_write_per_row(ops: Vec<Op>) -> Vec<Op> {
    let mut index: HashMap<(TableRef, String, Vec<u8>), usize> = HashMap::new();
    let mut out: Vec<Option<Op>> = Vec::with_capacity(ops.len());
    for op in ops {
        let key = match &op {
            Op::Put { table, partition, clustering, .. } | Op::Delete { table, partition, clustering, .. } => {
                (table.clone(), partition.clone(), clustering.clone())
            }
            Op::Checkpoint { .. } | Op::Barrier => continue,
        };
        if let Some(previous) = index.insert(key, out.len()) {
            out[previous] = None;
        }
        out.push(Some(op));
    }
    out.into_iter().flatten().collect()
}

impl Store for ScyllaStore {
    fn backend(&self) -> &'static str {
        "scylladb"
    }

    fn get(&self, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        let name = table_name(table)?;
        let (partition, clustering) = (partition.to_owned(), clustering.to_vec());
        self.run(move |db| async move {
            if !db.exists(&name).await? {
                return Ok(None);
            }
            db.get(&name, &partition, &clustering).await
        })
    }

    fn get_many(&self, table: &TableRef, keys: &[(String, Vec<u8>)]) -> Result<Vec<Option<Columns>>, StoreError> {
        let name = table_name(table)?;
        let keys = keys.to_vec();
        self.run(move |db| async move {
            if !db.exists(&name).await? {
                return Ok(vec![None; keys.len()]);
            }
            let reads: Vec<_> = keys.iter().map(|(p, c)| db.get(&name, p, c)).collect();
            stream::iter(reads).buffered(32).try_collect().await
        })
    }

    fn count(&self, table: &TableRef, partition: &str) -> Result<u64, StoreError> {
        let name = table_name(table)?;
        let partition = partition.to_owned();
        self.run(move |db| async move {
            if !db.exists(&name).await? {
                return Ok(0);
            }
            if db.limited {
                return Ok(db.whole_partition(&name, &partition).await?.len() as u64);
            }
            let stmt = db.prepare(RowStatements::count(&db.keyspace, &name)).await?;
            let rows =
                db.session.execute_unpaged(&stmt, (&partition,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
            let (n,) = rows.single_row::<(i64,)>().map_err(unavailable)?;
            Ok(n as u64)
        })
    }

    fn scan(&self, table: &TableRef, partition: &str, scan: &Scan) -> Result<Page, StoreError> {
        let name = table_name(table)?;
        let (partition, scan) = (partition.to_owned(), scan.clone());
        self.run(move |db| async move {
            if scan.limit == 0 || !db.exists(&name).await? {
                return Ok(Page { rows: Vec::new(), next: None });
            }
            // One more row than asked tells whether another page follows.
            let mut out = Vec::new();
            if !db.limited {
                let stmt = db.prepare(RowStatements::scan(&db.keyspace, &name, scan.reverse, scan.after.is_some())).await?;
                let fetch = i32::try_from(scan.limit.saturating_add(1)).unwrap_or(i32::MAX);
                let result = match &scan.after {
                    Some(after) => db.session.execute_unpaged(&stmt, (&partition, after, fetch)).await,
                    None => db.session.execute_unpaged(&stmt, (&partition, fetch)).await,
                };
                let rows = result.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
                for row in rows.rows::<(Vec<u8>, Vec<u8>)>().map_err(unavailable)? {
                    let (clustering, v) = row.map_err(unavailable)?;
                    out.push(Row { clustering, columns: decode_columns(&name, &v)? });
                }
            } else {
                out = db.scan_whole(&name, &partition, &scan).await?;
            }
            let more = out.len() > scan.limit;
            out.truncate(scan.limit);
            let next = if more { out.last().map(|r| r.clustering.clone()) } else { None };
            Ok(Page { rows: out, next })
        })
    }

    fn apply(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.run(move |db| async move {
            let mut waves = vec![Vec::new()];
            let mut checkpoints = Vec::new();
            for op in batch.ops {
                match op {
                    Op::Barrier => waves.push(Vec::new()),
                    Op::Checkpoint { consumer, partition, next_offset } => checkpoints.push((consumer, partition, next_offset)),
                    op => waves.last_mut().expect("at least one wave").push(op),
                }
            }
            for wave in waves {
                let wave = last_write_per_row(wave);
                let mut tables = HashMap::new();
                for op in &wave {
                    if let Op::Put { table, .. } | Op::Delete { table, .. } = op {
                        tables.insert(table_name(table)?, table);
                    }
                }
                for (name, table) in tables {
                    db.ensure_table(&name, table).await?;
                }
                let writes: Vec<_> = wave.iter().map(|op| db.write(op)).collect();
                stream::iter(writes).buffer_unordered(WRITE_CONCURRENCY).try_collect::<()>().await?;
            }
            if !checkpoints.is_empty() {
                let stmt = db
                    .prepare(format!("INSERT INTO {}.svc_checkpoints (consumer, log_partition, next_offset) VALUES (?, ?, ?)", db.keyspace))
                    .await?;
                // One consumer's checkpoints share a partition: a logged batch lands whole.
                let mut cql = CqlBatch::new(BatchType::Logged);
                let mut values = Vec::new();
                for (consumer, partition, next_offset) in checkpoints {
                    cql.append_statement(stmt.clone());
                    values.push((consumer, partition as i32, next_offset as i64));
                }
                db.session.batch(&cql, values).await.map_err(unavailable)?;
            }
            Ok(())
        })
    }

    fn checkpoints(&self, consumer: &str) -> Result<BTreeMap<u32, u64>, StoreError> {
        let consumer = consumer.to_owned();
        self.run(move |db| async move {
            let stmt =
                db.prepare(format!("SELECT log_partition, next_offset FROM {}.svc_checkpoints WHERE consumer = ?", db.keyspace)).await?;
            let rows =
                db.session.execute_unpaged(&stmt, (&consumer,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
            let mut out = BTreeMap::new();
            for row in rows.rows::<(i32, i64)>().map_err(unavailable)? {
                let (partition, next) = row.map_err(unavailable)?;
                out.insert(partition as u32, next as u64);
            }
            *db.progress_seen_at.lock().expect("tables") = Some(Instant::now());
            Ok(out)
        })
    }

    fn active_version(&self, model: &str) -> Result<Option<u32>, StoreError> {
        Ok(self.versions(model)?.into_iter().find(|(_, s)| *s == VersionState::Active).map(|(v, _)| v))
    }

    fn versions(&self, model: &str) -> Result<BTreeMap<u32, VersionState>, StoreError> {
        let model = model.to_owned();
        let all = self.run(move |db| async move { db.versions(&model).await })?;
        Ok(all.into_iter().filter_map(|(v, s)| Some((v, s?))).collect())
    }

    fn create_version(&self, model: &str) -> Result<u32, StoreError> {
        let model = model.to_owned();
        self.run(move |db| async move {
            let next = db.versions(&model).await?.keys().next_back().map_or(1, |v| v + 1);
            db.set_state(&model, next, state_name(VersionState::Building)).await?;
            Ok(next)
        })
    }

    fn set_active_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        let model = model.to_owned();
        self.run(move |db| async move {
            let versions = db.versions(&model).await?;
            if !matches!(versions.get(&version), Some(Some(_))) {
                return Err(StoreError::UnknownVersion { model, version });
            }
            let stmt = db.prepare(format!("INSERT INTO {}.svc_versions (model, version, state) VALUES (?, ?, ?)", db.keyspace)).await?;
            // All of a model's versions share a partition: the swap is one atomic batch.
            let mut cql = CqlBatch::new(BatchType::Logged);
            let mut values = Vec::new();
            for (v, state) in &versions {
                if *state == Some(VersionState::Active) && *v != version {
                    cql.append_statement(stmt.clone());
                    values.push((model.clone(), *v as i32, state_name(VersionState::Retired)));
                }
            }
            cql.append_statement(stmt.clone());
            values.push((model.clone(), version as i32, state_name(VersionState::Active)));
            db.session.batch(&cql, values).await.map_err(unavailable)?;
            Ok(())
        })
    }

    fn retire_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        let model = model.to_owned();
        self.run(move |db| async move {
            match db.versions(&model).await?.get(&version) {
                Some(Some(VersionState::Building)) => db.set_state(&model, version, state_name(VersionState::Retired)).await,
                Some(Some(_)) => Err(StoreError::NotBuilding { model, version }),
                Some(None) | None => Err(StoreError::UnknownVersion { model, version }),
            }
        })
    }

    fn drop_version(&self, model: &str, version: u32, tables: &[&str]) -> Result<(), StoreError> {
        let model = model.to_owned();
        let names = tables.iter().map(|t| table_name(&TableRef::new(&model, version, t))).collect::<Result<Vec<_>, _>>()?;
        self.run(move |db| async move {
            for name in &names {
                db.drop_table(name).await?;
                db.tables.lock().expect("tables").remove(name);
            }
            let stmt = db.prepare(format!("DELETE FROM {}.svc_checkpoints WHERE consumer = ?", db.keyspace)).await?;
            db.session.execute_unpaged(&stmt, (crate::consumer_name(&model, version),)).await.map_err(unavailable)?;
            if db.versions(&model).await?.contains_key(&version) {
                db.set_state(&model, version, "dropped").await?;
            }
            Ok(())
        })
    }

    fn check(&self) -> Result<(), StoreError> {
        self.run(move |db| async move {
            let stmt = db.prepare(format!("SELECT version FROM {}.svc_versions WHERE model = ?", db.keyspace)).await?;
            db.session.execute_unpaged(&stmt, ("",)).await.map_err(unavailable)?;
            Ok(())
        })
    }
}
