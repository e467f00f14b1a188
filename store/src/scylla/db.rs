//! The session of the ScyllaDB store and what it has learned (prepared statements, the
//! tables that exist, whether the server reads clustering ranges), and the statements it
//! runs for the store.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::prepared::PreparedStatement;

use super::schema::{self, RowStatements};
use super::{state_from, state_name, table_name, unavailable, TABLES_TTL};
use crate::value::{decode_columns, encode_row};
use crate::{Columns, Op, Row, Scan, StoreError, TableRef, VersionState};

/// The session and what it has learned: prepared statements and the tables that exist.
pub(super) struct Db {
    pub(super) session: Session,
    pub(super) keyspace: String,
    pub(super) prepared: Mutex<HashMap<String, PreparedStatement>>,
    pub(super) tables: Mutex<HashSet<String>>,
    /// When the last read of the table list began.
    pub(super) tables_read_at: Mutex<Option<Instant>>,
    /// When the last read of checkpoints ended: a table list read before it may lack a
    /// table that the writer of those checkpoints created before writing them.
    pub(super) progress_seen_at: Mutex<Option<Instant>>,
    /// The server speaks only part of the CQL the store needs: no clustering ranges, limits
    /// or descending order (a CQL test server; ScyllaDB and Cassandra speak it all). Scans
    /// and counts then read the whole partition and order, page and count it here (correct,
    /// and slow on large partitions), and tables are emptied instead of dropped.
    pub(super) limited: bool,
}

impl Db {
    /// Runs a schema change and waits for schema agreement.
    pub(super) async fn ddl(&self, cql: &str) -> Result<(), StoreError> {
        self.session.query_unpaged(cql, ()).await.map_err(|e| unavailable(format!("{cql}: {e}")))?;
        Ok(())
    }

    pub(super) async fn prepare(&self, cql: String) -> Result<PreparedStatement, StoreError> {
        if let Some(p) = self.prepared.lock().expect("prepared statements").get(&cql) {
            return Ok(p.clone());
        }
        let p = self.session.prepare(cql.as_str()).await.map_err(|e| unavailable(format!("{cql}: {e}")))?;
        self.prepared.lock().expect("prepared statements").insert(cql, p.clone());
        Ok(p)
    }

    pub(super) async fn refresh_tables(&self) -> Result<(), StoreError> {
        let began = Instant::now();
        let result = self
            .session
            .query_unpaged("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", (&self.keyspace,))
            .await
            .map_err(unavailable)?;
        let rows = result.into_rows_result().map_err(unavailable)?;
        let names: HashSet<String> = rows.rows::<(String,)>().map_err(unavailable)?.filter_map(Result::ok).map(|(n,)| n).collect();
        *self.tables.lock().expect("tables") = names;
        *self.tables_read_at.lock().expect("tables") = Some(began);
        Ok(())
    }

    /// Whether a read-model table exists. A table not known yet is looked up again at most
    /// once a second (another process may have created it), so reads of a table nobody has
    /// written cost no schema query each; and at once after a read of checkpoints, because
    /// a writer creates a table before the rows and checkpoints it writes there: a reader
    /// that waited for a checkpoint to pass its write (principle 7) must find the table.
    pub(super) async fn exists(&self, name: &str) -> Result<bool, StoreError> {
        if self.tables.lock().expect("tables").contains(name) {
            return Ok(true);
        }
        let read_at = *self.tables_read_at.lock().expect("tables");
        let progress = *self.progress_seen_at.lock().expect("tables");
        let stale = read_at.is_none_or(|at| at.elapsed() >= TABLES_TTL || progress.is_some_and(|p| p >= at));
        if stale {
            self.refresh_tables().await?;
        }
        Ok(self.tables.lock().expect("tables").contains(name))
    }

    /// Creates a read-model table on its first write, unless its version was retired or
    /// dropped: a worker still writing to a version that a rebuild replaced must not bring
    /// back the tables the rebuild dropped (its write fails, and it moves to the new version).
    pub(super) async fn ensure_table(&self, name: &str, table: &TableRef) -> Result<(), StoreError> {
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
    pub(super) async fn probe_ranges(&self) -> Result<bool, StoreError> {
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
    pub(super) async fn drop_table(&self, name: &str) -> Result<(), StoreError> {
        if self.limited {
            return self.empty_table(name).await;
        }
        self.ddl(&format!("DROP TABLE IF EXISTS {}.{name}", self.keyspace)).await
    }

    /// Deletes every row of a table.
    pub(super) async fn empty_table(&self, name: &str) -> Result<(), StoreError> {
        if !self.exists(name).await? {
            return Ok(());
        }
        let all = match self.session.query_unpaged(format!("SELECT p, c FROM {}.{name}", self.keyspace), ()).await {
            Ok(all) => all,
            // The CQL test server answers so for a table another of its sessions created and
            // it holds no row of (seen emptying a version created in a race): nothing to empty.
            Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::Invalid, message)))
                if self.limited && message.contains("Table does not exist") =>
            {
                return Ok(());
            }
            Err(e) => return Err(unavailable(e)),
        };
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
    pub(super) async fn whole_partition(&self, name: &str, partition: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StoreError> {
        let stmt = self.prepare(RowStatements::partition(&self.keyspace, name)).await?;
        let rows = self.session.execute_unpaged(&stmt, (partition,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = rows.rows().map_err(unavailable)?.collect::<Result<_, _>>().map_err(unavailable)?;
        all.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(all)
    }

    /// One page of a partition and the row after it, read whole and paged here (for a
    /// limited server).
    pub(super) async fn scan_whole(&self, name: &str, partition: &str, scan: &Scan) -> Result<Vec<Row>, StoreError> {
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

    pub(super) async fn get(&self, name: &str, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
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

    pub(super) async fn write(&self, op: &Op) -> Result<(), StoreError> {
        let (mut bound, position) = match op {
            Op::Put { table, partition, clustering, columns, position } => {
                let name = table_name(table)?;
                let stmt = self.prepare(RowStatements::put(&self.keyspace, &name)).await?;
                let bound = stmt.bind(&(partition, clustering, encode_row(table, columns)?)).map_err(unavailable)?;
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

    pub(super) async fn versions(&self, model: &str) -> Result<BTreeMap<u32, Option<VersionState>>, StoreError> {
        let stmt = self.prepare(format!("SELECT version, state FROM {}.svc_versions WHERE model = ?", self.keyspace)).await?;
        let rows = self.session.execute_unpaged(&stmt, (model,)).await.map_err(unavailable)?.into_rows_result().map_err(unavailable)?;
        let mut out = BTreeMap::new();
        for row in rows.rows::<(i32, String)>().map_err(unavailable)? {
            let (version, state) = row.map_err(unavailable)?;
            out.insert(version as u32, state_from(&state));
        }
        Ok(out)
    }

    pub(super) async fn set_state(&self, model: &str, version: u32, state: &str) -> Result<(), StoreError> {
        let stmt = self.prepare(format!("INSERT INTO {}.svc_versions (model, version, state) VALUES (?, ?, ?)", self.keyspace)).await?;
        self.session.execute_unpaged(&stmt, (model, version as i32, state)).await.map_err(unavailable)?;
        Ok(())
    }
}
