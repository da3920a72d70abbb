//! The machinery on real folders with the real `git`: record, change,
//! restore, in a plain folder and in a git work tree.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;

fn settings(max: u64) -> Settings {
    Settings { enabled: true, exclude: vec!["secret/".into()], max_file_bytes: max }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

async fn record(t: &mut Tracker) -> Recorded {
    t.record(true).await.unwrap().0.unwrap()
}

#[tokio::test]
async fn a_rewind_puts_back_contents_modes_deletions_and_leaves_the_rest() {
    if find_git().is_none() {
        panic!("these tests need git on PATH");
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("secret")).unwrap();
    std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(ws.join("src/a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(ws.join("big.bin"), vec![7u8; 2000]).unwrap();
    let id = crate::SessionId::parse("aaaa0001").unwrap();
    let mut t = Tracker::new(&data, &ws, &id, settings(1000));
    assert_eq!(t.workspace(), Some(ws.canonicalize().unwrap().as_path()));
    let before = t.record(true).await.unwrap();
    let first = before.0.unwrap();
    assert_eq!(first.too_large, ["big.bin"]);
    assert!(before.1.iter().any(|n| n.contains("big.bin")), "{:?}", before.1);
    assert!(t.record(false).await.unwrap().0.is_none(), "unchanged: nothing recorded");

    std::fs::write(ws.join("src/a.txt"), "two\n").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("new.txt"), "new\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.join("x.log"), "ignored\n").unwrap();
    std::fs::write(ws.join("secret/key"), "excluded\n").unwrap();
    let now = record(&mut t).await;
    let mut files = now.files.clone();
    files.sort();
    assert_eq!(files, ["gone.txt", "new.txt", "run.sh", "src/a.txt"]);

    let git = t.git().unwrap().clone();
    let found = changes(&git, &now.commit, &first.commit).await.unwrap();
    let mut sorted = found.clone();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let shown: Vec<String> = sorted.iter().map(|c| format!("{} {}", c.status.letter(), c.path)).collect();
    assert_eq!(shown, ["A gone.txt", "D new.txt", "M run.sh", "M src/a.txt"]);
    let (present, rewound) = t.rewind_to(&first.commit).await.unwrap();
    assert_eq!((present.commit.as_str(), rewound), (now.commit.as_str(), found), "the present was recorded already");
    assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(ws.join("gone.txt")).unwrap(), "bye\n");
    assert!(!ws.join("new.txt").exists());
    assert_eq!(mode(&ws.join("run.sh")) & 0o111, 0);
    assert!(ws.join("x.log").exists() && ws.join("secret/key").exists() && ws.join("big.bin").exists());

    // And back again: the rewind is undone by going to the checkpoint before
    // it; the checkpoint of the present it takes records the rewound files.
    let (after, _) = t.rewind_to(&now.commit).await.unwrap();
    assert_eq!(changes(&git, &after.commit, &first.commit).await.unwrap(), []);
    assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).unwrap(), "two\n");
    assert_eq!(mode(&ws.join("run.sh")) & 0o111, 0o111);
    assert!(ws.join("new.txt").exists() && !ws.join("gone.txt").exists());
}

