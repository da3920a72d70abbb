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
