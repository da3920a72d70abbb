//! `man/` and `completions/` are generated from the programs' argument
//! definitions (`glrs::cli::generate`, the same code `glrs man` and `glrs
//! completions` run) and committed. This test fails when they are stale;
//! run `GLRS_REGENERATE=1 cargo test --test it generated` to rewrite them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use glrs::cli::generate;

/// Every generated file, by its path relative to the package root.
fn generate() -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (path, bytes) in generate::completions() {
        files.insert(Path::new("completions").join(path), bytes);
    }
    for (name, bytes) in generate::man_pages() {
        files.insert(Path::new("man").join(name), bytes);
    }
    files
}

/// Every file under `dir`, recursively, by its path relative to `root`.
fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            files.insert(rel.to_path_buf(), std::fs::read(&path).unwrap_or_default());
        }
    }
}

#[test]
fn man_pages_and_completions_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = generate();
    if std::env::var_os("GLRS_REGENERATE").is_some() {
        for sub in ["man", "completions"] {
            let _ = std::fs::remove_dir_all(root.join(sub));
        }
        for (path, bytes) in &fresh {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("write");
        }
    }
    let mut on_disk = BTreeMap::new();
    for sub in ["man", "completions"] {
        walk(root, &root.join(sub), &mut on_disk);
    }
    let stale: Vec<&PathBuf> =
        fresh.keys().chain(on_disk.keys()).filter(|p| fresh.get(*p) != on_disk.get(*p)).collect();
    assert!(
        stale.is_empty(),
        "generated files are stale: {stale:?}\nrun: GLRS_REGENERATE=1 cargo test --test it generated"
    );
}
