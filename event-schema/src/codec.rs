//! The CBOR form of events on disk and on the wire, and the upcasters for old versions.
//!
//! An encoded event is a CBOR map `{v, key, kind, at, source, payload}`: `v` is the schema
//! version, `at` the append time in microseconds since the Unix epoch. The position is not
//! part of the bytes: it is where the log stored them.
//!
//! ```
//! use event_schema::{codec, IdentityChange, NewEvent, Payload, Position, Source};
//! let event = NewEvent::repo(
//!     Source::Manual { note: "doc".into() },
//!     Payload::Identity(IdentityChange {
//!         did: "did:plc:abc".into(),
//!         handle: Some("a.test".into()),
//!         display_name: None,
//!     }),
//! );
//! let at = chrono::DateTime::from_timestamp_micros(1_700_000_000_000_000).unwrap();
//! let bytes = codec::encode(&event, at).unwrap();
//! let back = codec::decode(Position { partition: 0, offset: 7 }, &bytes).unwrap();
//! assert_eq!(back.payload, event.payload);
//! assert_eq!(back.appended_at, at);
//! ```

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::events::{
    AccessChange, AccountChange, AdminCommand, BacklinkChange, Enrichment, ExternalPaper, IdentityChange, RecordDelete, RecordWrite,
    Rejected, SearchImpression, UsageEvent, UserCommand,
};
use crate::{CodecError, Envelope, EventKind, NewEvent, Payload, Position, Source, CURRENT_SCHEMA_VERSION};

#[derive(Serialize)]
struct StoredRef<'a> {
    v: u16,
    key: &'a str,
    kind: &'static str,
    at: i64,
    source: &'a Source,
    payload: &'a Payload,
}

/// A stored event as read: the payload already typed when its version and kind are
/// current (the common case, decoded in one pass), kept raw for the upcasters otherwise.
struct StoredRead {
    v: u16,
    key: String,
    kind: String,
    at: i64,
    source: Source,
    payload: PayloadRead,
}

