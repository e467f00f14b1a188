//! Applying imports and claim commands to the imports read model.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AdminAction, Envelope, ExternalPaper, Payload, UserAction};
use store::{Columns, Store, Value};

use super::{prefix, refusal, table, words, ALL, MAX_WORDS, MODEL};
use crate::catalog::Mode;
use crate::rows::text;
use crate::staged::{ModelBase, Staged, StagedModel, StagedProjection};
use crate::ProjectionError;

/// The prefixes ([`prefix`]) of a set of words.
fn prefixes(words: &BTreeSet<String>) -> BTreeSet<String> {
    words.iter().filter_map(|w| prefix(w)).collect()
}

/// Builds the imports read model (see the [module docs](super)).
pub struct ImportsModel {
    base: ModelBase,
}

fn t(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn int(c: &Columns, name: &str) -> u64 {
    c.get(name).and_then(Value::as_int).unwrap_or_default() as u64
}

impl ImportsModel {
    /// The projection that builds `version` of the model in `store`.
    pub fn projection(store: Arc<dyn Store>, version: u32, mode: Mode) -> Box<dyn crate::Projection> {
        Box::new(StagedProjection(ImportsModel { base: ModelBase::new(MODEL, store, version, mode) }))
    }

    fn store(&self) -> &dyn Store {
        self.base.store.as_ref()
    }

    fn version(&self) -> u32 {
        self.base.version
    }

    /// Adds `delta` to a count row.
    fn count(&self, st: &mut Staged, name: &'static str, partition: &str, delta: i64, position: u64) -> Result<(), ProjectionError> {
        let tbl = table(self.version(), name);
        let n = st.get(self.store(), &tbl, partition, &[])?.map_or(0, |c| int(&c, "n") as i64);
        let c: Columns = [("n".to_owned(), Value::Int((n + delta).max(0)))].into_iter().collect();
        st.put(&tbl, partition, Vec::new(), c, position);
        Ok(())
    }

    /// Writes a paper's row in its two listings.
    fn put_paper(&self, st: &mut Staged, row: &Columns, position: u64) {
        let key = int(row, "id").to_be_bytes().to_vec();
        let source = format!("source:{}", text(row, "source").unwrap_or_default());
        st.put(&table(self.version(), "papers"), ALL, key.clone(), row.clone(), position);
        st.put(&table(self.version(), "papers"), &source, key.clone(), row.clone(), position);
        let terms: Columns = ["words", "authorWords", "orcids", "source", "claimStatus"]
            .into_iter()
            .filter_map(|c| row.get(c).map(|v| (c.to_owned(), v.clone())))
            .collect();
        st.put(&table(self.version(), "terms"), ALL, key, terms, position);
    }

    fn paper(&self, st: &mut Staged, id: u64) -> Result<Option<Columns>, ProjectionError> {
        Ok(st.get(self.store(), &table(self.version(), "papers"), ALL, &id.to_be_bytes())?)
    }

    fn paper_id(&self, st: &mut Staged, key: &str) -> Result<Option<u64>, ProjectionError> {
        Ok(st.get(self.store(), &table(self.version(), "paper_keys"), key, &[])?.map(|c| int(&c, "id")))
    }

    fn import(&self, st: &mut Staged, event: &Envelope, paper: &ExternalPaper) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let key = ExternalPaper::key(&paper.source, &paper.external_id);
        let (id, mut row) = match self.paper_id(st, &key)? {
            Some(id) => (id, self.paper(st, id)?.unwrap_or_default()),
            None => {
                let id = position + 1;
                let mut row = Columns::new();
                row.insert("importedAt".into(), t(&at));
                row.insert("claimStatus".into(), t("unclaimed"));
                st.put(
                    &table(self.version(), "paper_keys"),
                    &key,
                    Vec::new(),
                    [("id".to_owned(), Value::Int(id as i64))].into_iter().collect(),
                    position,
                );
                self.count(st, "counts", ALL, 1, position)?;
                self.count(st, "counts", &format!("source:{}", paper.source), 1, position)?;
                (id, row)
            }
        };
        let names: Vec<&str> = paper.authors.iter().map(|a| a.name.as_str()).collect();
        let mut new_words = words(&format!("{} {}", paper.title, names.join(" ")));
        new_words.truncate(MAX_WORDS);
        let old_words: BTreeSet<String> =
            text(&row, "words").unwrap_or_default().split(' ').filter(|w| !w.is_empty()).map(str::to_owned).collect();
        let new_set: BTreeSet<String> = new_words.iter().cloned().collect();
        let postings = table(self.version(), "words");
        for gone in old_words.difference(&new_set) {
            st.delete(&postings, gone, id.to_be_bytes().to_vec(), position);
            self.count(st, "word_counts", gone, -1, position)?;
        }
        for added in new_set.difference(&old_words) {
            st.put(&postings, added, id.to_be_bytes().to_vec(), Columns::new(), position);
            self.count(st, "word_counts", added, 1, position)?;
        }
        let (old_prefixes, new_prefixes) = (prefixes(&old_words), prefixes(&new_set));
        let prefix_postings = table(self.version(), "prefixes");
        for gone in old_prefixes.difference(&new_prefixes) {
            st.delete(&prefix_postings, gone, id.to_be_bytes().to_vec(), position);
        }
        for added in new_prefixes.difference(&old_prefixes) {
            st.put(&prefix_postings, added, id.to_be_bytes().to_vec(), Columns::new(), position);
        }
        let orcids: Vec<&str> = paper.authors.iter().filter_map(|a| a.orcid.as_deref()).collect();
        row.insert("id".into(), Value::Int(id as i64));
        row.insert("key".into(), t(&key));
        row.insert("source".into(), t(&paper.source));
        row.insert("paper".into(), t(&serde_json::to_string(paper).unwrap_or_default()));
        row.insert("words".into(), t(&new_words.join(" ")));
        row.insert("authorWords".into(), t(&words(&names.join(" ")).join(" ")));
        row.insert("orcids".into(), t(&orcids.join(" ")));
        row.insert("lastSyncedAt".into(), t(&at));
        self.put_paper(st, &row, position);
        Ok(())
    }

    /// Files a claim's row in its listings, moving it from the listing of `old_status`.
    fn file_claim(&self, st: &mut Staged, row: &Columns, old_status: Option<&str>, position: u64) {
        let claims = table(self.version(), "claims");
        let id = int(row, "id");
        let key = id.to_be_bytes().to_vec();
        let status = text(row, "status").unwrap_or_default();
        if let Some(old) = old_status.filter(|o| *o != status) {
            st.delete(&claims, &format!("status:{old}"), key.clone(), position);
        }
        for partition in [
            ALL.to_owned(),
            format!("claimant:{}", text(row, "claimantDid").unwrap_or_default()),
            format!("status:{status}"),
            format!("paper:{}", int(row, "importId")),
        ] {
            st.put(&claims, &partition, key.clone(), row.clone(), position);
        }
        let pointer: Columns = [("status".to_owned(), t(&status))].into_iter().collect();
        st.put(&table(self.version(), "claim_keys"), &id.to_string(), Vec::new(), pointer, position);
    }

    fn claim(&self, st: &mut Staged, id: u64) -> Result<Option<Columns>, ProjectionError> {
        if st.get(self.store(), &table(self.version(), "claim_keys"), &id.to_string(), &[])?.is_none() {
            return Ok(None);
        }
        Ok(st.get(self.store(), &table(self.version(), "claims"), ALL, &id.to_be_bytes())?)
    }

    /// A paper's claim status from its claims: claimed when one was completed, pending
    /// while one is pending or approved, unclaimed otherwise.
    fn settle_paper(&self, st: &mut Staged, import_id: u64, position: u64) -> Result<(), ProjectionError> {
        let Some(mut paper) = self.paper(st, import_id)? else { return Ok(()) };
        let claims = st.rows_in(self.store(), &table(self.version(), "claims"), &format!("paper:{import_id}"), None)?;
        let completed = claims.values().find(|c| text(c, "status").as_deref() == Some("approved") && text(c, "canonicalUri").is_some());
        let open = claims.values().any(|c| matches!(text(c, "status").as_deref(), Some("pending" | "approved")));
        for field in ["canonicalUri", "claimedByDid", "claimedAt"] {
            paper.remove(field);
        }
        let status = match completed {
            Some(c) => {
                paper.insert("canonicalUri".into(), t(&text(c, "canonicalUri").unwrap_or_default()));
                paper.insert("claimedByDid".into(), t(&text(c, "claimantDid").unwrap_or_default()));
                paper.insert("claimedAt".into(), t(&text(c, "completedAt").unwrap_or_default()));
                "claimed"
            }
            None if open => "pending",
            None => "unclaimed",
        };
        paper.insert("claimStatus".into(), t(status));
        self.put_paper(st, &paper, position);
        Ok(())
    }

    fn user(&self, st: &mut Staged, event: &Envelope, caller: &str, action: &UserAction) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        match action {
            UserAction::ClaimStarted { request_id, source, external_id, author_position, orcid, score, evidence } => {
                let requests = table(self.version(), "claim_requests");
                let refuse = |st: &mut Staged, why: &str| {
                    st.put(&requests, request_id, Vec::new(), [("refused".to_owned(), t(why))].into_iter().collect(), position);
                };
                let Some(import_id) = self.paper_id(st, &ExternalPaper::key(source, external_id))? else {
                    refuse(st, refusal::NOT_IMPORTED);
                    return Ok(());
                };
                let paper = self.paper(st, import_id)?.unwrap_or_default();
                if text(&paper, "claimStatus").as_deref() == Some("claimed") {
                    refuse(st, refusal::ALREADY_CLAIMED);
                    return Ok(());
                }
                let claims = st.rows_in(self.store(), &table(self.version(), "claims"), &format!("paper:{import_id}"), None)?;
                if claims.values().any(|c| {
                    text(c, "claimantDid").as_deref() == Some(caller)
                        && matches!(text(c, "status").as_deref(), Some("pending" | "approved"))
                }) {
                    refuse(st, refusal::DUPLICATE);
                    return Ok(());
                }
                let id = position + 1;
                let title =
                    serde_json::from_str::<ExternalPaper>(&text(&paper, "paper").unwrap_or_default()).map(|p| p.title).unwrap_or_default();
                let mut row = Columns::new();
                row.insert("id".into(), Value::Int(id as i64));
                row.insert("importId".into(), Value::Int(import_id as i64));
                row.insert("paperKey".into(), t(&ExternalPaper::key(source, external_id)));
                row.insert("claimantDid".into(), t(caller));
                row.insert("status".into(), t("pending"));
                row.insert("score".into(), Value::Int(i64::from(*score)));
                row.insert("evidence".into(), t(&serde_json::to_string(evidence).unwrap_or_default()));
                if let Some(p) = author_position {
                    row.insert("authorPosition".into(), Value::Int(i64::from(*p)));
                }
                if let Some(o) = orcid {
                    row.insert("orcid".into(), t(o));
                }
                row.insert("createdAt".into(), t(&at));
                row.insert("title".into(), t(&title));
                self.file_claim(st, &row, None, position);
                st.put(&requests, request_id, Vec::new(), [("claimId".to_owned(), Value::Int(id as i64))].into_iter().collect(), position);
                self.settle_paper(st, import_id, position)
            }
            UserAction::ClaimCompleted { claim_id, canonical_uri } => {
                let Some(mut row) = self.claim(st, *claim_id)? else { return Ok(()) };
                let status = text(&row, "status").unwrap_or_default();
                if text(&row, "claimantDid").as_deref() != Some(caller) || !matches!(status.as_str(), "pending" | "approved") {
                    return Ok(());
                }
                let import_id = int(&row, "importId");
                if self.paper(st, import_id)?.is_some_and(|p| text(&p, "claimStatus").as_deref() == Some("claimed")) {
                    return Ok(());
                }
                row.insert("status".into(), t("approved"));
                row.insert("canonicalUri".into(), t(canonical_uri));
                row.insert("completedAt".into(), t(&at));
                self.file_claim(st, &row, Some(&status), position);
                self.settle_paper(st, import_id, position)
            }
            UserAction::CoauthorRequested { request_id, eprint_uri, owner_did, claimant_name, author_index, author_name, message } => {
                let asks = table(self.version(), "coauthor_asks");
                let open = st.rows_in(self.store(), &table(self.version(), "coauthors"), &format!("eprint:{eprint_uri}"), None)?;
                if open
                    .values()
                    .any(|r| text(r, "claimantDid").as_deref() == Some(caller) && text(r, "status").as_deref() == Some("pending"))
                {
                    st.put(
                        &asks,
                        request_id,
                        Vec::new(),
                        [("refused".to_owned(), t(refusal::DUPLICATE_REQUEST))].into_iter().collect(),
                        position,
                    );
                    return Ok(());
                }
                let id = position + 1;
                let mut row = Columns::new();
                row.insert("id".into(), Value::Int(id as i64));
                row.insert("eprintUri".into(), t(eprint_uri));
                row.insert("eprintOwnerDid".into(), t(owner_did));
                row.insert("claimantDid".into(), t(caller));
                row.insert("claimantName".into(), t(claimant_name));
                row.insert("authorIndex".into(), Value::Int(i64::from(*author_index)));
                row.insert("authorName".into(), t(author_name));
                if let Some(m) = message {
                    row.insert("message".into(), t(m));
                }
                row.insert("status".into(), t("pending"));
                row.insert("createdAt".into(), t(&at));
                row.insert("updatedAt".into(), t(&at));
                self.file_coauthor(st, &row, position);
                let pointer: Columns = [("eprintUri".to_owned(), t(eprint_uri))].into_iter().collect();
                st.put(&table(self.version(), "coauthor_keys"), &id.to_string(), Vec::new(), pointer, position);
                st.put(&asks, request_id, Vec::new(), [("requestId".to_owned(), Value::Int(id as i64))].into_iter().collect(), position);
                Ok(())
            }
            UserAction::CoauthorDecided { request_id, approved, reason } => {
                let Some(pointer) = st.get(self.store(), &table(self.version(), "coauthor_keys"), &request_id.to_string(), &[])? else {
                    return Ok(());
                };
                let eprint = text(&pointer, "eprintUri").unwrap_or_default();
                let coauthors = table(self.version(), "coauthors");
                let Some(mut row) = st.get(self.store(), &coauthors, &format!("eprint:{eprint}"), &request_id.to_be_bytes())? else {
                    return Ok(());
                };
                if text(&row, "eprintOwnerDid").as_deref() != Some(caller) || text(&row, "status").as_deref() != Some("pending") {
                    return Ok(());
                }
                row.insert("status".into(), t(if *approved { "approved" } else { "rejected" }));
                row.insert("reviewedAt".into(), t(&at));
                row.insert("updatedAt".into(), t(&at));
                if let Some(r) = reason.as_deref().filter(|_| !approved) {
                    row.insert("rejectionReason".into(), t(r));
                }
                self.file_coauthor(st, &row, position);
                Ok(())
            }
            UserAction::SuggestionDismissed { source, external_id } => {
                let key = ExternalPaper::key(source, external_id).into_bytes();
                st.put(&table(self.version(), "dismissed"), caller, key, Columns::new(), position);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Writes a co-author request's row in its three listings.
    fn file_coauthor(&self, st: &mut Staged, row: &Columns, position: u64) {
        let coauthors = table(self.version(), "coauthors");
        let key = int(row, "id").to_be_bytes().to_vec();
        for partition in [
            format!("owner:{}", text(row, "eprintOwnerDid").unwrap_or_default()),
            format!("claimant:{}", text(row, "claimantDid").unwrap_or_default()),
            format!("eprint:{}", text(row, "eprintUri").unwrap_or_default()),
        ] {
            st.put(&coauthors, &partition, key.clone(), row.clone(), position);
        }
    }

    fn decide(
        &self,
        st: &mut Staged,
        event: &Envelope,
        actor: &str,
        claim_id: u64,
        approved: bool,
        reason: Option<&str>,
    ) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let Some(mut row) = self.claim(st, claim_id)? else { return Ok(()) };
        let status = text(&row, "status").unwrap_or_default();
        let to = match (approved, status.as_str()) {
            (true, "pending") => "approved",
            (false, "pending" | "approved") => "rejected",
            _ => return Ok(()),
        };
        row.insert("status".into(), t(to));
        row.insert("reviewedBy".into(), t(actor));
        row.insert("reviewedAt".into(), t(&event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        if let Some(reason) = reason.filter(|_| !approved) {
            row.insert("rejectionReason".into(), t(reason));
        }
        self.file_claim(st, &row, Some(&status), position);
        self.settle_paper(st, int(&row, "importId"), position)
    }
}

impl ImportsModel {
    /// Keeps the newest enrichment of an eprint, and files the eprint under the identifiers
    /// of the works it cites (`cited_by`), in place of those its previous enrichment cited.
    fn enrich(&self, st: &mut Staged, e: &event_schema::Enrichment, position: u64) -> Result<(), ProjectionError> {
        let (enrichments, cited_by) = (table(self.version(), "enrichments"), table(self.version(), "cited_by"));
        let previous: Option<event_schema::Enrichment> = st
            .get(self.base.store.as_ref(), &enrichments, &e.eprint_uri, &[])?
            .and_then(|c| text(&c, "enrichment"))
            .and_then(|j| serde_json::from_str(&j).ok());
        let key = e.eprint_uri.clone().into_bytes();
        for id in previous.iter().flat_map(|p| super::cited_ids(&p.cited_works)) {
            st.delete(&cited_by, &id, key.clone(), position);
        }
        for id in super::cited_ids(&e.cited_works) {
            st.put(&cited_by, &id, key.clone(), Columns::new(), position);
        }
        let c: Columns = [("enrichment".to_owned(), t(&serde_json::to_string(e).unwrap_or_default()))].into_iter().collect();
        st.put(&enrichments, &e.eprint_uri, Vec::new(), c, position);
        Ok(())
    }
}

impl StagedModel for ImportsModel {
    fn base(&self) -> &ModelBase {
        &self.base
    }

    fn stage(&mut self, st: &mut Staged, event: &Envelope) -> Result<(), ProjectionError> {
        match &event.payload {
            Payload::External(paper) => self.import(st, event, paper),
            Payload::Enrichment(e) => self.enrich(st, e, event.position.ordinal()),
            Payload::User(cmd) => self.user(st, event, &cmd.caller, &cmd.action),
            Payload::Admin(cmd) => match &cmd.action {
                AdminAction::ClaimDecided { claim_id, approved, reason } => {
                    self.decide(st, event, &cmd.actor, *claim_id, *approved, reason.as_deref())
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}
