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

use event_schema::{AccountStatus, Envelope, Payload, UserAction, UserCommand};
use store::{Columns, Store, TableRef, Value};

use crate::catalog::Mode;
use crate::staged::{ModelBase, Staged, StagedModel, StagedProjection};
use crate::ProjectionError;

/// The model name.
pub const MODEL: &str = "interactions";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["dismissed", "engaged"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &[];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

pub(crate) fn engaged_key(at: i64, uri: &str) -> Vec<u8> {
    let mut k = ((at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(uri.as_bytes());
    k
}

/// Builds the interactions read model (see the [module docs](self)).
pub struct InteractionsModel {
    base: ModelBase,
}

impl InteractionsModel {
    /// The projection that builds `version` of the model in `store`.
    pub fn projection(store: Arc<dyn Store>, version: u32, mode: Mode) -> Box<dyn crate::Projection> {
        Box::new(StagedProjection(InteractionsModel { base: ModelBase::new(MODEL, store, version, mode) }))
    }
}

impl StagedModel for InteractionsModel {
    fn base(&self) -> &ModelBase {
        &self.base
    }

    fn stage(&mut self, st: &mut Staged, e: &Envelope) -> Result<(), ProjectionError> {
        let (store, version, position) = (self.base.store.as_ref(), self.base.version, e.position.ordinal());
        match &e.payload {
            Payload::User(UserCommand { caller, action: UserAction::Interacted { eprint_uri, kind, .. } }) => {
                if kind == "dismiss" {
                    st.put(&table(version, "dismissed"), caller, eprint_uri.as_bytes().to_vec(), Columns::new(), position);
                } else {
                    let mut c = Columns::new();
                    c.insert("kind".into(), Value::Text(kind.clone()));
                    st.put(&table(version, "engaged"), caller, engaged_key(e.appended_at.timestamp_micros(), eprint_uri), c, position);
                }
            }
            Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => {
                for name in TABLES {
                    let t = table(version, name);
                    for key in st.rows_in(store, &t, &a.did, None)?.into_keys() {
                        st.delete(&t, &a.did, key, position);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}
