//! User tags: the tag as written and its normalized form, listed under that form; and the
//! rows that keep each tag's statistics as records come and go, so that a tag's detail, a
//! search of tags, suggestions and trends read counts instead of every tag record
//! ([`stats`]), among them how many eprints every two tags share.

use serde_json::json;

use super::{created_at, get, normalize_tag, object, text, Kind, Listing, Normalized, Record, SetMember};

pub(super) fn user_tag(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let tag = text(r, "tag").ok_or("tag missing")?;
    let normalized = normalize_tag(tag);
    if normalized.is_empty() {
        return Err(format!("tag: {tag:?} has no letters or digits"));
    }
    let created = created_at(r)?;
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("tag", json!(tag)),
        ("normalizedForm", json!(normalized)),
        ("nodeUri", get(r, "nodeUri")),
        ("nodeSlug", get(r, "nodeSlug")),
        ("nodeSubkind", get(r, "nodeSubkind")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let n = normalized.as_str();
    let day = created.format("%Y-%m-%d").to_string();
    let mut lists = vec![
        Listing::on_eprint(Kind::Tag, eprint),
        Listing::by_author(Kind::Tag, did),
        Listing::tagged(n),
        Listing::all_tags(),
        stats::on_eprint(n, eprint),
        stats::by_tagger(n, did),
        stats::in_form(n, tag),
        stats::used_on(&day, n),
    ];
    let mut sets = vec![
        SetMember::new(&stats::eprints(n), eprint, &stats::on_eprint(n, eprint)),
        SetMember::new(&stats::on_eprint_distinct(eprint), n, &stats::on_eprint(n, eprint)).paired(stats::SHARED),
        SetMember::new(&stats::taggers(n), did, &stats::by_tagger(n, did)),
        SetMember::new(&stats::forms(n), tag, &stats::in_form(n, tag)),
        SetMember::new(&stats::day(&day), n, &stats::used_on(&day, n)),
    ];
    for word in stats::words(n) {
        sets.push(SetMember::new(&stats::word_index(), &stats::word_key(word, n), &Listing::tagged(n)));
    }
    lists.dedup();
    Ok(Normalized { view, created_at: created, lists, sets })
}

/// The listings and sets that keep each tag's statistics: its uses ([`Listing::tagged`]),
/// its distinct eprints, taggers and written forms (each a set of keys), how many uses each
/// day saw, and an index of the words of every tag for searches by prefix.
pub mod stats {
    use super::Listing;

    /// A tag's uses on one eprint.
    pub fn on_eprint(tag: &str, eprint: &str) -> Listing {
        Listing(format!("tag@name:{tag}@on:{eprint}"))
    }
    /// A tag's uses by one account.
    pub fn by_tagger(tag: &str, did: &str) -> Listing {
        Listing(format!("tag@name:{tag}@by:{did}"))
    }
    /// A tag's uses in one written form.
    pub fn in_form(tag: &str, form: &str) -> Listing {
        Listing(format!("tag@name:{tag}@form:{form}"))
    }
    /// A tag's uses on one day (`YYYY-MM-DD`, of the record's `createdAt`).
    pub fn used_on(day: &str, tag: &str) -> Listing {
        Listing(format!("tag@day:{day}@{tag}"))
    }
    /// The set of the eprints carrying a tag.
    pub fn eprints(tag: &str) -> Listing {
        Listing(format!("tag@name:{tag}@eprints"))
    }
    /// The set of the distinct tags on one eprint; every two of them share the eprint, counted
    /// in [`SHARED`].
    pub fn on_eprint_distinct(eprint: &str) -> Listing {
        Listing(format!("tag@eprint:{eprint}@tags"))
    }
    /// The [`pairs`](super::super::pairs) space of tags sharing eprints: for each tag, the
    /// tags that co-occur with it, ranked by how many eprints carry both.
    pub const SHARED: &str = "tag@shared";
    /// The tags that co-occur with `tag`, most shared eprints first.
    pub fn cooccurring(tag: &str) -> Listing {
        super::super::pairs::ranked(SHARED, tag)
    }
    /// The set of the accounts using a tag.
    pub fn taggers(tag: &str) -> Listing {
        Listing(format!("tag@name:{tag}@taggers"))
    }
    /// The set of the forms a tag was written in.
    pub fn forms(tag: &str) -> Listing {
        Listing(format!("tag@name:{tag}@forms"))
    }
    /// The set of the tags used on one day.
    pub fn day(day: &str) -> Listing {
        Listing(format!("tag@day:{day}"))
    }
    /// The set of `word ␁ tag` keys of every tag in use: the tags with a word starting with
    /// some letters are one range of it.
    pub fn word_index() -> Listing {
        Listing("tag@words".into())
    }
    /// The words of a normalized tag (`machine-learning`: `machine`, `learning`).
    pub fn words(tag: &str) -> impl Iterator<Item = &str> {
        let mut seen = Vec::new();
        tag.split('-').filter(|w| !w.is_empty()).filter(move |w| {
            let new = !seen.contains(w);
            seen.push(w);
            new
        })
    }
    /// The key of a tag under one of its words in [`word_index`].
    pub fn word_key(word: &str, tag: &str) -> String {
        format!("{word}\u{1}{tag}")
    }
    /// The tag of a [`word_key`].
    pub fn tag_of(key: &str) -> &str {
        key.split_once('\u{1}').map_or(key, |(_, tag)| tag)
    }
}