enum PayloadRead {
    Current(Payload),
    Raw(ciborium::Value),
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum StoredField {
    V,
    Key,
    Kind,
    At,
    Source,
    Payload,
    #[serde(other)]
    Unknown,
}

impl<'de> Deserialize<'de> for StoredRead {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StoredVisitor;
        impl<'de> serde::de::Visitor<'de> for StoredVisitor {
            type Value = StoredRead;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a stored event map")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<StoredRead, A::Error> {
                use serde::de::Error;
                let (mut v, mut key, mut kind, mut at, mut source, mut payload) = (None, None, None::<String>, None, None, None);
                while let Some(field) = map.next_key::<StoredField>()? {
                    match field {
                        StoredField::V => v = Some(map.next_value::<u16>()?),
                        StoredField::Key => key = Some(map.next_value()?),
                        StoredField::Kind => kind = Some(map.next_value()?),
                        StoredField::At => at = Some(map.next_value()?),
                        StoredField::Source => source = Some(map.next_value()?),
                        StoredField::Payload => {
                            // Writers put `v` and `kind` before `payload`; when they are current,
                            // decode the payload straight into its type.
                            let current = (v == Some(CURRENT_SCHEMA_VERSION)).then(|| kind.as_deref().and_then(EventKind::parse)).flatten();
                            payload = Some(match current {
                                Some(EventKind::RecordCreate) => PayloadRead::Current(Payload::RecordCreate(map.next_value()?)),
                                Some(EventKind::RecordUpdate) => PayloadRead::Current(Payload::RecordUpdate(map.next_value()?)),
                                Some(EventKind::RecordDelete) => PayloadRead::Current(Payload::RecordDelete(map.next_value()?)),
                                Some(EventKind::Identity) => PayloadRead::Current(Payload::Identity(map.next_value()?)),
                                Some(EventKind::Account) => PayloadRead::Current(Payload::Account(map.next_value()?)),
                                Some(EventKind::Rejected) => PayloadRead::Current(Payload::Rejected(map.next_value()?)),
                                Some(EventKind::Backlink) => PayloadRead::Current(Payload::Backlink(map.next_value()?)),
                                Some(EventKind::Access) => PayloadRead::Current(Payload::Access(map.next_value()?)),
                                Some(EventKind::Admin) => PayloadRead::Current(Payload::Admin(map.next_value()?)),
                                Some(EventKind::User) => PayloadRead::Current(Payload::User(map.next_value()?)),
                                Some(EventKind::Usage) => PayloadRead::Current(Payload::Usage(map.next_value()?)),
                                Some(EventKind::Search) => PayloadRead::Current(Payload::Search(map.next_value()?)),
                                Some(EventKind::External) => PayloadRead::Current(Payload::External(map.next_value()?)),
                                Some(EventKind::Enrichment) => PayloadRead::Current(Payload::Enrichment(map.next_value()?)),
                                None => PayloadRead::Raw(map.next_value()?),
                            });
                        }
                        StoredField::Unknown => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(StoredRead {
                    v: v.ok_or_else(|| A::Error::missing_field("v"))?,
                    key: key.ok_or_else(|| A::Error::missing_field("key"))?,
                    kind: kind.ok_or_else(|| A::Error::missing_field("kind"))?,
                    at: at.ok_or_else(|| A::Error::missing_field("at"))?,
                    source: source.ok_or_else(|| A::Error::missing_field("source"))?,
                    payload: payload.ok_or_else(|| A::Error::missing_field("payload"))?,
                })
            }
        }
        deserializer.deserialize_map(StoredVisitor)
    }
}

/// Encodes an event for the log, stamped with the time the log accepted it.
///
/// # Errors
/// [`CodecError::Encode`] when the payload cannot be represented in CBOR.
pub fn encode(event: &NewEvent, appended_at: DateTime<Utc>) -> Result<Vec<u8>, CodecError> {
    let stored = StoredRef {
        v: CURRENT_SCHEMA_VERSION,
        key: &event.key,
        kind: event.payload.kind().as_str(),
        at: appended_at.timestamp_micros(),
        source: &event.source,
        payload: &event.payload,
    };
    let mut out = Vec::with_capacity(512);
    ciborium::into_writer(&stored, &mut out).map_err(|e| CodecError::Encode(e.to_string()))?;
    Ok(out)
}

/// Decodes an event read at `position`, upcasting it to the current version.
///
/// # Errors
/// [`CodecError::Decode`] for bytes that are not an event, [`CodecError::UnsupportedVersion`]
/// for an event written by a newer build, [`CodecError::UnknownKind`] for a kind this build
/// does not know.
pub fn decode(position: Position, bytes: &[u8]) -> Result<Envelope, CodecError> {
    // cbor4ii reads from the slice; ciborium (which writes the events) reads byte by byte
    // through `io::Read`, several times slower on events with long records.
    let raw: StoredRead = cbor4ii::serde::from_slice(bytes).map_err(|e| CodecError::Decode(e.to_string()))?;
    let appended_at =
        DateTime::from_timestamp_micros(raw.at).ok_or_else(|| CodecError::Decode(format!("append time {} out of range", raw.at)))?;
    let payload = match raw.payload {
        PayloadRead::Current(p) => p,
        PayloadRead::Raw(value) => upcast(raw.v, &raw.kind, value)?,
    };
    Ok(Envelope {
        position,
        key: raw.key,
        kind: payload.kind().as_str().to_owned(),
        schema_version: raw.v,
        appended_at,
        source: raw.source,
        payload,
    })
}

/// Turns a payload written with schema version `version` into the current payload type.
///
/// Each schema version adds one arm here and never edits an older one; the golden files
/// under `test-data/v<N>/` pin what each version decodes to.
///
/// # Errors
/// See [`decode`].
pub fn upcast(version: u16, kind: &str, payload: ciborium::Value) -> Result<Payload, CodecError> {
    match version {
        1 => decode_v1(kind, payload),
        v => Err(CodecError::UnsupportedVersion { version: v, supported: CURRENT_SCHEMA_VERSION }),
    }
}

fn decode_v1(kind: &str, payload: ciborium::Value) -> Result<Payload, CodecError> {
    let kind = EventKind::parse(kind).ok_or_else(|| CodecError::UnknownKind(kind.to_owned()))?;
    fn de<T: serde::de::DeserializeOwned>(v: ciborium::Value) -> Result<T, CodecError> {
        v.deserialized().map_err(|e| CodecError::Decode(e.to_string()))
    }
    Ok(match kind {
        EventKind::RecordCreate => Payload::RecordCreate(de::<RecordWrite>(payload)?),
        EventKind::RecordUpdate => Payload::RecordUpdate(de::<RecordWrite>(payload)?),
        EventKind::RecordDelete => Payload::RecordDelete(de::<RecordDelete>(payload)?),
        EventKind::Identity => Payload::Identity(de::<IdentityChange>(payload)?),
        EventKind::Account => Payload::Account(de::<AccountChange>(payload)?),
        EventKind::Rejected => Payload::Rejected(de::<Rejected>(payload)?),
        EventKind::Backlink => Payload::Backlink(de::<BacklinkChange>(payload)?),
        EventKind::Access => Payload::Access(de::<AccessChange>(payload)?),
        EventKind::Admin => Payload::Admin(de::<AdminCommand>(payload)?),
        EventKind::User => Payload::User(de::<UserCommand>(payload)?),
        EventKind::Usage => Payload::Usage(de::<UsageEvent>(payload)?),
        EventKind::Search => Payload::Search(de::<SearchImpression>(payload)?),
        EventKind::External => Payload::External(Box::new(de::<ExternalPaper>(payload)?)),
        EventKind::Enrichment => Payload::Enrichment(Box::new(de::<Enrichment>(payload)?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AccountStatus;

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp_micros(1_750_000_000_123_456).unwrap()
    }

    fn samples() -> Vec<NewEvent> {
        let src = Source::Firehose { url: "wss://relay.test".into(), seq: 42 };
        vec![
            NewEvent::repo(
                src.clone(),
                Payload::RecordCreate(RecordWrite {
                    did: "did:plc:aaaa".into(),
                    collection: "pub.svc.eprint.submission".into(),
                    rkey: "3jzfcijpj2z2a".into(),
                    cid: "bafyreib2rxk3rh6kzwq".into(),
                    rev: "3jzfcijpj2z2b".into(),
                    record: serde_json::json!({"title": "A", "n": 3, "nested": {"x": [1, 2.5, null, true]}}),
                }),
            ),
            NewEvent::repo(
                src.clone(),
                Payload::RecordUpdate(RecordWrite {
                    did: "did:plc:aaaa".into(),
                    collection: "pub.svc.eprint.submission".into(),
                    rkey: "3jzfcijpj2z2a".into(),
                    cid: "bafyreib2rxk3rh6kzwq".into(),
                    rev: "3jzfcijpj2z2d".into(),
                    // Numbers CBOR writes in every width (half, single and double floats; small,
                    // long and negative integers), long and non-ASCII text, empty containers.
                    record: serde_json::json!({
                        "floats": [1.0, 0.5, -2.75, 65504.0, 1.0e-7, 3.4e38, 1.0e300, f64::MIN_POSITIVE],
                        "ints": [0, 23, 24, 255, 256, 65536, -1, -25, i64::MIN, u64::MAX],
                        "text": "é∑ — ".repeat(500),
                        "empty": {"a": [], "o": {}, "s": ""}
                    }),
                }),
            ),
            NewEvent::repo(
                src.clone(),
                Payload::RecordDelete(RecordDelete {
                    did: "did:plc:aaaa".into(),
                    collection: "pub.svc.eprint.submission".into(),
                    rkey: "3jzfcijpj2z2a".into(),
                    rev: "3jzfcijpj2z2c".into(),
                }),
            ),
            NewEvent::repo(
                src.clone(),
                Payload::Account(AccountChange {
                    did: "did:plc:aaaa".into(),
                    active: false,
                    status: Some(AccountStatus::Other("throttled".into())),
                }),
            ),
            NewEvent {
                key: "at://did:plc:aaaa/pub.svc.eprint.submission/3k".into(),
                source: src.clone(),
                payload: Payload::Usage(crate::UsageEvent {
                    viewer: "0f".repeat(16),
                    robot: false,
                    uri: "at://did:plc:aaaa/pub.svc.eprint.submission/3k".into(),
                    action: crate::UsageAction::SearchClick { impression_id: Some("i1".into()), query: None, position: 2 },
                    at: Some(at()),
                }),
            },
        ]
    }

    #[test]
    fn round_trips_every_kind() {
        for ev in samples() {
            let bytes = encode(&ev, at()).unwrap();
            let back = decode(Position { partition: 3, offset: 9 }, &bytes).unwrap();
            assert_eq!(back.payload, ev.payload);
            assert_eq!(back.key, ev.key);
            assert_eq!(back.source, ev.source);
            assert_eq!(back.kind, ev.payload.kind().as_str());
            assert_eq!(back.appended_at, at());
        }
    }

    #[test]
    fn decodes_fields_in_any_order() {
        // A writer that puts the payload before the kind goes through the upcast path.
        #[derive(Serialize)]
        struct Reordered<'a> {
            payload: &'a Payload,
            source: &'a Source,
            at: i64,
            kind: &'a str,
            key: &'a str,
            v: u16,
            extra: u8,
        }
        for ev in samples() {
            let r = Reordered {
                payload: &ev.payload,
                source: &ev.source,
                at: 7,
                kind: ev.payload.kind().as_str(),
                key: &ev.key,
                v: 1,
                extra: 0,
            };
            let mut bytes = Vec::new();
            ciborium::into_writer(&r, &mut bytes).unwrap();
            let back = decode(Position { partition: 0, offset: 0 }, &bytes).unwrap();
            assert_eq!(back.payload, ev.payload);
        }
    }

    #[test]
    fn every_source_and_usage_action_reads_back_and_a_missing_field_or_unknown_tag_is_refused() {
        let sources = [
            Source::Seed { file: "papers.jsonl.gz".into() },
            Source::Firehose { url: "wss://relay.test".into(), seq: 42 },
            Source::Jetstream { url: "wss://jetstream.test".into(), time_us: 1_750_000_000_000_000 },
            Source::Backfill { host: "https://pds.test".into() },
            Source::Command { nsid: "pub.svc.metrics.recordView".into(), caller: "anonymous".into(), host: "https://svc.test".into() },
            Source::Manual { note: "a test".into() },
        ];
        let actions = [
            crate::UsageAction::View { source: None },
            crate::UsageAction::View { source: Some("search".into()) },
            crate::UsageAction::Download { format: Some("pdf".into()) },
            crate::UsageAction::SearchClick { impression_id: None, query: Some("q".into()), position: 0 },
            crate::UsageAction::SearchDownload { impression_id: "i1".into() },
            crate::UsageAction::DwellTime { impression_id: Some("i1".into()), duration_ms: 4_000 },
        ];
        for (source, action) in sources.iter().zip(actions.iter().cycle()) {
            let payload = Payload::Usage(UsageEvent {
                viewer: "ab".repeat(16),
                robot: false,
                uri: "at://x".into(),
                action: action.clone(),
                at: None,
            });
            let event = NewEvent { key: "at://x".into(), source: source.clone(), payload };
            let back = decode(Position { partition: 0, offset: 0 }, &encode(&event, at()).unwrap()).unwrap();
            assert_eq!((&back.source, &back.payload), (&event.source, &event.payload));
            // The JSON view (the live tap, `svc log`) reads the same.
            let json = serde_json::to_string(&(source, action)).unwrap();
            assert_eq!(serde_json::from_str::<(Source, crate::UsageAction)>(&json).unwrap(), (source.clone(), action.clone()), "{json}");
        }
        for action in &actions[1..] {
            let json = serde_json::to_string(action).unwrap();
            assert_eq!(&serde_json::from_str::<crate::UsageAction>(&json).unwrap(), action);
        }
        let refused =
            [r#"{"type": "firehose", "url": "wss://relay.test"}"#, r#"{"type": "carrier pigeon", "note": "x"}"#, r#"{"note": "no type"}"#];
        for json in refused {
            assert!(serde_json::from_str::<Source>(json).is_err(), "{json}");
        }
        let ignored = serde_json::from_str::<Source>(r#"{"type": "manual", "note": "x", "added": 1}"#).unwrap();
        assert_eq!(ignored, Source::Manual { note: "x".into() }, "unknown fields are ignored, as before");
        for json in [r#"{"action": "dwellTime"}"#, r#"{"action": "searchDownload"}"#, r#"{"action": "stare"}"#] {
            assert!(serde_json::from_str::<crate::UsageAction>(json).is_err(), "{json}");
        }
    }

    #[test]
    fn rejects_garbage_and_future_versions() {
        assert!(matches!(decode(Position { partition: 0, offset: 0 }, b"\xff\x00"), Err(CodecError::Decode(_))));
        let err = upcast(99, "repo.identity", ciborium::Value::Null).unwrap_err();
        assert!(matches!(err, CodecError::UnsupportedVersion { version: 99, .. }));
        let err = upcast(1, "repo.nope", ciborium::Value::Null).unwrap_err();
        assert!(matches!(err, CodecError::UnknownKind(_)));
    }
}
