//! A deterministic scholarly layer for seeded papers: reviews with replies, annotations on
//! pages, entity links, endorsements, tags, citations and related works between seeded
//! papers, versions with changelogs, and profiles, written as repository events by made-up
//! accounts (`svc seed --social`). The same papers in the same order always give the same
//! events. The distributions are documented in docs/seeding.md.

use std::collections::{HashMap, HashSet};

use event_schema::{IdentityChange, NewEvent, Payload, RecordWrite, Source};
use lexicons::Lexicons;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::repo::{record_cid, tid};
use crate::seed::{account_for, Paper, SeedAccount};

/// How many made-up reviewer accounts write the layer.
pub const REVIEWERS: usize = 400;
/// How many earlier papers per primary category stay candidates for citations.
const RECENT_PER_CATEGORY: usize = 64;

const MOTIVATIONS: &[(&str, u64)] = &[("commenting", 60), ("questioning", 25), ("highlighting", 15)];
const CONTRIBUTIONS: &[(&str, u64)] = &[
    ("methodological", 20),
    ("empirical", 18),
    ("theoretical", 12),
    ("analytical", 12),
    ("technical", 10),
    ("conceptual", 8),
    ("data", 8),
    ("reproducibility", 5),
    ("synthesis", 3),
    ("visualization", 2),
    ("pedagogical", 2),
];
const CITATION_TYPES: &[(&str, u64)] =
    &[("cites", 60), ("extends", 15), ("uses-method", 12), ("uses-data", 8), ("refutes", 3), ("reviews", 2)];
const RELATIONS: &[(&str, u64)] = &[("related", 55), ("extends", 25), ("replicates", 8), ("contradicts", 6), ("is-supplement-to", 6)];
const REVIEW_OPENINGS: &[&str] = &[
    "The main result is clearly stated and the proofs are easy to follow.",
    "The experiments support the claims, but the baselines are dated.",
    "I am not convinced the assumptions hold in practice.",
    "A careful and well-written paper; the related work section could be broader.",
    "The ablation study is the strongest part of the paper.",
    "The method is interesting, but the evaluation is limited to one dataset.",
    "Could the authors clarify how the hyperparameters were chosen?",
    "The contribution is incremental over prior work but solidly executed.",
];
const REPLIES: &[&str] = &[
    "Thank you for the careful reading; we will address this in the next version.",
    "Good point. The appendix has the details; we will move them to the main text.",
    "We ran this experiment as well and will add it.",
    "Agreed, this deserves a longer discussion.",
];
const ANNOTATION_NOTES: &[&str] =
    &["Is this bound tight?", "A citation is needed here.", "This step is not obvious to me.", "Nice observation.", "Typo?"];
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "from", "that", "this", "via", "using", "into", "over", "under", "between", "towards", "toward", "about",
    "their", "its", "are", "our", "new", "on", "of", "in", "a", "an", "to", "by", "as", "is", "at", "or", "we", "based", "approach",
    "study", "analysis",
];

/// A deterministic stream of numbers (SplitMix64) seeded from a string.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: &str) -> Rng {
        let d = Sha256::digest(format!("svc-social/{seed}").as_bytes());
        Rng(u64::from_be_bytes(d[..8].try_into().unwrap_or_default()))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `percent` / 100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn weighted<'a>(&mut self, items: &'a [(&'a str, u64)]) -> &'a str {
        let total: u64 = items.iter().map(|(_, w)| w).sum();
        let mut at = self.below(total);
        for (item, w) in items {
            if at < *w {
                return item;
            }
            at -= w;
        }
        items[0].0
    }
}

/// A seeded paper as the layer refers to it.
#[derive(Debug, Clone)]
pub struct SeededPaper {
    /// The submission's AT URI.
    pub uri: String,
    /// Its title.
    pub title: String,
    /// Its first author's account (the repository owner).
    pub owner: SeedAccount,
    /// Its announcement day, `YYYY-MM-DD`.
    pub date: String,
}

/// Generates the layer, paper by paper, remembering earlier papers for citations.
pub struct SocialGenerator {
    lexicons: Lexicons,
    source: Source,
    recent: HashMap<String, Vec<SeededPaper>>,
    /// Reviewer accounts whose identity and profile events were written.
    introduced: HashSet<String>,
    /// Counts per collection, for the report.
    pub counts: HashMap<&'static str, usize>,
}

/// The made-up reviewer number `i`.
pub fn reviewer(i: usize) -> SeedAccount {
    account_for(&format!("Reviewer {i:03}"))
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty()).collect()
}

