//! The in-place append's tests: what it writes, and what a kill, a power cut
//! or a failing disk at any point leaves once recovered.

use super::*;
use crate::store::{Entry, SessionFile};
use std::path::PathBuf;

const NOW: &str = "2026-11-30T08:00:00.000Z";

fn notice(text: &str) -> Entry {
    Entry::Notice { at: NOW.into(), text: text.into() }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    journal: PathBuf,
    file: SessionFile,
}

/// A session file in the store's layout with `n` entries.
fn session(n: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3f9a1c2b.json");
    let journal = dir.path().join("3f9a1c2b.journal");
    let mut file = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
    file.set("model", Value::from("openai/gpt-4.1"));
    for i in 0..n {
        file.events.push(notice(&format!("entry {i}")).to_raw().unwrap());
    }
    std::fs::write(&path, file.to_bytes()).unwrap();
    Fixture { _dir: dir, path, journal, file }
}

fn change(texts: &[&str], tokens: u64) -> Append {
    let mut change = Append::new().set("contextTokens", tokens);
    for t in texts {
        change = change.entry(&notice(t)).unwrap();
    }
    change
}

impl Fixture {
    /// The file as a full rewrite would write it after `changes`.
    fn rewritten(&mut self, texts: &[&str], tokens: u64) -> Vec<u8> {
        change(texts, tokens).apply(&mut self.file).unwrap();
        self.file.set("updatedAt", Value::from(NOW));
        self.file.to_bytes()
    }

    /// Recover, then append (as [`super::super::Store::append`] does).
    fn run(&self, texts: &[&str], tokens: u64, stop: StopAt) -> Outcome {
        let (mut state, _) = journal::recover(&self.path, &self.journal).unwrap();
        append_stopping(&self.path, &self.journal, &mut state, &change(texts, tokens), None, NOW, stop).unwrap()
    }

    /// [`Fixture::run`], keeping an error.
    fn try_run(&self, texts: &[&str], tokens: u64, stop: StopAt) -> Result<Outcome, StoreError> {
        let (mut state, _) = journal::recover(&self.path, &self.journal).unwrap();
        append_stopping(&self.path, &self.journal, &mut state, &change(texts, tokens), None, NOW, stop)
    }

    fn recover(&self) -> bool {
        journal::recover(&self.path, &self.journal).unwrap().1
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }
}

#[test]
fn an_append_in_place_writes_what_a_rewrite_would() {
    let mut f = session(3);
    let before = std::fs::metadata(&f.path).unwrap().ino();
    let Outcome::Done(mark) = f.run(&["new one", "new two"], 1234, StopAt::Never) else { panic!("in place") };
    assert_eq!(f.bytes(), f.rewritten(&["new one", "new two"], 1234));
    assert_eq!(std::fs::metadata(&f.path).unwrap().ino(), before);
    assert_eq!(mark, Mark::of_bytes(before, &f.bytes()));
    assert!(journal::is_active(&f.journal), "committed in the journal until a checkpoint");
    assert!(!f.recover(), "nothing to redo");
    // A shorter tail (fewer digits, no entries) truncates.
    assert!(matches!(f.run(&[], 7, StopAt::Never), Outcome::Done(_)));
    assert_eq!(f.bytes(), f.rewritten(&[], 7));
    let again: Value = serde_json::from_slice(&f.bytes()).unwrap();
    assert_eq!(again["events"].as_array().unwrap().len(), 5);
}

