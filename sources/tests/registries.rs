//! The registry clients against the registries' fixture server: ORCID by name and by iD,
//! ROR's chosen organization first, Wikidata and FAST subjects, OpenAlex authors; a
//! registry that fails answers its error.

use sources::fixtures::{Fault, FixtureServer};
use sources::registries::{Registries, RegistryUrls};
use sources::SourceError;

#[tokio::test]
async fn each_registry_is_read_in_its_format() {
    let server = FixtureServer::registries().await;
    let r = Registries::new(&RegistryUrls::all_at(&server.url));

    let people = r.orcid("carberry", 5).await.unwrap();
    assert_eq!(people.len(), 1);
    assert_eq!((people[0].orcid.as_str(), people[0].name.as_str()), ("0000-0002-1825-0097", "Josiah Carberry"));
    assert_eq!(people[0].institutions, ["Brown University", "Wesleyan University"]);
    let by_id = r.orcid("0000-0009-0000-0015", 5).await.unwrap();
    assert_eq!(by_id[0].name, "Yaxiong Wu", "given and family names without a credit name");
    assert!(r.orcid("nobody at all", 5).await.unwrap().is_empty());

    let orgs = r.ror("university", 5).await.unwrap();
    assert_eq!(orgs[0].ror_id, "https://ror.org/05gq02987", "the chosen one first");
    assert_eq!((orgs[0].name.as_str(), orgs[0].city.as_deref(), orgs[0].chosen), ("Brown University", Some("Providence"), true));
    let mit = r.ror("Massachusetts Institute", 5).await.unwrap();
    assert_eq!((mit.len(), mit[0].country.as_deref()), (1, Some("United States")));

    let items = r.wikidata("machine learning", 5).await.unwrap();
    assert_eq!((items[0].id.as_str(), items[0].uri.as_str()), ("Q2539", "http://www.wikidata.org/entity/Q2539"));
    let headings = r.fast("machine", 5).await.unwrap();
    assert_eq!(headings.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(), ["fst01004795", "fst00817247"]);
    assert_eq!(headings[0].uri, "http://id.worldcat.org/fast/1004795");
    assert_eq!(headings[1].description.as_deref(), Some("alt"), "a heading found by another name says so");

    let authors = r.openalex_authors("jason priem", 5).await.unwrap();
    assert_eq!((authors[0].orcid.as_deref(), authors[0].institution.as_deref()), (Some("0000-0001-6187-6610"), Some("OurResearch")));

    server.set_fault(Fault::Malformed);
    assert!(matches!(r.ror("anything else", 5).await, Err(SourceError::Malformed { name: "ror", .. })));
}
