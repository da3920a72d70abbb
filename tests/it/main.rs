//! The integration tests: one binary with a module per area, so the
//! library and its dependencies are linked once rather than once per file.
//! `support` (in `tests/support/`, shared with the benchmarks) builds
//! temporary stores, runs the programs, and serves the mock model.

// Test helpers outside `#[test]` functions unwrap too: a failed step
// should fail the test loudly (product code denies both, Cargo.toml).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod agent_inprocess;
mod chat_compaction;
mod chat_continue;
mod chat_loops;
mod chat_markdown;
mod chat_oneshot;
mod chat_prompts;
mod chat_repl;
mod chat_terminal;
mod child_env;
mod command_rules;
mod compact;
mod compaction_hooks;
mod compaction_refs;
mod completions;
mod cost;
mod damaged;
mod dead_server;
mod deathsig;
mod escapes;
mod export;
mod extensions;
mod file_attacks;
mod floor;
mod front;
mod generated;
mod harness;
mod hostile_input;
mod import;
mod import_bad;
mod import_branches;
mod import_codex;
mod import_lossless;
mod import_recorded;
mod imported;
mod kept_scans;
mod layering;
mod lifecycle;
mod mcp;
mod mcp_attacks;
mod memory_home;
mod orphans;
mod permission_prompt;
mod provenance;
mod races;
mod recipes;
mod recipes_scripts;
mod reliability;
mod resets;
mod rewind;
mod rewind_repl;
mod sandbox;
mod sandbox_escape;
mod sandbox_files;
mod sandbox_fs_attacks;
mod sessions_commands;
mod sessions_ls;
mod small_models;
mod store_durability;
mod subagents;
mod terminal_escapes;
