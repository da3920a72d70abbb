//! The lock files' tests: exclusive, named holders, removal races, and
//! probes that never refuse a starter.

use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn atomic_write_replaces_and_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    let one = write_atomic(&path, true, |w| w.write_all(b"one")).unwrap();
    let two = write_atomic(&path, true, |w| w.write_all(b"two")).unwrap();
    assert_ne!(one.stamp, two.stamp);
    assert!(two.warning.is_none());
    assert_eq!(Stamp::of(&path).unwrap(), two.stamp);
    assert_eq!(std::fs::read(&path).unwrap(), b"two");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
}

#[test]
fn failed_write_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    write_atomic(&path, true, |w| w.write_all(b"old")).unwrap();
    let err = write_atomic(&path, true, |w| {
        w.write_all(b"half")?;
        Err(std::io::Error::other("disk full"))
    })
    .unwrap_err();
    let shown = err.report().to_string();
    assert!(shown.contains("a.json") && shown.contains("disk full"), "{shown}");
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn open_lock_is_exclusive_and_names_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    assert_eq!(OpenLock::holder(&path).unwrap(), None);
    let held = OpenLock::try_acquire(&path, "3f9a1c2b").unwrap();
    let me = Some(std::process::id());
    assert_eq!(OpenLock::holder(&path).unwrap(), Some(me));
    match OpenLock::try_acquire(&path, "3f9a1c2b").unwrap_err() {
        StoreError::Busy { pid, .. } => assert_eq!(pid, me),
        other => panic!("{other}"),
    }
    drop(held);
    assert_eq!(OpenLock::holder(&path).unwrap(), None);
    OpenLock::try_acquire(&path, "3f9a1c2b").unwrap();
}

#[test]
fn asking_who_holds_the_open_lock_never_refuses_a_starter() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    let (done, probes, seen_held) = (AtomicBool::new(false), AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|scope| {
        // `glrs-sessions status` (or cleanup) asking, again and again.
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if OpenLock::holder(&path).unwrap().is_some() {
                    seen_held.fetch_add(1, Ordering::SeqCst);
                }
                probes.fetch_add(1, Ordering::SeqCst);
            }
        });
        // A chat starting and leaving, again and again: never refused.
        // Each start follows a probe that began with nobody holding it
        // (waiting for that is bounded), so starts meet probes often:
        // before the fix, one in a few dozen was refused.
        let refusal = (0..300).find_map(|i| {
            let before = probes.load(Ordering::SeqCst);
            for _ in 0..100_000 {
                if probes.load(Ordering::SeqCst) > before + 1 {
                    break;
                }
                std::thread::yield_now();
            }
            OpenLock::try_acquire(&path, "3f9a1c2b").err().map(|e| (i, e))
        });
        done.store(true, Ordering::SeqCst);
        assert!(refusal.is_none(), "a starter was refused: {refusal:?}");
    });
    assert!(probes.load(Ordering::SeqCst) > 0, "the prober ran");
    assert!(seen_held.load(Ordering::SeqCst) > 0, "the prober saw it held");
}

#[test]
fn leaving_releases_the_open_lock_though_a_forked_child_shares_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    let held = OpenLock::try_acquire(&path, "3f9a1c2b").unwrap();
    // A child forked before its exec holds a copy of the descriptor: the
    // same open file, so the same lock.
    let child_copy = held.file.try_clone().unwrap();
    drop(held);
    assert_eq!(OpenLock::holder(&path).unwrap(), None);
    OpenLock::try_acquire(&path, "3f9a1c2b").unwrap();
    drop(child_copy);
}

#[test]
fn a_write_lock_is_released_though_a_forked_child_shares_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.compact.lock");
    let held = WriteLock::try_acquire(&path).unwrap().expect("free");
    // What a child forked before its exec holds: the same open file.
    let child_copy = held.file.try_clone().unwrap();
    drop(held);
    assert!(WriteLock::try_acquire(&path).unwrap().is_some(), "released with the copy still open");
    drop(child_copy);
}