#[test]
fn a_write_stopped_at_any_point_recovers_to_the_old_or_the_new_file() {
    for stop in [StopAt::RecordHalfWritten, StopAt::AfterRecord, StopAt::TailHalfWritten] {
        let mut f = session(2);
        // One committed append first, so the stopped one is not the
        // journal's first record.
        f.run(&["before"], 5, StopAt::Never);
        let old = f.rewritten(&["before"], 5);
        let big = "x".repeat(10_000);
        f.run(&[big.as_str()], 99, stop);
        let redone = f.recover();
        if stop == StopAt::RecordHalfWritten {
            assert!(f.bytes() == old && !redone, "{stop:?}: the append never happened");
        } else {
            assert!(f.bytes() == f.rewritten(&[big.as_str()], 99) && redone, "{stop:?}: committed, so redone");
        }
        // Recovering again changes nothing; the next append works.
        assert!(!f.recover());
        assert!(matches!(f.run(&["after"], 1, StopAt::Never), Outcome::Done(_)));
        assert_eq!(f.bytes(), f.rewritten(&["after"], 1));
    }
}

#[test]
fn a_power_cut_that_lost_unsynced_pages_in_any_order_is_redone() {
    let mut f = session(2);
    let synced = f.bytes();
    let texts: Vec<String> = (0..4).map(|i| format!("{i}{}", "y".repeat(3000))).collect();
    for (i, t) in texts.iter().enumerate() {
        f.run(&[t.as_str()], i as u64, StopAt::Never);
        f.rewritten(&[t.as_str()], i as u64);
    }
    let whole = f.bytes();
    assert_eq!(whole, f.file.to_bytes());
    // The disk kept the last checkpoint's bytes and some later pages:
    // here the last 4 KiB at the new length, and the old header.
    let mut cut = synced.clone();
    cut.resize(whole.len(), 0);
    let from = whole.len() - 4096;
    cut[from..].copy_from_slice(&whole[from..]);
    std::fs::write(&f.path, &cut).unwrap();
    assert!(serde_json::from_slice::<Value>(&cut).is_err());
    assert!(f.recover());
    assert_eq!(f.bytes(), whole, "every committed append is back");
    // Or the disk kept nothing after the checkpoint: the file parses,
    // but misses the committed appends until recovered.
    std::fs::write(&f.path, &synced).unwrap();
    assert!(f.recover());
    assert_eq!(f.bytes(), whole);
}

#[test]
fn a_checkpoint_empties_the_journal_and_stale_records_are_never_applied() {
    let mut f = session(1);
    let big = "z".repeat(20_000);
    let journal_len = |f: &Fixture| std::fs::metadata(&f.journal).map_or(0, |m| m.len());
    let mut i = 0;
    while journal_len(&f) <= journal::CHECKPOINT_BYTES {
        f.run(&[big.as_str()], i, StopAt::Never);
        f.rewritten(&[big.as_str()], i);
        i += 1;
    }
    // The next append checkpoints first: the journal starts again.
    let old_chain = std::fs::read(&f.journal).unwrap();
    f.run(&["small"], 99, StopAt::Never);
    let expected = f.rewritten(&["small"], 99);
    let new_chain = std::fs::read(&f.journal).unwrap();
    assert!(new_chain.len() < 1024, "checkpointed: {} bytes", new_chain.len());
    assert_eq!(f.bytes(), expected);
    // A power cut lost the emptying but kept the new record: the old
    // chain's bytes follow it. They do not chain to it.
    let mut mixed = new_chain.clone();
    mixed.extend_from_slice(&old_chain[new_chain.len()..]);
    std::fs::write(&f.journal, &mixed).unwrap();
    assert!(!f.recover());
    assert_eq!(f.bytes(), expected);
    assert_eq!(std::fs::read(&f.journal).unwrap(), new_chain, "the stale bytes are trimmed");
}

