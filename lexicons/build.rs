//! Compiles every lexicon document under `lexicons/` into the binary: writes
//! `builtin.rs`, the list of `include_str!`s, so that adding a document is adding its file.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("lexicons directory").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    // The manifest directory at run time: a build script compiled once is reused by checkouts
    // elsewhere that share the target directory.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("lexicons");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    let mut code = String::from("&[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        code.push_str(&format!("    include_str!({:?}),\n", f.display().to_string()));
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("builtin.rs");
    std::fs::write(out, code).expect("write builtin.rs");
}
