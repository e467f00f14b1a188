//! The ScyllaDB store (scylla driver): the read models of a cluster of query nodes.
//!
//! ScyllaDB has no multi-partition transactions, so [`Store::apply`] keeps the
//! architecture's rule for it: every row write is idempotent by log position (the write
//! timestamp is the position of the event that made it, so an older position never
//! overwrites a newer row), writes between [`Op::Barrier`]s go out concurrently, waves land
//! in order, and the checkpoints land last. A crash mid-batch leaves rows that the next run
//! rewrites identically from the old checkpoint. See [`schema`] for the tables.

mod config;
mod schema;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::batch::{Batch as CqlBatch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use tokio::runtime::Runtime;
use tracing::info;

pub use config::{ScyllaConfig, DEFAULT_KEYSPACE};
use schema::RowStatements;

use crate::value::{decode_columns, encode_columns};
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

/// The session and what it has learned: prepared statements and the tables that exist.
struct Db {
    session: Session,
    keyspace: String,
    prepared: Mutex<HashMap<String, PreparedStatement>>,
    tables: Mutex<HashSet<String>>,
    tables_read_at: Mutex<Option<Instant>>,
    /// The server speaks only part of the CQL the store needs: no clustering ranges, limits
    /// or descending order (a CQL test server; ScyllaDB and Cassandra speak it all). Scans
    /// and counts then read the whole partition and order, page and count it here (correct,
    /// and slow on large partitions), and tables are emptied instead of dropped.
    limited: bool,
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

impl Db {
    /// Runs a schema change and waits for schema agreement.
    async fn ddl(&self, cql: &str) -> Result<(), StoreError> {
        self.session.query_unpaged(cql, ()).await.map_err(|e| unavailable(format!("{cql}: {e}")))?;
        Ok(())
    }

    async fn prepare(&self, cql: String) -> Result<PreparedStatement, StoreError> {
        if let Some(p) = self.prepared.lock().expect("prepared statements").get(&cql) {
            return Ok(p.clone());
        }
        let p = self.session.prepare(cql.as_str()).await.map_err(|e| unavailable(format!("{cql}: {e}")))?;
        self.prepared.lock().expect("prepared statements").insert(cql, p.clone());
        Ok(p)
    }

    async fn refresh_tables(&self) -> Result<(), StoreError> {
        let result = self
            .session
            .query_unpaged("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", (&self.keyspace,))
            .await
            .map_err(unavailable)?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        let names: HashSet<String> = rows.rows::<(String,)>().map_err(unavailable)?.filter_map(Result::ok).map(|(n,)| n).collect();
        *self.tables.lock().expect("tables") = names;
        *self.tables_read_at.lock().expect("tables") = Some(Instant::now());
        Ok(())
    }

    /// Whether a read-model table exists. A table not known yet is looked up again at most
    /// once a second (another process may have created it), so reads of a table nobody has
    /// written cost no schema query each.
    async fn exists(&self, name: &str) -> Result<bool, StoreError> {
        if self.tables.lock().expect("tables").contains(name) {
            return Ok(true);
        }
        let stale = self.tables_read_at.lock().expect("tables").is_none_or(|at| at.elapsed() >= TABLES_TTL);
        if stale {
            self.refresh_tables().await?;
        }
        Ok(self.tables.lock().expect("tables").contains(name))
    }

    /// Creates a read-model table on its first write, unless its version was retired or
    /// dropped: a worker still writing to a version that a rebuild replaced must not bring
    /// back the tables the rebuild dropped (its write fails, and it moves to the new version).
    async fn ensure_table(&self, name: &str, table: &TableRef) -> Result<(), StoreError> {
        if self.tables.lock().expect("tables").contains(name) {
            return Ok(());
        }
        match self.versions(table.model()).await?.get(&table.version()) {
            Some(Some(VersionState::Building | VersionState::Active)) | None => {}
            Some(state) => {
                let state = state.map_or("dropped", state_name);
                return Err(unavailable(format!(
                    "version {} of {} is {state}: not creating its table {name}",
                    table.version(),
                    table.model()
                )));
            }
        }
        self.ddl(&schema::create_table(&self.keyspace, name)).await?;
        self.tables.lock().expect("tables").insert(name.to_owned());
        Ok(())
    }

    /// Whether the server reads clustering ranges, limits and descending order, tried on
    /// two rows of the probe table: a server that ignores what it cannot parse answers
    /// wrongly instead of failing, so the answers are checked.
    async fn probe_ranges(&self) -> Result<bool, StoreError> {
        let ks = &self.keyspace;
        self.ddl(&schema::create_table(ks, schema::PROBE)).await?;
        let put = self.prepare(RowStatements::put(ks, schema::PROBE)).await?;
        for c in [1u8, 2] {
            self.session.execute_unpaged(&put, ("probe", vec![c], Vec::<u8>::new())).await.map_err(unavailable)?;
        }
        let read = |reverse: bool, after: Option<u8>| async move {
            let stmt = self.prepare(RowStatements::scan(ks, schema::PROBE, reverse, after.is_some())).await.ok()?;
            let result = match after {
                Some(a) => self.session.execute_unpaged(&stmt, ("probe", vec![a], 1i32)).await,
                None => self.session.execute_unpaged(&stmt, ("probe", 1i32)).await,
            };
            let rows = result.ok()?.into_rows_result().ok()?;
            let keys: Option<Vec<Vec<u8>>> = rows.rows::<(Vec<u8>, Vec<u8>)>().ok()?.map(|r| r.ok().map(|(c, _)| c)).collect();
            keys
        };
        let two = Some(vec![vec![2u8]]);
        Ok(read(false, Some(1)).await == two && read(true, None).await == two)
    }