#[test]
fn a_journal_is_never_applied_to_a_file_it_does_not_describe() {
    let f = session(2);
    f.run(&["cut"], 5, StopAt::AfterRecord);
    // The file replaced by a rename (another inode): the journal is stale.
    let replacement = f.file.to_bytes();
    let tmp = f.path.with_extension("tmp");
    std::fs::write(&tmp, &replacement).unwrap();
    std::fs::rename(&tmp, &f.path).unwrap();
    assert!(!f.recover());
    assert_eq!(f.bytes(), replacement);
    assert!(!journal::is_active(&f.journal), "emptied");
    // A cleared journal is nothing to recover.
    f.run(&["cut"], 5, StopAt::AfterRecord);
    journal::clear(&f.path, &f.journal).unwrap();
    assert!(!f.recover());
    assert_eq!(f.bytes(), replacement);
    assert_eq!(std::fs::metadata(&f.journal).unwrap().len(), 0);
    // The same inode, changed before the journal's first tail: refused.
    f.run(&["cut"], 5, StopAt::AfterRecord);
    let mut bytes = f.bytes();
    let at = bytes.len() - 40;
    bytes[at] = b' ';
    std::fs::OpenOptions::new().write(true).open(&f.path).unwrap().write_all_at(&bytes, 0).unwrap();
    let err = journal::recover(&f.path, &f.journal).unwrap_err();
    assert!(err.to_string().contains("move that journal away"), "{err}");
}

#[test]
fn files_not_in_the_layout_are_rewritten_whole() {
    let f = session(0);
    assert!(matches!(f.run(&["first"], 1, StopAt::Never), Outcome::Rewrite), "no entries yet");
    let f = session(2);
    let pretty = serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&f.file.to_bytes()).unwrap()).unwrap();
    std::fs::write(&f.path, pretty).unwrap();
    assert!(matches!(f.run(&["x"], 1, StopAt::Never), Outcome::Rewrite), "pretty-printed");
    let f = session(2);
    let state = || journal::recover(&f.path, &f.journal).unwrap().0;
    let grows = Append::new().set("key", "work").entry(&notice("x")).unwrap();
    let out = append_stopping(&f.path, &f.journal, &mut state(), &grows, None, NOW, StopAt::Never).unwrap();
    assert!(matches!(out, Outcome::Rewrite), "a new header field");
    let titled =
        Append::new().entry(&Entry::User { at: NOW.into(), text: "hi".into(), steer: false, internal: None }).unwrap();
    let out = append_stopping(&f.path, &f.journal, &mut state(), &titled, None, NOW, StopAt::Never).unwrap();
    assert!(matches!(out, Outcome::Rewrite), "a first title");
    assert_eq!(f.bytes(), f.file.to_bytes(), "untouched");
}

#[test]
fn a_stale_mark_is_foreign() {
    let f = session(2);
    let Outcome::Done(mark) = f.run(&["mine"], 1, StopAt::Never) else { panic!() };
    f.run(&["theirs"], 2, StopAt::Never);
    let (mut state, _) = journal::recover(&f.path, &f.journal).unwrap();
    let out =
        append_stopping(&f.path, &f.journal, &mut state, &change(&["mine again"], 3), Some(&mark), NOW, StopAt::Never);
    assert!(matches!(out.unwrap(), Outcome::Foreign));
}

