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

/// Help and man pages are plain text: a doc comment's Markdown code marks
/// would show as they are (issue 32).
#[test]
fn help_and_man_pages_show_no_backticks_and_say_ids_as_the_readme_does() {
    fn helps(cmd: &mut clap::Command, out: &mut Vec<(String, String)>) {
        out.push((cmd.get_name().to_string(), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            helps(sub, out);
        }
    }
    let mut all = Vec::new();
    for mut cmd in generate::programs() {
        cmd.build();
        helps(&mut cmd, &mut all);
    }
    for (name, page) in generate::man_pages() {
        all.push((name, String::from_utf8(page).expect("UTF-8")));
    }
    for (name, text) in &all {
        assert!(!text.contains('`'), "{name} shows a backtick:\n{text}");
    }
    let said = "unique prefix of 4 or more hex characters";
    // The user docs (README.md, and GUIDE.md and docs/ once it is split).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = BTreeMap::new();
    walk(root, &root.join("docs"), &mut docs);
    for name in ["README.md", "GUIDE.md"] {
        docs.insert(PathBuf::from(name), std::fs::read(root.join(name)).unwrap_or_default());
    }
    assert!(docs.values().any(|d| String::from_utf8_lossy(d).contains(said)), "the user docs: {said}");
    let sessions = all.iter().find(|(n, _)| n == "glrs-sessions.1").expect("glrs-sessions.1");
    assert!(sessions.1.contains(said), "glrs-sessions.1: {said}");
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
