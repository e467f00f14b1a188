//! The source clients' tests, one binary: each client against its fixture server.
//! One test binary per crate: each file here is a module (`cargo test -p sources --test integration <module>::`),
//! linked once rather than once per file.

mod arxiv;
mod arxiv_oai;
mod crossref;
mod openalex;
mod registries;
mod semantic_scholar;