#[tokio::test]
async fn a_work_tree_is_recorded_from_its_root_and_its_git_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("repo"));
    std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/f"), "x").unwrap();
    let id = crate::SessionId::parse("aaaa0002").unwrap();
    let mut t = Tracker::new(&data, &ws.join("sub"), &id, settings(1 << 20));
    assert_eq!(t.workspace(), Some(ws.canonicalize().unwrap().as_path()));
    record(&mut t).await;
    let shadow = shadow_of(&data, &ws.canonicalize().unwrap());
    assert!(shadow.join(ref_name(&id)).is_file());
    let listed = t.git().unwrap().run(&["ls-files"], None).await.unwrap().text();
    assert_eq!(listed, "sub/f", "the user's .git is never recorded");
    assert_eq!(std::fs::read_dir(ws.join(".git")).unwrap().count(), 2);

    let other = crate::SessionId::parse("aaaa0003").unwrap();
    let mut t2 = Tracker::new(&data, &ws, &other, settings(1 << 20));
    record(&mut t2).await;
    let own = std::fs::read_to_string(shadow.join(ref_name(&id))).unwrap().trim().to_string();
    let kept = std::fs::read_to_string(shadow.join(ref_name(&other))).unwrap().trim().to_string();
    let object = |c: &str| shadow.join("objects").join(&c[..2]).join(&c[2..]);
    assert!(own != kept && object(&own).is_file());
    let forgotten = lifecycle::forget(&data, &id);
    let expected = lifecycle::Forgotten { shadow: shadow.clone(), commit: Some(own.clone()) };
    assert_eq!(forgotten, vec![expected], "shared: swept, not removed");
    assert!(!shadow.join(ref_name(&id)).exists() && shadow.join(ref_name(&other)).exists());
    lifecycle::sweep(&forgotten[0]).await.unwrap();
    assert!(!object(&own).exists(), "the forgotten session's commit is gone at once");
    assert!(object(&kept).is_file(), "the other's stays");
    let listed = t2.git().unwrap().run(&["ls-files"], None).await.unwrap().text();
    assert_eq!(listed, "sub/f", "what the other's index holds stays");
    t2.git().unwrap().run(&["cat-file", "-e", &format!("{kept}^{{tree}}")], None).await.unwrap();
    assert!(lifecycle::forget(&data, &other).is_empty());
    assert!(!shadow.exists(), "the last session's checkpoints go with the shadow");
}

