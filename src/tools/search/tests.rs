use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (path, text) in [
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {\n    let token = parse();\n    println!(\"{token}\");\n}\n"),
        ("src/lib/parse.rs", "pub fn parse() -> Token {\n    Token::new()\n}\n"),
        ("target/debug/out.rs", "let token = 1;\n"),
        ("run.log", "token in a log\n"),
        (".hidden/x.rs", "token hidden\n"),
        ("bin.dat", "token\0binary"),
    ] {
        std::fs::create_dir_all(d.join(path).parent().unwrap()).unwrap();
        std::fs::write(d.join(path), text).unwrap();
    }
    dir
}

#[test]
fn grep_honours_gitignore_and_formats_like_rg() {
    let dir = tree();
    let stop = AtomicBool::new(false);
    let out = grep(
        dir.path(),
        &GrepQuery { pattern: "token", path: None, glob: None, ignore_case: false, context: 0, limit: 100 },
        &Judged::default(),
        &stop,
    );
    assert_eq!(out.content, "src/main.rs:2:    let token = parse();\nsrc/main.rs:3:    println!(\"{token}\");\n");
    let out = grep(
        dir.path(),
        &GrepQuery {
            pattern: "TOKEN",
            path: Some("src"),
            glob: Some("*.rs"),
            ignore_case: true,
            context: 0,
            limit: 100,
        },
        &Judged::default(),
        &stop,
    );
    assert!(out.content.contains("src/lib/parse.rs:1:pub fn parse() -> Token {"), "{}", out.content);
    let out = grep(
        dir.path(),
        &GrepQuery { pattern: "token", path: None, glob: None, ignore_case: true, context: 0, limit: 2 },
        &Judged::default(),
        &stop,
    );
    assert!(out.content.contains("[showing 2 of 4 matching lines"), "{}", out.content);
    let out = grep(
        dir.path(),
        &GrepQuery { pattern: "new", path: None, glob: None, ignore_case: false, context: 1, limit: 100 },
        &Judged::default(),
        &stop,
    );
    assert_eq!(
        out.content,
        "src/lib/parse.rs-1-pub fn parse() -> Token {\nsrc/lib/parse.rs:2:    Token::new()\nsrc/lib/parse.rs-3-}\n--\n"
    );
    assert!(
        grep(
            dir.path(),
            &GrepQuery { pattern: "(", path: None, glob: None, ignore_case: false, context: 0, limit: 100 },
            &Judged::default(),
            &stop
        )
        .is_error
    );
    assert!(
        grep(
            dir.path(),
            &GrepQuery { pattern: "nothing here", path: None, glob: None, ignore_case: false, context: 0, limit: 100 },
            &Judged::default(),
            &stop
        )
        .content
        .starts_with("no matches")
    );
    assert!(
        grep(
            dir.path(),
            &GrepQuery { pattern: "x", path: Some("missing"), glob: None, ignore_case: false, context: 0, limit: 100 },
            &Judged::default(),
            &stop
        )
        .is_error
    );
}

#[test]
fn find_honours_gitignore() {
    let dir = tree();
    let stop = AtomicBool::new(false);
    assert_eq!(
        find(dir.path(), &FindQuery { pattern: "*.rs", path: None, limit: 1000 }, &Judged::default(), &stop).content,
        "src/lib/parse.rs\nsrc/main.rs"
    );
    assert_eq!(
        find(dir.path(), &FindQuery { pattern: "lib", path: None, limit: 1000 }, &Judged::default(), &stop).content,
        "src/lib/"
    );
    assert_eq!(
        find(dir.path(), &FindQuery { pattern: "src/*.rs", path: None, limit: 1000 }, &Judged::default(), &stop)
            .content,
        "src/main.rs"
    );
    assert!(
        find(dir.path(), &FindQuery { pattern: "*", path: None, limit: 1 }, &Judged::default(), &stop)
            .content
            .contains("[showing 1 of")
    );
    assert!(
        find(dir.path(), &FindQuery { pattern: "*.log", path: None, limit: 1000 }, &Judged::default(), &stop)
            .content
            .starts_with("no paths")
    );
}

fn query<'a>(pattern: &'a str, path: Option<&'a str>, limit: usize) -> GrepQuery<'a> {
    GrepQuery { pattern, path, glob: None, ignore_case: false, context: 0, limit }
}

/// Issue 31, item 15: a sparse 64 GB file is searched a buffer at a time
/// (its first one holds NULs: binary, done), never read whole.
#[test]
fn a_sparse_64_gb_file_ends_its_search_at_the_first_nul() {
    let dir = tree();
    let sparse = std::fs::File::create(dir.path().join("huge.txt")).unwrap();
    sparse.set_len(64 << 30).unwrap();
    std::fs::write(dir.path().join("start.txt"), "token first\n").unwrap();
    let stop = AtomicBool::new(false);
    let out = grep(dir.path(), &query("token", None, 100), &Judged::default(), &stop);
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("start.txt:1:token first") && !out.content.contains("huge.txt"), "{}", out.content);
    let out = grep(dir.path(), &query("token", Some("huge.txt"), 100), &Judged::default(), &stop);
    assert!(out.content.starts_with("no matches"), "{}", out.content);
}

/// A NUL past the first buffer still makes the file binary: what matched
/// before it is not shown.
#[test]
fn a_nul_after_a_match_makes_the_file_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = b"token here\n".to_vec();
    text.extend(std::iter::repeat_n(b'a', 1 << 20));
    text.extend(b"\n\0\n");
    std::fs::write(dir.path().join("late.bin"), &text).unwrap();
    let out = grep(dir.path(), &query("token", None, 100), &Judged::default(), &AtomicBool::new(false));
    assert!(out.content.starts_with("no matches"), "{}", out.content);
}

/// Only `limit` lines of a file are kept; every match is counted.
#[test]
fn a_file_of_many_matches_keeps_the_limit_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("many.txt"), "hit\n".repeat(100_000)).unwrap();
    let out = grep(dir.path(), &query("hit", None, 3), &Judged::default(), &AtomicBool::new(false));
    assert_eq!(out.content.lines().filter(|l| l.starts_with("many.txt:")).count(), 3, "{}", out.content);
    assert!(out.content.contains("[showing 3 of 100000 matching lines"), "{}", out.content);
}

/// `/proc` and `/sys` are never searched: not as the path, nor inside a walk.
#[test]
fn proc_and_sys_are_not_searched() {
    let stop = AtomicBool::new(false);
    for path in ["/proc", "/proc/self/status", "/sys"] {
        let q = GrepQuery { path: Some(path), ..query("Name", None, 10) };
        let out = grep(Path::new("/"), &q, &Judged::default(), &stop);
        assert!(out.is_error && out.content.contains("does not search"), "{path}: {}", out.content);
    }
    assert!(stream::is_virtual(Path::new("/proc/self")) && !stream::is_virtual(Path::new("/tmp")));
}
