//! The interactions read model: what each signed-in user did with the eprints svc recommended
//! (`pub.svc.discovery.recordInteraction`), for their next recommendations: a dismissed
//! eprint is never recommended to them again; the eprints they viewed, clicked, endorsed or
//! claimed seed what comes next. Keyed by the user, so one user's interactions apply in order.
//!
//! Tables of model `interactions` (partition key → clustering key: columns):
//! - `dismissed`: DID → eprint URI: ∅.
//! - `engaged`: DID → time (µs) ‖ eprint URI: `kind`. Newest last.

pub mod read;

use std::sync::Arc;

use event_schema::{AccountStatus, Payload, UserAction, UserCommand};
use store::{consumer_name, Columns, Store, TableRef, Value};

use crate::catalog::Mode;
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// The model name.
pub const MODEL: &str = "interactions";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["dismissed", "engaged"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

pub(crate) fn engaged_key(at: i64, uri: &str) -> Vec<u8> {
    let mut k = ((at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(uri.as_bytes());
    k
}

/// Builds the interactions read model (see the [module docs](self)).
pub struct InteractionsProjection {
    store: Arc<dyn Store>,
    version: u32,
    defer_durability: bool,
}

impl InteractionsProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, version: u32, mode: Mode) -> InteractionsProjection {
        InteractionsProjection { store, version, defer_durability: mode == Mode::Rebuild }
    }
}

impl Projection for InteractionsProjection {
    fn model(&self) -> &'static str {
        MODEL
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.store.checkpoints(&consumer_name(MODEL, self.version))?)
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        let mut st = Staged::default();
        for event in batch.iter() {
            let e = event.envelope;
            let position = e.position.ordinal();
            match &e.payload {
                Payload::User(UserCommand { caller, action: UserAction::Interacted { eprint_uri, kind, .. } }) => {
                    if kind == "dismiss" {
                        st.put(&table(self.version, "dismissed"), caller, eprint_uri.as_bytes().to_vec(), Columns::new(), position);
                    } else {
                        let mut c = Columns::new();
                        c.insert("kind".into(), Value::Text(kind.clone()));
                        st.put(
                            &table(self.version, "engaged"),
                            caller,
                            engaged_key(e.appended_at.timestamp_micros(), eprint_uri),
                            c,
                            position,
                        );
                    }
                }
                Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => {
                    for name in TABLES {
                        let t = table(self.version, name);
                        for key in st.rows_in(self.store.as_ref(), &t, &a.did, None)?.into_keys() {
                            st.delete(&t, &a.did, key, position);
                        }
                    }
                }
                _ => {}
            }
        }
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next(), self.defer_durability)?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        if self.defer_durability {
            self.store.sync()?;
        }
        Ok(())
    }
}
