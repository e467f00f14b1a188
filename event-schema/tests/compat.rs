//! Golden encodings of every schema version: each must keep decoding to its expected JSON.
//! A new version adds files under `test-data/v<N>/`; old files are never edited.

use event_schema::{codec, Position};

#[test]
fn golden_files_decode_to_their_expected_json() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data");
    let mut checked = 0;
    for version_dir in std::fs::read_dir(&root).unwrap() {
        let version_dir = version_dir.unwrap().path();
        for entry in std::fs::read_dir(&version_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("bin") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let expected_path = path.with_extension("expected.json");
            let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
            let decoded = codec::decode(Position { partition: 0, offset: 1 }, &bytes).unwrap();
            assert_eq!(decoded.to_json(), expected, "{}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 5, "expected golden files for every kind, found {checked}");
}
