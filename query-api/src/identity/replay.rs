//! The ledger of service-auth tokens already used, so that no token (`iss`, `jti`) is
//! accepted twice.
//!
//! Node-local and short-lived state (docs/decisions.md, "Identity state"): it lives in the
//! node's own store, so a restart remembers it, and a token is remembered until it expires
//! (at most five minutes), then swept. It is not an event in the log: every accepted call
//! would cost an append and a wait. With several query nodes, each refuses the tokens it saw;
//! the token's `lxm`, `aud` and five-minute life bound what a token replayed to another node
//! can do.

use std::sync::{Arc, Mutex};

use store::{Batch, Columns, Scan, Store, StoreError, TableRef, Value};

/// Tokens seen, by `iss jti`.
const SEEN: &str = "seen";
/// The same tokens by expiry, for the sweep.
const EXPIRING: &str = "expiring";
/// Seconds between sweeps.
const SWEEP_EVERY: i64 = 60;
/// Tokens removed per sweep at most.
const SWEEP_BATCH: usize = 500;

fn table() -> TableRef {
    TableRef::new("auth", 1, "tokens")
}

/// The used-token ledger.
pub struct ReplayLedger {
    store: Arc<dyn Store>,
    /// Serialises check-and-record in this process; holds the time of the last sweep.
    last_sweep: Mutex<i64>,
}

impl ReplayLedger {
    /// A ledger kept in `store`.
    pub fn new(store: Arc<dyn Store>) -> ReplayLedger {
        ReplayLedger { store, last_sweep: Mutex::new(0) }
    }

    /// Records the token `jti` of `iss`, valid until `exp` (seconds since the epoch); `false`
    /// when it was recorded before (a replay). Blocks on the store.
    ///
    /// # Errors
    /// The store's.
    pub fn first_use(&self, iss: &str, jti: &str, exp: i64, now: i64) -> Result<bool, StoreError> {
        let mut last_sweep = self.last_sweep.lock().expect("replay ledger");
        let key = format!("{iss} {jti}").into_bytes();
        if self.store.get(&table(), SEEN, &key)?.is_some() {
            return Ok(false);
        }
        let stamp = write_stamp();
        let mut columns = Columns::new();
        columns.insert("exp".into(), Value::Int(exp));
        let mut batch = Batch::default();
        batch.put(&table(), SEEN, key.clone(), columns.clone(), stamp);
        batch.put(&table(), EXPIRING, expiring_key(exp, &key), columns, stamp);
        self.store.apply(batch)?;
        if now - *last_sweep >= SWEEP_EVERY {
            self.sweep(now)?;
            *last_sweep = now;
        }
        Ok(true)
    }

    /// Forgets tokens that expired before `now`.
    fn sweep(&self, now: i64) -> Result<(), StoreError> {
        let page = self.store.scan(&table(), EXPIRING, &Scan::first(SWEEP_BATCH))?;
        let stamp = write_stamp();
        let mut batch = Batch::default();
        for row in page.rows {
            let Some(exp) = row.clustering.get(..8).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes"))) else { continue };
            if exp >= now {
                break;
            }
            batch.delete(&table(), SEEN, row.clustering[8..].to_vec(), stamp);
            batch.delete(&table(), EXPIRING, row.clustering, stamp);
        }
        if !batch.is_empty() {
            self.store.apply(batch)?;
        }
        Ok(())
    }
}

/// Expiry first (big-endian, non-negative), so a scan meets the oldest first.
fn expiring_key(exp: i64, key: &[u8]) -> Vec<u8> {
    let mut k = exp.max(0).to_be_bytes().to_vec();
    k.extend_from_slice(key);
    k
}

/// The write timestamp of ledger rows: microseconds since the epoch (later writes win).
fn write_stamp() -> u64 {
    chrono::Utc::now().timestamp_micros().max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_accepted_once_and_forgotten_after_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(store::EmbeddedStore::open(dir.path()).unwrap());
        let ledger = ReplayLedger::new(store.clone());
        assert!(ledger.first_use("did:plc:a", "j1", 1_000, 900).unwrap());
        assert!(!ledger.first_use("did:plc:a", "j1", 1_000, 901).unwrap());
        assert!(ledger.first_use("did:plc:b", "j1", 1_000, 902).unwrap(), "jti is per issuer");
        // A restart (a new ledger on the same store) still knows it.
        let again = ReplayLedger::new(store.clone());
        assert!(!again.first_use("did:plc:a", "j1", 1_000, 903).unwrap());
        // Swept once expired.
        assert!(again.first_use("did:plc:a", "j2", 5_000, 2_000).unwrap());
        assert!(store.get(&table(), SEEN, b"did:plc:a j1").unwrap().is_none());
        assert!(store.get(&table(), SEEN, b"did:plc:a j2").unwrap().is_some());
    }
}
