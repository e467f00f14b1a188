//! What handlers answer with: the views of the read models, shared by XRPC and REST. Only
//! handlers (`xrpc/`, `rest/`) import them.

pub mod attached;
pub mod citations;
pub mod eprint;
pub mod integrations;