#[tokio::test]
async fn bytes_are_kept_as_they_are_whatever_gitattributes_say() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    // Line endings converted on the way in and out, and a filter: none of
    // it may apply to a checkpoint.
    std::fs::write(ws.join(".gitattributes"), "* text eol=crlf\n*.bin filter=nothere\n").unwrap();
    std::fs::write(ws.join("lf.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    std::fs::write(ws.join("x.bin"), "raw\n").unwrap();
    let id = crate::SessionId::parse("aaaa0006").unwrap();
    let mut t = Tracker::new(&data, &ws, &id, settings(1 << 20));
    let first = record(&mut t).await;
    for f in ["lf.txt", "crlf.txt", "x.bin"] {
        std::fs::write(ws.join(f), "changed\n").unwrap();
    }
    let (_, changed) = t.rewind_to(&first.commit).await.unwrap();
    assert_eq!(changed.len(), 3, "{changed:?}");
    assert_eq!(std::fs::read(ws.join("lf.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(std::fs::read(ws.join("crlf.txt")).unwrap(), b"one\r\ntwo\r\n");
    assert_eq!(std::fs::read(ws.join("x.bin")).unwrap(), b"raw\n");
}

#[tokio::test]
async fn a_new_sessions_index_starts_from_a_live_ones_and_a_bad_start_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a"), "a").unwrap();
    let first = crate::SessionId::parse("aaaa0007").unwrap();
    let mut t = Tracker::new(&data, &ws, &first, settings(1 << 20));
    record(&mut t).await;
    let git = t.git().unwrap().clone();
    let shadow = git.dir.clone();
    std::fs::write(ws.join("b"), "b").unwrap();

    // Not its own, not a file that is no session's, not a session without
    // checkpoints: the live session's index.
    let dead = index_path(&shadow, &crate::SessionId::parse("aaaa00de").unwrap());
    std::fs::write(&dead, "not an index").unwrap();
    std::fs::write(shadow.join("glrs-index/notes.txt"), "not an index").unwrap();
    let second = crate::SessionId::parse("aaaa0008").unwrap();
    assert!(snapshot::seed(&shadow, &index_path(&shadow, &second)));
    assert_eq!(std::fs::read(index_path(&shadow, &second)).unwrap(), std::fs::read(&git.index).unwrap());
    std::fs::remove_file(index_path(&shadow, &second)).unwrap();
    let mut t2 = Tracker::new(&data, &ws, &second, settings(1 << 20));
    let made = record(&mut t2).await;
    let tree = git.run(&["rev-parse", &format!("{}^{{tree}}", made.commit)], None).await.unwrap().text();
    assert_eq!(tree, truth(&git, dir.path()).await, "b is recorded as well as a");

    // A live session's index that git cannot read: dropped, and the
    // checkpoint made without it.
    std::fs::write(shadow.join(ref_name(&crate::SessionId::parse("aaaa00de").unwrap())), format!("{}\n", made.commit))
        .unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&dead).unwrap().set_modified(later).unwrap();
    let third = crate::SessionId::parse("aaaa0009").unwrap();
    let mut t3 = Tracker::new(&data, &ws, &third, settings(1 << 20));
    let made3 = record(&mut t3).await;
    let tree3 = git.run(&["rev-parse", &format!("{}^{{tree}}", made3.commit)], None).await.unwrap().text();
    assert_eq!(tree3, tree);
}

#[tokio::test]
async fn a_slow_checkpoint_says_so_once_with_its_numbers_and_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    for n in 0..3 {
        std::fs::write(ws.join(format!("f{n}")), "x").unwrap();
    }
    let id = crate::SessionId::parse("aaaa0005").unwrap();
    let mut t = Tracker::new(&data, &ws, &id, settings(1 << 20));
    // Every checkpoint is slower than nothing: the first is said, no other.
    t.slow_after = std::time::Duration::ZERO;
    let (_, said) = t.record(true).await.unwrap();
    let slow: Vec<&String> = said.iter().filter(|n| n.contains("took")).collect();
    assert_eq!(slow.len(), 1, "{said:?}");
    let text = slow[0];
    assert!(text.contains(&ws.canonicalize().unwrap().display().to_string()), "{text}");
    assert!(text.contains("(3 files)") && text.contains(" s ("), "the numbers: {text}");
    assert!(text.contains("checkpoints.exclude") && text.contains("checkpoints.enabled: false"), "{text}");
    std::fs::write(ws.join("f0"), "changed").unwrap();
    let (_, said) = t.record(true).await.unwrap();
    assert!(said.iter().all(|n| !n.contains("took")), "once: {said:?}");
    let (_, said) = t.record(false).await.unwrap();
    assert!(said.is_empty(), "{said:?}");
}

#[test]
fn keys_are_stable_and_name_the_folder() {
    let key = workspace_key(Path::new("/home/ada/src/my app"));
    assert_eq!(key, workspace_key(Path::new("/home/ada/src/my app")));
    assert!(key.starts_with("my_app-") && key.len() == "my_app-".len() + 16, "{key}");
    assert_ne!(key, workspace_key(Path::new("/home/bob/src/my app")));
}

/// The tree `git add -A` makes of the workspace on an empty index: what a
/// snapshot must equal, however the workspace got where it is.
async fn truth(git: &git::Git, dir: &Path) -> String {
    let index = dir.join(format!("truth-{}", std::process::id()));
    let _ = std::fs::remove_file(&index);
    let fresh = git.with_index(index.clone());
    fresh.run(&["add", "-A", "--", "."], None).await.unwrap();
    let tree = fresh.run(&["write-tree"], None).await.unwrap().text();
    std::fs::remove_file(&index).unwrap();
    tree
}

/// A git repository at `dir` with one commit.
fn nested_repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git").current_dir(dir).args(args).output().unwrap().status.success();
        assert!(ok, "git {args:?} in the nested repository");
    };
    git(&["init", "-q"]);
    std::fs::write(dir.join("s"), "s\n").unwrap();
    git(&["add", "s"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "s"]);
}

/// A change made to the workspace, and what it is.
type Step<'a> = (&'static str, Box<dyn Fn() + 'a>);

