//! A batch of events as projections receive it.

use std::sync::OnceLock;

use event_schema::{AdminAction, AdminCommand, Envelope, Payload, RecordWrite};
use lexicons::{Lexicons, SUBMISSION};

use crate::submission::{normalize, Submission};
use crate::Checkpoints;

/// Events read from the log in one step, in order per partition, with the checkpoints that
/// follow them.
///
/// A batch may be shared by several projections (a rebuild reads and decodes each batch once
/// for every read model). What they all derive from a record, lexicon validation and the
/// normalized [`Submission`], is computed once per batch, by whichever projection asks first;
/// projections that share a batch therefore share one lexicon set.
pub struct EventBatch {
    events: Vec<Envelope>,
    next: Checkpoints,
    more_to_come: bool,
    submissions: Vec<OnceLock<Result<Submission, String>>>,
}

impl EventBatch {
    /// A batch of `events`, after which the log continues at `next`.
    pub fn new(events: Vec<Envelope>, next: Checkpoints) -> EventBatch {
        let submissions = events.iter().map(|_| OnceLock::new()).collect();
        EventBatch { events, next, more_to_come: false, submissions }
    }

    /// Marks whether more events already wait in the log after this batch (the reader is
    /// catching up), so that projections may defer work that only serves visibility.
    pub fn with_more_to_come(mut self, more_to_come: bool) -> EventBatch {
        self.more_to_come = more_to_come;
        self
    }

    /// Whether more events already waited in the log when this batch was read.
    pub fn more_to_come(&self) -> bool {
        self.more_to_come
    }

    /// The events, in order per partition.
    pub fn events(&self) -> &[Envelope] {
        &self.events
    }

    /// The checkpoints after this batch: the next offset to read per partition.
    pub fn next(&self) -> &Checkpoints {
        &self.next
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether the batch holds no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The URIs of the records of `collection` that the batch writes or deletes, in order
    /// (a record written twice is named twice).
    pub fn record_uris(&self, collection: &str) -> Vec<String> {
        self.record_uris_where(|c| c == collection)
    }

    /// The URIs of the records the batch writes or deletes in the collections `keep`
    /// accepts, in order, in one pass over the batch.
    pub fn record_uris_where(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if keep(&w.collection) => Some(w.uri()),
                Payload::RecordDelete(d) if keep(&d.collection) => Some(d.uri()),
                Payload::Admin(AdminCommand { action: AdminAction::ContentDeleted { uri, collection, .. }, .. }) if keep(collection) => {
                    Some(uri.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The events with what projections derive from them.
    pub fn iter(&self) -> impl Iterator<Item = BatchEvent<'_>> {
        self.events.iter().zip(&self.submissions).map(|(envelope, submission)| BatchEvent { envelope, submission })
    }
}

/// One event of an [`EventBatch`].
pub struct BatchEvent<'a> {
    /// The event.
    pub envelope: &'a Envelope,
    submission: &'a OnceLock<Result<Submission, String>>,
}

impl<'a> BatchEvent<'a> {
    /// For a create or update of a `pub.svc.eprint.submission` record: the record validated
    /// against `lexicons` and normalized, or why it is invalid (the dead-letter reason).
    /// `None` for every other event.
    pub fn submission(&self, lexicons: &Lexicons) -> Option<(&'a RecordWrite, Result<&'a Submission, &'a str>)> {
        let (Payload::RecordCreate(w) | Payload::RecordUpdate(w)) = &self.envelope.payload else { return None };
        if w.collection != SUBMISSION {
            return None;
        }
        let prepared = self.submission.get_or_init(|| {
            lexicons.validate_record(&w.collection, &w.record).map_err(|e| e.to_string())?;
            normalize(&w.record).map_err(|reason| format!("invalid: {reason}"))
        });
        Some((w, prepared.as_ref().map_err(String::as_str)))
    }
}