#[test]
fn a_failed_write_is_taken_back_unless_the_journal_keeps_it() {
    let big = "w".repeat(10_000);
    for stop in [StopAt::WriteFails, StopAt::WriteAndRestoreFail, StopAt::WriteAndUndoFail] {
        for earlier in [false, true] {
            let mut f = session(2);
            if earlier {
                // Not the journal's first record, too.
                f.run(&["before"], 5, StopAt::Never);
                f.rewritten(&["before"], 5);
            }
            let old = f.bytes();
            let out = f.try_run(&[big.as_str(), "two"], 99, stop);
            if stop == StopAt::WriteFails {
                // Taken back whole: the caller is told, and nothing
                // brings the append back.
                let err = out.unwrap_err();
                assert!(err.report().to_string().contains("No space left"), "{}", err.report());
                assert_eq!(f.bytes(), old);
                assert!(!f.recover(), "{stop:?}: the record went with the append");
                assert_eq!(f.bytes(), old);
            } else {
                // The record stays committed: so is the append, and the
                // caller hears it with a warning and a mark no file holds.
                let Ok(Outcome::Committed { mark, warning }) = out else { panic!("{stop:?}: {out:?}") };
                assert_eq!(mark, Mark::unknown());
                assert!(warning.contains("nor taken back") && warning.contains(".journal"), "{warning}");
                assert!(f.recover(), "{stop:?}: recovery completes it");
                assert_eq!(f.bytes(), f.rewritten(&[big.as_str(), "two"], 99), "{stop:?}: once");
                assert!(!f.recover());
            }
            // The next append goes after it, once.
            assert!(matches!(f.run(&["after"], 1, StopAt::Never), Outcome::Done(_)));
            assert_eq!(f.bytes(), f.rewritten(&["after"], 1), "{stop:?}");
            let events = serde_json::from_slice::<Value>(&f.bytes()).unwrap()["events"].as_array().unwrap().len();
            let committed = usize::from(stop != StopAt::WriteFails);
            assert_eq!(events, 2 + usize::from(earlier) + 2 * committed + 1, "{stop:?}");
        }
    }
}

#[test]
fn a_record_that_cannot_be_synced_nor_taken_back_is_committed_with_a_warning() {
    let mut f = session(2);
    let Outcome::Committed { mark, warning } = f.run(&["unsynced"], 3, StopAt::SyncAndUndoFail) else {
        panic!("committed")
    };
    assert!(warning.contains("could not be synced"), "{warning}");
    // Written in place as usual: the mark is the file's.
    assert_eq!(f.bytes(), f.rewritten(&["unsynced"], 3));
    assert_eq!(mark, Mark::of_bytes(std::fs::metadata(&f.path).unwrap().ino(), &f.bytes()));
    assert!(!f.recover());
}

#[test]
fn a_store_append_hit_by_a_double_fault_is_saved_once_with_a_warning() {
    use crate::store::Store;
    use crate::{Paths, SessionId};
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::from_vars(Some(dir.path().into()), None, None, Some(dir.path().into())).unwrap();
    let store = Store::new(paths);
    let id = SessionId::parse("3f9a1c2b").unwrap();
    store.create_as(&id, "/w").unwrap();
    let first = store.append(&id, change(&["one"], 1)).unwrap();
    assert!(first.rewritten.is_some(), "an empty session is rewritten whole");
    let texts = |store: &Store| -> Vec<String> {
        let loaded = store.read(&store.locate(&id).unwrap()).unwrap();
        loaded.file.events.iter().map(|raw| raw.get().to_string()).collect()
    };
    INJECT.set(StopAt::WriteAndRestoreFail);
    let faulted = store.append_since(&id, change(&["two"], 2), Some(&first.mark), &[], |_| 0, |_, _| {});
    INJECT.set(StopAt::Never);
    let faulted = faulted.unwrap();
    let warning = faulted.warning.unwrap();
    assert!(warning.contains("nor taken back"), "{warning}");
    assert_eq!(faulted.mark, Mark::unknown());
    // A reader finds the file incomplete and recovers it: the entry is
    // there, once.
    let read = texts(&store);
    assert_eq!(read.len(), 2);
    assert!(read[1].contains("\"two\""), "{read:?}");
    // The writer's next append, from its unknown mark, reads what is there
    // and goes after it: nothing is written twice.
    let mut seen = None;
    let third = store
        .append_since(
            &id,
            change(&["three"], 3),
            Some(&faulted.mark),
            &[],
            |_| 0,
            |recent, _| seen = Some(recent.total),
        )
        .unwrap();
    assert_eq!(seen, Some(2), "merged with the file as it is");
    assert!(third.warning.is_none());
    let read = texts(&store);
    assert_eq!(read.len(), 3, "{read:?}");
    assert!(read[1].contains("\"two\"") && read[2].contains("\"three\""), "{read:?}");
}