#[tokio::test]
async fn a_snapshot_is_what_git_add_all_makes_through_every_kind_of_change() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    let w = |p: &str, text: &str| {
        let path = ws.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w(".gitignore", "*.log\n");
    w("a", "one\n");
    w("d/x", "x\n");
    w("e/f", "f\n");
    w("other/f", "other\n");
    w("run.sh", "#!/bin/sh\n");
    w("same", "same\n");
    symlink("a", ws.join("l")).unwrap();
    std::fs::write(ws.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), "latin-1 name\n").unwrap();
    nested_repository(&ws.join("sub"));
    let empty = ws.join("unborn");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(std::process::Command::new("git").current_dir(&empty).args(["init", "-q"]).status().unwrap().success());

    let id = crate::SessionId::parse("aaaa0004").unwrap();
    let mut t = Tracker::new(&data, &ws, &id, settings(1 << 20));
    let (_, said) = t.record(true).await.unwrap();
    assert!(said.iter().any(|n| n.contains("without a commit") && n.contains("unborn")), "{said:?}");
    // Truth cannot record a repository without a commit either.
    std::fs::remove_dir_all(&empty).unwrap();
    let git = t.git().unwrap().clone();
    let steps: Vec<Step> = vec![
        ("nothing changed", Box::new(|| {})),
        ("same size, new contents", Box::new(|| w("a", "two\n"))),
        (
            "an executable bit",
            Box::new(|| std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap()),
        ),
        (
            "rewritten, contents the same",
            Box::new(|| {
                w("same", "same\n");
                // An hour old: not racily clean, so git trusts its stat from now on.
                let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
                std::fs::File::options().write(true).open(ws.join("same")).unwrap().set_modified(old).unwrap();
            }),
        ),
        (
            "a file becomes a folder",
            Box::new(|| {
                std::fs::remove_file(ws.join("a")).unwrap();
                w("a/inner", "inner\n");
            }),
        ),
        (
            "a folder becomes a file",
            Box::new(|| {
                std::fs::remove_dir_all(ws.join("d")).unwrap();
                w("d", "now a file\n");
            }),
        ),
        (
            "a link retargeted, a file deleted, an ignored file made",
            Box::new(|| {
                std::fs::remove_file(ws.join("l")).unwrap();
                symlink("run.sh", ws.join("l")).unwrap();
                std::fs::remove_file(ws.join("run.sh")).unwrap();
                w("x.log", "ignored\n");
            }),
        ),
        (
            "a folder replaced by a link to another",
            Box::new(|| {
                std::fs::remove_dir_all(ws.join("e")).unwrap();
                symlink("other", ws.join("e")).unwrap();
            }),
        ),
    ];
    for (step, change) in steps {
        change();
        let (recorded, _) = t.record(true).await.unwrap();
        let tree = git.run(&["rev-parse", &format!("{}^{{tree}}", recorded.unwrap().commit)], None).await.unwrap();
        assert_eq!(tree.text(), truth(&git, dir.path()).await, "after: {step}");
    }
    // The file rewritten unchanged was hashed once and its stat refreshed:
    // it is not named (nor read) again.
    let changed = git.run(&["diff-files", "-z", "--name-only"], None).await.unwrap();
    assert!(!changed.records().contains(&"same".to_string()), "{:?}", changed.records());
}

/// Issue 32: an unchanged workspace costs a stat per file and runs no git;
/// a change runs git again and is recorded.
#[tokio::test]
async fn an_unchanged_workspace_runs_no_git_and_a_change_is_still_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/a.txt"), "one\n").unwrap();
    let id = crate::SessionId::parse("aaaa0003").unwrap();
    let mut t = Tracker::new(&data, &ws, &id, settings(1000));
    record(&mut t).await;
    // Named wait: past the time within which a stat is not trusted (a
    // change in the same clock tick could leave it as it was).
    std::thread::sleep(std::time::Duration::from_millis(3100));
    assert!(t.record(false).await.unwrap().0.is_none(), "git looked, and the workspace is captured");
    let git = find_git().unwrap();
    t.set_git_program(dir.path().join("no-git-here"));
    for _ in 0..3 {
        assert!(t.record(false).await.unwrap().0.is_none(), "unchanged, and no git ran");
    }
    std::fs::write(ws.join("src/new.txt"), "new\n").unwrap();
    assert!(t.record(false).await.is_err(), "a new file makes git run");
    t.set_git_program(git);
    let now = record(&mut t).await;
    assert_eq!(now.files, ["src/new.txt"]);
}
