//! glrs: a Unix-style toolkit for conversations with large language models.
//!
//! This library holds everything real; the programs in `bin/` only parse
//! arguments, call in here, and map errors to exit codes. The store (section
//! 1 and 2 of SPEC.md) is the one thing every program shares: session files,
//! prompt history and the locks that let several programs act on one session
//! at once without losing anything.

pub mod agent;
#[cfg(test)]
pub(crate) mod alloc_probe;
pub mod chat;
pub mod checkpoint;
pub mod cli;
pub mod compact;
pub mod config;
pub mod context;
pub mod error;
pub mod exit;
pub mod export;
pub mod fork;
#[cfg(test)]
mod fuzz;
pub mod hooks;
pub mod id;
pub mod import;
pub mod keys;
pub mod limits;
pub mod maintenance;
pub mod mcp;
pub mod message;
pub mod output;
pub mod paths;
pub mod permissions;
pub mod process;
pub mod programs;
pub mod provenance;
pub mod provider;
pub mod prune;
pub mod redact;
pub mod rewind;
pub mod runtime;
pub mod sandbox;
pub mod store;
pub mod time;
pub mod tools;

pub use error::StoreError;
pub use id::SessionId;
pub use paths::Paths;
pub use store::Store;