impl SocialGenerator {
    /// A generator writing events with `source`.
    pub fn new(source: Source) -> SocialGenerator {
        SocialGenerator {
            lexicons: Lexicons::builtin(),
            source,
            recent: HashMap::new(),
            introduced: HashSet::new(),
            counts: HashMap::new(),
        }
    }

    /// A record create event, if the collection's lexicon accepts the record (the layer
    /// never writes a record its own lexicons refuse).
    fn record(&mut self, did: &str, collection: &'static str, micros: u64, record: Value, out: &mut Vec<NewEvent>) -> Option<String> {
        let mut record = record;
        record["$type"] = json!(collection);
        if self.lexicons.validate_record(collection, &record).is_err() {
            return None;
        }
        let cid = record_cid(&record).ok()?;
        let clock = (Sha256::digest(format!("{did}/{collection}/{micros}").as_bytes())[0] as u16) & 0x3ff;
        let rkey = if collection == "pub.svc.actor.profile" { "self".to_owned() } else { tid(micros, clock) };
        let uri = format!("at://{did}/{collection}/{rkey}");
        out.push(NewEvent::repo(
            self.source.clone(),
            Payload::RecordCreate(RecordWrite {
                did: did.to_owned(),
                collection: collection.to_owned(),
                rkey,
                cid,
                rev: tid(micros + 1, clock),
                record,
            }),
        ));
        *self.counts.entry(collection).or_default() += 1;
        Some(uri)
    }

    /// The identity and profile of reviewer `i`, the first time they write.
    fn introduce(&mut self, i: usize, micros: u64, out: &mut Vec<NewEvent>) -> SeedAccount {
        let account = reviewer(i);
        if self.introduced.insert(account.did.clone()) {
            let name = format!("Reviewer {i:03}");
            out.push(NewEvent::repo(
                self.source.clone(),
                Payload::Identity(IdentityChange {
                    did: account.did.clone(),
                    handle: Some(account.handle.clone()),
                    display_name: Some(name.clone()),
                }),
            ));
            let mut rng = Rng::new(&account.did);
            let field = *rng.pick(&[
                "machine learning",
                "statistics",
                "condensed matter",
                "number theory",
                "computer vision",
                "quantum information",
            ]);
            let profile = json!({
                "displayName": name,
                "bio": format!("Reviews papers in {field}."),
                "affiliations": [{"name": format!("University {}", 1 + rng.below(60))}],
                "researchKeywords": [{"label": field}],
            });
            self.record(&account.did, "pub.svc.actor.profile", micros, profile, out);
        }
        account
    }