#[test]
fn a_refusal_waits_a_moment_for_the_winners_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    // The winner has the lock but has not written its pid yet.
    let winner = open_lock_file(&path, true).unwrap();
    winner.lock().unwrap();
    let writer = {
        let mut file = winner.try_clone().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            file.write_all(b"4242 glrs-compact").unwrap();
        })
    };
    match OpenLock::try_acquire(&path, "3f9a1c2b").unwrap_err() {
        err @ StoreError::Busy { pid: Some(4242), by: Holder::Compaction, .. } => {
            let text = err.to_string();
            assert!(text.contains("being compacted") && text.contains("pid 4242"), "{text}");
            assert!(!text.contains("fork"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    writer.join().unwrap();
}

#[test]
fn a_lock_file_that_is_a_link_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    assert!(OpenLock::try_acquire(&path, "3f9a1c2b").is_err());
    assert!(WriteLock::acquire(&dir.path().join("x.lock")).is_ok());
    std::os::unix::fs::symlink(&victim, dir.path().join("3f9a1c2b.lock")).unwrap();
    assert!(WriteLock::acquire(&dir.path().join("3f9a1c2b.lock")).is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn an_acquirer_whose_file_was_removed_meanwhile_takes_the_new_one() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    let never_saved = vec![dir.path().join("3f9a1c2b.json")];
    for wait in [Some(LOCK_WAIT), None] {
        let held = OpenLock::try_acquire(&path, "3f9a1c2b").unwrap().removed_on_release_unless(never_saved.clone());
        // Another acquirer opened the lock file while it was held...
        let mut stale = Some(open_lock_file(&path, true).unwrap());
        // (Kept open, so its inode number cannot be reused meanwhile.)
        let stale_copy = stale.as_ref().unwrap().try_clone().unwrap();
        let stale_ino = stale_copy.metadata().unwrap().ino();
        // ...and the holder released it: a session never saved, so
        // the file went while still locked.
        drop(held);
        assert!(!path.exists(), "the lock file of a session never saved is removed");
        let mut opened = 0;
        let got = lock_exclusive_from(&path, wait, || {
            opened += 1;
            stale.take().map_or_else(|| open_lock_file(&path, true), Ok)
        })
        .unwrap();
        let Locked::Mine(file) = got else { panic!("refused a lock nobody holds") };
        assert_eq!(opened, 2, "locked the removed file, then started over");
        let now = std::fs::metadata(&path).unwrap().ino();
        assert_eq!(file.metadata().unwrap().ino(), now, "holds the file the name names");
        assert_ne!(now, stale_ino);
        // Held, the new file refuses a third acquirer.
        assert!(matches!(OpenLock::try_acquire(&path, "3f9a1c2b"), Err(StoreError::Busy { .. })));
    }
}

#[test]
fn a_saved_session_keeps_its_lock_file_and_cleanup_removes_only_unheld_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.open");
    let saved = dir.path().join("3f9a1c2b.json");
    std::fs::write(&saved, "{}").unwrap();
    let held = OpenLock::try_acquire(&path, "3f9a1c2b").unwrap().removed_on_release_unless(vec![saved]);
    assert!(!remove_unheld(&path).unwrap(), "a held lock file is left alone");
    drop(held);
    assert!(path.exists(), "the lock file of a saved session stays");
    assert!(remove_unheld(&path).unwrap());
    assert!(!path.exists());
    assert!(!remove_unheld(&path).unwrap(), "gone already");
}

#[test]
fn removing_lock_files_on_release_never_lets_two_hold_one_name() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("3f9a1c2b.open");
    let write = dir.path().join("3f9a1c2b.lock");
    let never_saved = vec![dir.path().join("3f9a1c2b.json")];
    let (open_inside, write_inside, open_taken) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let enter = |inside: &AtomicUsize| {
        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
        std::thread::yield_now();
        inside.fetch_sub(1, Ordering::SeqCst);
    };
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..300 {
                    // The open lock, not waiting, removed on release.
                    if let Ok(lock) = OpenLock::try_acquire(&open, "3f9a1c2b") {
                        let _lock = lock.removed_on_release_unless(never_saved.clone());
                        open_taken.fetch_add(1, Ordering::SeqCst);
                        enter(&open_inside);
                    }
                    // The write lock, waiting, removed as the holder's
                    // last act (as removing a session does).
                    let lock = WriteLock::acquire(&write).unwrap();
                    enter(&write_inside);
                    std::fs::remove_file(&write).unwrap();
                    drop(lock);
                }
            });
        }
    });
    assert!(open_taken.load(Ordering::SeqCst) > 0);
    assert!(!open.exists() && !write.exists(), "the last holders removed them");
}

#[test]
fn a_write_lock_held_elsewhere_is_waited_for_a_bounded_time_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.lock");
    // Another process's lock, as a helper holding it would (flock locks
    // of two open files conflict within one process too).
    let holder = open_lock_file(&path, true).unwrap();
    holder.lock().unwrap();
    let started = std::time::Instant::now();
    let err = WriteLock::acquire_within(&path, Duration::from_millis(300)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
    let text = err.to_string();
    assert!(matches!(err, StoreError::LockHeld { .. }), "{text}");
    assert!(
        text.contains("3f9a1c2b.lock") && text.contains("session 3f9a1c2b") && text.contains("nothing was written"),
        "{text}"
    );
    holder.unlock().unwrap();
    assert!(WriteLock::acquire_within(&path, Duration::from_millis(300)).is_ok(), "free again: taken");
}
