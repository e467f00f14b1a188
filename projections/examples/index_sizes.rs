//! Prints the space each field of a tantivy index takes, per part (terms, postings,
//! positions, fast fields, field norms) and the doc store: `cargo run --release -p
//! projections --example index_sizes -- DATA_DIR/search/vN` (or its `people/`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: index_sizes INDEX_DIR")?;
    let index = tantivy::Index::open_in_dir(&dir)?;
    let schema = index.schema();
    let searcher = index.reader()?.searcher();
    let usage = serde_json::to_value(searcher.space_usage()?)?;
    let mut rows: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for segment in usage["segments"].as_array().into_iter().flatten() {
        for part in ["termdict", "postings", "positions", "fast_fields", "fieldnorms"] {
            for (field, u) in segment[part]["fields"].as_object().into_iter().flatten() {
                let name = field
                    .parse::<u32>()
                    .map(|f| schema.get_field_name(tantivy::schema::Field::from_field_id(f)).to_owned())
                    .unwrap_or(field.clone());
                *rows.entry((name, part.to_owned())).or_default() += u["num_bytes"].as_u64().unwrap_or(0);
            }
        }
        *rows.entry(("(doc store)".into(), "store".into())).or_default() +=
            segment["store"]["data"].as_u64().unwrap_or(0) + segment["store"]["offsets"].as_u64().unwrap_or(0);
    }
    println!("| field | part | MB |\n|---|---|---|");
    for ((field, part), bytes) in rows {
        println!("| {field} | {part} | {:.2} |", bytes as f64 / 1e6);
    }
    Ok(())
}
