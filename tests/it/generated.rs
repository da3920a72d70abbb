//! `man/` and `completions/` are generated from the programs' argument
//! definitions and committed. This test fails when they are stale; run
//! `GLRS_REGENERATE=1 cargo test --test it generated` to rewrite them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

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
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd.clone(), &name, &mut out);
            let file = match shell {
                Shell::Bash => format!("{name}.bash"),
                Shell::Zsh => format!("_{name}"),
                _ => format!("{name}.fish"),
            };
            files.insert(Path::new("completions").join(file), out);
        }
    }
    for entry in std::fs::read_dir(dir.path()).expect("read man dir").flatten() {
        let bytes = std::fs::read(entry.path()).expect("read man page");
        files.insert(Path::new("man").join(entry.file_name()), bytes);
    }
    files
}

fn committed(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for sub in ["man", "completions"] {
        let Ok(entries) = std::fs::read_dir(root.join(sub)) else { continue };
        for entry in entries.flatten() {
            files.insert(Path::new(sub).join(entry.file_name()), std::fs::read(entry.path()).unwrap_or_default());
        }
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