    fn rich(text: &str) -> Value {
        json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}])
    }

    /// The layer's events for one seeded paper (after its own events), by its distributions.
    pub fn events_for(&mut self, paper: &Paper, seeded: &SeededPaper) -> Vec<NewEvent> {
        let mut out = Vec::new();
        let mut rng = Rng::new(&paper.id);
        let day = chrono::NaiveDate::parse_from_str(&seeded.date, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc().timestamp_micros().max(0) as u64)
            .unwrap_or_default();
        // Each record is dated a few days after the paper, in the order it is written.
        let mut clock = day + 86_400_000_000;
        let mut at = |rng: &mut Rng| {
            clock += 3_600_000_000 + rng.below(2 * 86_400_000_000);
            clock
        };
        let iso = |micros: u64| {
            chrono::DateTime::from_timestamp_micros(micros as i64).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let uri = seeded.uri.clone();
        let owner = seeded.owner.did.clone();

        // Reviews: none for half the papers, else 1–4; replies by the first author (40 %),
        // and the reviewer answering back (20 % of replies).
        let reviews = if rng.chance(50) { 0 } else { 1 + rng.below(4) };
        for _ in 0..reviews {
            let t = at(&mut rng);
            let who = self.introduce(rng.below(REVIEWERS as u64) as usize, t, &mut out);
            let text = *rng.pick(REVIEW_OPENINGS);
            let motivation = rng.weighted(MOTIVATIONS);
            let review = json!({"eprintUri": uri, "body": Self::rich(text), "motivationFallback": motivation, "createdAt": iso(t)});
            let Some(review_uri) = self.record(&who.did, "pub.svc.review.comment", t, review, &mut out) else { continue };
            if rng.chance(40) {
                let t = at(&mut rng);
                let reply = json!({"eprintUri": uri, "body": Self::rich(rng.pick::<&str>(REPLIES)), "parentComment": review_uri, "createdAt": iso(t)});
                if let Some(reply_uri) = self.record(&owner, "pub.svc.review.comment", t, reply, &mut out) {
                    if rng.chance(20) {
                        let t = at(&mut rng);
                        let back = json!({"eprintUri": uri, "body": Self::rich("Thanks, that answers my question."), "parentComment": reply_uri, "createdAt": iso(t)});
                        self.record(&who.did, "pub.svc.review.comment", t, back, &mut out);
                    }
                }
            }
        }

        // Annotations: 40 % of papers, 1–3, each on a page 1–12 quoting five words of the
        // abstract; a third get a reply from the first author.
        let abstract_words = words(&paper.abstract_text);
        if abstract_words.len() >= 9 && rng.chance(40) {
            for _ in 0..1 + rng.below(3) {
                let t = at(&mut rng);
                let who = self.introduce(rng.below(REVIEWERS as u64) as usize, t, &mut out);
                let start = 1 + rng.below(abstract_words.len() as u64 - 7) as usize;
                let exact = abstract_words[start..start + 5].join(" ");
                let page = rng.below(12);
                let target = json!({
                    "selector": {"$type": "pub.svc.annotation.comment#textQuoteSelector", "type": "TextQuoteSelector", "exact": exact,
                                 "prefix": abstract_words[start - 1], "suffix": abstract_words[start + 5]},
                    "refinedBy": {"type": "TextPositionSelector", "pageNumber": page, "start": 100 * start, "end": 100 * start + exact.len()},
                });
                let annotation = json!({"eprintUri": uri, "body": Self::rich(rng.pick::<&str>(ANNOTATION_NOTES)), "target": target.clone(),
                                        "motivationFallback": *rng.pick(&["commenting", "questioning", "highlighting"]), "createdAt": iso(t)});
                let Some(annotation_uri) = self.record(&who.did, "pub.svc.annotation.comment", t, annotation, &mut out) else { continue };
                if rng.chance(33) {
                    let t = at(&mut rng);
                    let reply = json!({"eprintUri": uri, "body": Self::rich(rng.pick::<&str>(REPLIES)), "target": target, "parentAnnotation": annotation_uri, "createdAt": iso(t)});
                    self.record(&owner, "pub.svc.annotation.comment", t, reply, &mut out);
                }
            }
        }

        // Entity links: 20 % of papers link a title word to its arXiv category.
        if let (Some(category), true) = (paper.categories.first(), rng.chance(20)) {
            let title_words = words(&seeded.title);
            if let Some(word) = title_words.iter().find(|w| w.len() > 5) {
                let t = at(&mut rng);
                let who = self.introduce(rng.below(REVIEWERS as u64) as usize, t, &mut out);
                let link = json!({
                    "eprintUri": uri,
                    "target": {"source": uri, "selector": {"type": "TextQuoteSelector", "exact": word},
                               "refinedBy": {"type": "TextPositionSelector", "start": 0, "end": word.len(), "pageNumber": 0}},
                    "linkedEntity": {"$type": "pub.svc.annotation.entityLink#externalIdLink", "type": "externalId", "system": "arxiv", "identifier": category, "label": category},
                    "confidence": 500 + rng.below(500),
                    "createdAt": iso(t),
                });
                self.record(&who.did, "pub.svc.annotation.entityLink", t, link, &mut out);
            }
        }

        // Endorsements: 45 % of papers, 1–5, each of 1–3 contribution types.
        if rng.chance(45) {
            for _ in 0..1 + rng.below(5) {
                let t = at(&mut rng);
                let who = self.introduce(rng.below(REVIEWERS as u64) as usize, t, &mut out);
                let mut kinds: Vec<&str> = Vec::new();
                for _ in 0..1 + rng.below(3) {
                    let k = rng.weighted(CONTRIBUTIONS);
                    if !kinds.contains(&k) {
                        kinds.push(k);
                    }
                }
                self.record(
                    &who.did,
                    "pub.svc.review.endorsement",
                    t,
                    json!({"eprintUri": uri, "contributions": kinds, "createdAt": iso(t)}),
                    &mut out,
                );
            }
        }

        // Tags: 70 % of papers, 1–3 from the title's words and the primary category, in the
        // forms people write (capitalized, hyphens, underscores, a leading #).
        if rng.chance(70) {
            let mut candidates: Vec<String> = words(&seeded.title)
                .into_iter()
                .filter(|w| w.len() > 4 && !STOPWORDS.contains(&w.to_lowercase().as_str()))
                .map(str::to_lowercase)
                .collect();
            if let Some(c) = paper.categories.first() {
                candidates.push(c.to_lowercase());
            }
            for _ in 0..1 + rng.below(3) {
                if candidates.is_empty() {
                    break;
                }
                let base = candidates.remove(rng.below(candidates.len() as u64) as usize);
                let form = match rng.below(4) {
                    0 => base.clone(),
                    1 => format!("#{base}"),
                    2 => base.replace('-', "_"),
                    _ => base.chars().next().map(|c| c.to_uppercase().collect::<String>() + &base[c.len_utf8()..]).unwrap_or(base.clone()),
                };
                let t = at(&mut rng);
                let who = self.introduce(rng.below(REVIEWERS as u64) as usize, t, &mut out);
                self.record(&who.did, "pub.svc.eprint.userTag", t, json!({"eprintUri": uri, "tag": form, "createdAt": iso(t)}), &mut out);
            }
        }

        // Citations (0–4) and a related work (25 %) to earlier papers of the same primary
        // category, written by the paper's own first author.
        let category = paper.categories.first().cloned().unwrap_or_default();
        let earlier = self.recent.get(&category).cloned().unwrap_or_default();
        if !earlier.is_empty() {
            for _ in 0..rng.below(5) {
                let cited = rng.pick(&earlier).clone();
                let t = at(&mut rng);
                let citation = json!({"eprintUri": uri, "citedWork": {"title": cited.title, "svcUri": cited.uri},
                                      "citationType": rng.weighted(CITATION_TYPES), "createdAt": iso(t)});
                self.record(&owner, "pub.svc.eprint.citation", t, citation, &mut out);
            }
            if rng.chance(25) {
                let related = rng.pick(&earlier).clone();
                let t = at(&mut rng);
                let work =
                    json!({"eprintUri": uri, "relatedUri": related.uri, "relationType": rng.weighted(RELATIONS), "createdAt": iso(t)});
                self.record(&owner, "pub.svc.eprint.relatedWork", t, work, &mut out);
            }
        }

        // Versions: 10 % of papers get a second version with a changelog.
        if rng.chance(10) {
            let t = at(&mut rng);
            self.record(
                &owner,
                "pub.svc.eprint.version",
                t,
                json!({"eprintUri": uri, "versionNumber": 2, "changes": "Corrected typos and clarified section 3.", "createdAt": iso(t)}),
                &mut out,
            );
            let changelog = json!({"eprintUri": uri, "version": {"major": 1, "minor": 1, "patch": 0}, "previousVersion": {"major": 1, "minor": 0, "patch": 0},
                                   "summary": "Corrections", "sections": [{"category": "corrections", "items": [{"description": "Fixed typos", "changeType": "fixed"}]}],
                                   "createdAt": iso(t)});
            self.record(&owner, "pub.svc.eprint.changelog", t, changelog, &mut out);
        }

        let list = self.recent.entry(category).or_default();
        if list.len() >= RECENT_PER_CATEGORY {
            list.remove(0);
        }
        list.push(seeded.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(i: usize) -> (Paper, SeededPaper) {
        let paper = Paper {
            id: format!("2501.{i:05}"),
            title: format!("Spectral Methods for Graph Learning number {i}"),
            abstract_text: "We study spectral methods for learning on graphs and show that the bound is tight for sparse random graphs of bounded degree.".into(),
            authors: vec!["Ada Lovelace".into()],
            categories: vec!["cs.LG".into()],
            date: "2025-01-02".into(),
            doi: None,
        };
        let seeded = SeededPaper {
            uri: format!("at://{}/pub.svc.eprint.submission/p{i}", account_for("Ada Lovelace").did),
            title: paper.title.clone(),
            owner: account_for("Ada Lovelace"),
            date: paper.date.clone(),
        };
        (paper, seeded)
    }

    fn layer(n: usize) -> (Vec<NewEvent>, HashMap<&'static str, usize>) {
        let mut generator = SocialGenerator::new(Source::Manual { note: "test".into() });
        let events = (0..n).flat_map(|i| {
            let (p, s) = paper(i);
            generator.events_for(&p, &s)
        });
        let events: Vec<NewEvent> = events.collect();
        (events, generator.counts)
    }

    #[test]
    fn the_layer_is_deterministic_and_covers_every_collection() {
        let (a, counts) = layer(200);
        let (b, _) = layer(200);
        assert_eq!(
            serde_json::to_string(&a.iter().map(|e| &e.payload).collect::<Vec<_>>()).unwrap(),
            serde_json::to_string(&b.iter().map(|e| &e.payload).collect::<Vec<_>>()).unwrap()
        );
        for collection in [
            "pub.svc.review.comment",
            "pub.svc.annotation.comment",
            "pub.svc.annotation.entityLink",
            "pub.svc.review.endorsement",
            "pub.svc.eprint.userTag",
            "pub.svc.eprint.citation",
            "pub.svc.eprint.relatedWork",
            "pub.svc.eprint.version",
            "pub.svc.eprint.changelog",
            "pub.svc.actor.profile",
        ] {
            assert!(counts.get(collection).is_some_and(|n| *n > 0), "no {collection} in {counts:?}");
        }
    }
}
