//! `man/` and `completions/` are generated from the programs' argument
//! definitions and committed. This test fails when they are stale; run
//! `GLRS_REGENERATE=1 cargo test --test it generated` to rewrite them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

fn programs() -> Vec<clap::Command> {
    vec![
        glrs::cli::front::command(),
        glrs::cli::chat::Args::command(),
        glrs::cli::sessions::Args::command(),
        glrs::cli::fork::Args::command(),
        glrs::cli::compact::Args::command(),
        glrs::cli::artifacts::Args::command(),
    ]
}

/// Every generated file, by its path relative to the package root.
fn generate() -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let dir = tempfile::tempdir().expect("tempdir");
    for cmd in programs() {
        let name = cmd.get_name().to_string();
        clap_mangen::generate_to(cmd.clone(), dir.path()).expect("man pages");
        for shell in glrs::cli::complete::SHELLS {
            let script = glrs::cli::complete::script(shell, &name).expect("a completion script");
            let file = glrs::cli::complete::script_path(shell, &name);
            files.insert(Path::new("completions").join(file), script.into_bytes());
        }
    }
    for entry in std::fs::read_dir(dir.path()).expect("read man dir").flatten() {
        let bytes = std::fs::read(entry.path()).expect("read man page");
        files.insert(Path::new("man").join(entry.file_name()), bytes);
    }
    files
}

fn committed(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, rel: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
        for entry in entries.flatten() {
            let path = rel.join(entry.file_name());
            if entry.path().is_dir() {
                walk(root, &path, files);
            } else {
                files.insert(path, std::fs::read(entry.path()).unwrap_or_default());
            }
        }
    }
    let mut files = BTreeMap::new();
    for sub in ["man", "completions"] {
        walk(root, Path::new(sub), &mut files);
    }
    files
}

#[test]
fn man_pages_and_completions_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = generate();
    if std::env::var_os("GLRS_REGENERATE").is_some() {
        for sub in ["man", "completions"] {
            let _ = std::fs::remove_dir_all(root.join(sub));
            std::fs::create_dir_all(root.join(sub)).expect("mkdir");
        }
        for (path, bytes) in &fresh {
            if let Some(parent) = root.join(path).parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(root.join(path), bytes).expect("write");
        }
    }
    let on_disk = committed(root);
    let stale: Vec<&PathBuf> =
        fresh.keys().chain(on_disk.keys()).filter(|p| fresh.get(*p) != on_disk.get(*p)).collect();
    assert!(
        stale.is_empty(),
        "generated files are stale: {stale:?}\nrun: GLRS_REGENERATE=1 cargo test --test it generated"
    );
}
