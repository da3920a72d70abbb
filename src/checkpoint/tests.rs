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
    let mut found = changes(&git, &now.commit, &first.commit).await.unwrap();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let shown: Vec<String> = found.iter().map(|c| format!("{} {}", c.status.letter(), c.path)).collect();
    assert_eq!(shown, ["A gone.txt", "D new.txt", "M run.sh", "M src/a.txt"]);
    restore::apply(&git, &now.commit, &first.commit).await.unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(ws.join("gone.txt")).unwrap(), "bye\n");
    assert!(!ws.join("new.txt").exists());
    assert_eq!(mode(&ws.join("run.sh")) & 0o111, 0);
    assert!(ws.join("x.log").exists() && ws.join("secret/key").exists() && ws.join("big.bin").exists());

    // And back again: the rewind is undone by going to the checkpoint before it.
    let after = record(&mut t).await;
    restore::apply(&git, &after.commit, &now.commit).await.unwrap();
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
    assert_eq!(lifecycle::forget(&data, &id), vec![shadow.clone()], "shared: pruned, not removed");
    assert!(!shadow.join(ref_name(&id)).exists() && shadow.join(ref_name(&other)).exists());
    lifecycle::prune(&shadow).await.unwrap();
    assert!(lifecycle::forget(&data, &other).is_empty());
    assert!(!shadow.exists(), "the last session's checkpoints go with the shadow");
}

#[test]
fn keys_are_stable_and_name_the_folder() {
    let key = workspace_key(Path::new("/home/ada/src/my app"));
    assert_eq!(key, workspace_key(Path::new("/home/ada/src/my app")));
    assert!(key.starts_with("my_app-") && key.len() == "my_app-".len() + 16, "{key}");
    assert_ne!(key, workspace_key(Path::new("/home/bob/src/my app")));
}