    /// Drops a table; on a limited server (no `DROP TABLE` in its language), empties it.
    async fn drop_table(&self, name: &str) -> Result<(), StoreError> {
        if self.limited {
            return self.empty_table(name).await;
        }
        self.ddl(&format!("DROP TABLE IF EXISTS {}.{name}", self.keyspace)).await
    }

    /// Deletes every row of a table.
    async fn empty_table(&self, name: &str) -> Result<(), StoreError> {
        if !self.exists(name).await? {
            return Ok(());
        }
        let all = self.session.query_unpaged(format!("SELECT p, c FROM {}.{name}", self.keyspace), ()).await.map_err(unavailable)?;
        let rows = all.into_rows_result().map_err(unavailable)?;
        let keys: Vec<(String, Vec<u8>)> =
            rows.rows::<(String, Vec<u8>)>().map_err(unavailable)?.collect::<Result<_, _>>().map_err(unavailable)?;
        let delete = self.prepare(RowStatements::delete(&self.keyspace, name)).await?;
        for key in keys {
            self.session.execute_unpaged(&delete, key).await.map_err(unavailable)?;
        }
        Ok(())
    }

    /// Every row of a partition, in clustering order, undecoded (for a limited server).
    async fn whole_partition(&self, name: &str, partition: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StoreError> {
        let stmt = self.prepare(RowStatements::partition(&self.keyspace, name)).await?;
        let rows = self.session.execute_unpaged(&stmt, (partition,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = rows.rows().map_err(unavailable)?.collect::<Result<_, _>>().map_err(unavailable)?;
        all.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(all)
    }

    /// One page of a partition and the row after it, read whole and paged here (for a
    /// limited server).
    async fn scan_whole(&self, name: &str, partition: &str, scan: &Scan) -> Result<Vec<Row>, StoreError> {
        let mut all = self.whole_partition(name, partition).await?;
        if scan.reverse {
            all.reverse();
        }
        let past = |c: &Vec<u8>| match &scan.after {
            None => true,
            Some(after) if scan.reverse => c < after,
            Some(after) => c > after,
        };
        all.into_iter()
            .filter(|(c, _)| past(c))
            .take(scan.limit.saturating_add(1))
            .map(|(clustering, v)| Ok(Row { columns: decode_columns(name, &v)?, clustering }))
            .collect()
    }

    async fn get(&self, name: &str, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        let stmt = self.prepare(RowStatements::get(&self.keyspace, name)).await?;
        let result = self.session.execute_unpaged(&stmt, (partition, clustering)).await.map_err(unavailable)?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        // The key is checked, not trusted: some CQL servers answer an equality on the
        // clustering key with the rows from that key on.
        for row in rows.rows::<(Vec<u8>, Vec<u8>)>().map_err(unavailable)? {
            let (c, v) = row.map_err(unavailable)?;
            if c == clustering {
                return Ok(Some(decode_columns(name, &v)?));
            }
        }
        Ok(None)
    }

    async fn write(&self, op: &Op) -> Result<(), StoreError> {
        let (mut bound, position) = match op {
            Op::Put { table, partition, clustering, columns, position } => {
                let name = table_name(table)?;
                let stmt = self.prepare(RowStatements::put(&self.keyspace, &name)).await?;
                let bound = stmt.bind(&(partition, clustering, encode_columns(columns)?)).map_err(unavailable)?;
                (bound, *position)
            }
            Op::Delete { table, partition, clustering, position } => {
                let name = table_name(table)?;
                let stmt = self.prepare(RowStatements::delete(&self.keyspace, &name)).await?;
                let bound = stmt.bind(&(partition, clustering)).map_err(unavailable)?;
                (bound, *position)
            }
            Op::Checkpoint { .. } | Op::Barrier => return Ok(()),
        };
        bound.set_timestamp(Some(i64::try_from(position).map_err(|_| unavailable("log position beyond a CQL timestamp"))?));
        match self.session.execute_bound_unpaged(&bound).await {
            Ok(_) => Ok(()),
            // The CQL test server refuses a delete from a table it holds no row of yet (a
            // row put and deleted in one batch reaches it as the delete alone): there is
            // nothing to delete. A full CQL server never answers this.
            Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::Invalid, message)))
                if self.limited && matches!(op, Op::Delete { .. }) && message.contains("Table does not exist") =>
            {
                Ok(())
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn versions(&self, model: &str) -> Result<BTreeMap<u32, Option<VersionState>>, StoreError> {
        let stmt = self.prepare(format!("SELECT version, state FROM {}.svc_versions WHERE model = ?", self.keyspace)).await?;
        let rows = self.session.execute_unpaged(&stmt, (model,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
        let mut out = BTreeMap::new();
        for row in rows.rows::<(i32, String)>().map_err(unavailable)? {
            let (version, state) = row.map_err(unavailable)?;
            out.insert(version as u32, state_from(&state));
        }
        Ok(out)
    }

    async fn set_state(&self, model: &str, version: u32, state: &str) -> Result<(), StoreError> {
        let stmt = self.prepare(format!("INSERT INTO {}.svc_versions (model, version, state) VALUES (?, ?, ?)", self.keyspace)).await?;
        self.session.execute_unpaged(&stmt, (model, version as i32, state)).await.map_err(unavailable)?;
        Ok(())
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
