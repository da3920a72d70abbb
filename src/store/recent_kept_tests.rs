//! Reads that use the kept scan (see [`super::survey`]) must give exactly
//! the answer of a whole read, whatever the kept scan says.

use super::*;
use crate::store::{Append, Entry, Parsed, SessionFile, Store};
use crate::{Paths, SessionId};
use serde_json::{Value, json};

/// A read as [`read`], [`read_from`] and [`tally`] make it, keeping its
/// scan whatever the file's size.
fn ask_keeping<F: Fn(&[Hit], usize) -> usize>(
    at: &Located,
    types: &[&str],
    start: F,
    usage: bool,
) -> (Recent, Option<UsageSum>) {
    read_asked(at, &Ask { types, start, usage, locked: false, keep_from: 0 }).unwrap()
}

fn store(dir: &std::path::Path) -> (Store, SessionId, Located) {
    let store = Store::new(Paths::from_vars(Some(dir.into()), None, None, Some(dir.into())).unwrap());
    let id = SessionId::parse("3f9a1c2b").unwrap();
    let at = Located { id: id.clone(), path: store.session_path(&id), legacy: false };
    (store, id, at)
}

/// Entries of every kind the scan tells apart, some long enough to span
/// many blocks of the backward search, one not beginning with its type.
fn entries(n: usize, seed: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match (i + seed) % 9 {
            0 => json!({"type": "compacted", "at": "t", "brief": format!("brief {i}"), "firstKept": i.max(1), "tokensBefore": 9, "tokensAfter": 1, "model": "m/x", "artifact": "a.md"}),
            1 => json!({"type": "usage", "at": "t", "model": "m/x", "inputTokens": i, "outputTokens": 2, "costUsd": 0.5}),
            2 => json!({"type": "custom", "at": "t", "name": "memoryFlush", "data": {"compactionCount": i}}),
            3 => json!({"type": "cleared", "at": "t"}),
            4 => json!({"at": "t", "type": "usage", "model": "m/x", "inputTokens": 1}),
            5 => json!({"type": "notice", "at": "t", "text": "x".repeat(150_000 + i)}),
            // Looks like a boundary and a line break inside a string:
            // escaped, as JSON text always has it.
            6 => json!({"type": "user", "at": "t", "text": "},\n{\"type\":\"cleared\"}"}),
            7 => json!({"type": "usage", "at": "t", "inputTokens": 5}),
            _ => json!({"type": "assistant", "at": "t", "text": format!("a{i}"), "model": "m/x", "toolCalls": [], "stopReason": "stop"}),
        })
        .collect()
}

fn write_session(store: &Store, id: &SessionId, events: &[Value]) {
    let mut file = SessionFile::new(id.as_str(), "/w", "2026-11-29T15:24:19.412Z");
    file.set("title", Value::from("t"));
    for e in events {
        file.events.push(serde_json::value::to_raw_value(e).unwrap());
    }
    file.set("contextTokens", Value::from(12));
    assert!(store.create_file(id, &file).unwrap());
}

fn append(store: &Store, id: &SessionId, events: &[Value]) {
    let mut change = Append::new();
    for e in events {
        let entry: Entry =
            serde_json::from_value(e.clone()).unwrap_or(Entry::Notice { at: "t".into(), text: e.to_string() });
        change = change.entry(&entry).unwrap();
    }
    store.append(id, change).unwrap();
}

/// What a whole read says: every entry, the hits of `types`, the usage
/// totals as `status` counted them.
fn whole(at: &Located, types: &[&str]) -> (Vec<String>, Vec<(usize, String)>, UsageSum) {
    let lines = lines::read(at).unwrap();
    let all: Vec<String> = lines.entries().iter().map(|s| s.to_string()).collect();
    let mut usage = UsageSum::default();
    let mut hits = Vec::new();
    for (i, text) in all.iter().enumerate() {
        let kind = match Parsed::from_text(text) {
            Parsed::Known(e) => e.kind().to_string(),
            Parsed::Other { kind, .. } => kind,
        };
        if let Parsed::Known(Entry::Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            cost_usd,
            ..
        }) = Parsed::from_text(text)
        {
            usage.calls += 1;
            usage.input_tokens += input_tokens;
            usage.output_tokens += output_tokens;
            usage.cache_read_tokens += cache_read_tokens;
            usage.cache_write_tokens += cache_write_tokens;
            if let Some(c) = cost_usd {
                *usage.cost_usd.get_or_insert(0.0) += c;
            }
        }
        if types.contains(&kind.as_str()) {
            hits.push((i, text.clone()));
        }
    }
    (all, hits, usage)
}

/// Every read the kept scan serves, checked against a whole read.
fn check_all(at: &Located) {
    let (all, hits, usage) = whole(at, KEPT);
    let total = all.len();
    for n in [0, 1, 2, 5, 9, total - 1, total, total + 3] {
        let (tail, _) = ask_keeping(at, &[], |_, t| t.saturating_sub(n), false);
        assert_eq!(tail.total, total);
        assert_eq!(tail.first, total.saturating_sub(n), "--tail {n}");
        assert_eq!(tail.lines.entries(), all[total.saturating_sub(n)..].iter().map(String::as_str).collect::<Vec<_>>());
    }
    let boundary = |h: &[Hit]| h.iter().rev().find(|h| !h.text.contains("custom")).map_or(0, |h| h.index);
    let (recent, _) = ask_keeping(at, KEPT, |h, _| boundary(h), false);
    let got: Vec<(usize, String)> = recent.hits.iter().map(|h| (h.index, h.text.clone())).collect();
    assert_eq!(got, hits);
    assert_eq!(recent.lines.entries(), all[recent.first..].iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(recent.lines.doc.header, lines::read(at).unwrap().doc.header);
    let (counted, sum) = ask_keeping(at, KEPT, |_, t| t, true);
    assert_eq!((counted.total, counted.lines.len()), (total, 0));
    assert_eq!(sum.unwrap(), usage);
}

fn kept(at: &Located) -> survey::Scanned {
    serde_json::from_slice(&std::fs::read(survey::kept_path(&at.path)).expect("a kept scan")).unwrap()
}

#[test]
fn reads_from_the_kept_scan_answer_as_a_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id, at) = store(dir.path());
    write_session(&store, &id, &entries(40, 0));
    check_all(&at);
    let first = kept(&at);
    assert_eq!(first.count, 40);
    assert_eq!(survey_now(&at), (Some(first.end), 0), "unchanged: nothing scanned again");
    // Appends in place: the kept scan still holds for what it covers, and
    // only what follows is scanned.
    for round in 0..3 {
        let end = kept(&at).end;
        append(&store, &id, &entries(7, round));
        let (kept_end, scanned_now) = survey_now(&at);
        assert_eq!(kept_end, Some(end), "round {round}: the kept scan is used");
        assert!(scanned_now > 0 && scanned_now < std::fs::metadata(&at.path).unwrap().len() - end + 2);
        check_all(&at);
    }
    assert_eq!(kept(&at).count, 61);
    assert_eq!(read_tail(&at, 3).unwrap().total, 61);
}

#[test]
fn a_kept_scan_that_no_longer_holds_is_never_believed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id, at) = store(dir.path());
    write_session(&store, &id, &entries(30, 0));
    check_all(&at);
    let good = std::fs::read(survey::kept_path(&at.path)).unwrap();
    let lie = |edit: &dyn Fn(&mut Value)| {
        let mut value: Value = serde_json::from_slice(&good).unwrap();
        edit(&mut value);
        std::fs::write(survey::kept_path(&at.path), value.to_string()).unwrap();
        check_all(&at);
    };
    // A count, a spot's kind, a spot's place: each found out.
    lie(&|v| v["count"] = json!(29));
    lie(&|v| v["count"] = json!(31));
    lie(&|v| v["spots"][0]["kind"] = json!("cleared"));
    lie(&|v| {
        v["spots"].as_array_mut().unwrap().remove(1);
    });
    lie(&|v| v["usage"]["calls"] = json!(1000));
    std::fs::write(survey::kept_path(&at.path), b"not json").unwrap();
    check_all(&at);
    // The file rewritten in place (same inode) with other entries of the
    // same count and header: the ends no longer hash as kept.
    std::fs::write(survey::kept_path(&at.path), &good).unwrap();
    let other = lines::read(&at).unwrap();
    let text = std::fs::read_to_string(&at.path).unwrap().replace("brief 0", "brief Z");
    assert_ne!(text.len(), 0);
    std::fs::OpenOptions::new().write(true).open(&at.path).unwrap().write_all_at(text.as_bytes(), 0).unwrap();
    assert_ne!(lines::read(&at).unwrap().entries(), other.entries());
    check_all(&at);
}

/// Where the kept scan ended and how much was scanned beyond it, for the
/// file as it is now.
fn survey_now(at: &Located) -> (Option<u64>, u64) {
    let file = File::open(&at.path).unwrap();
    let meta = file.metadata().unwrap();
    let layout = layout::find(&file, meta.len(), &at.path).unwrap().unwrap();
    let range = (layout.head.len() as u64 + 1, layout.tail_at);
    let found =
        survey::survey(&file, &at.path, Stamp::from_metadata(&meta), range, KEPT, false, true).unwrap().unwrap();
    (found.kept_end, found.scanned_now)
}

/// A file torn in its last entry reads as a whole read does (here: an
/// error naming it), with or without a kept scan.
#[test]
fn a_torn_last_line_reads_as_a_whole_read_does() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id, at) = store(dir.path());
    write_session(&store, &id, &entries(20, 0));
    check_all(&at);
    let bytes = std::fs::read(&at.path).unwrap();
    std::fs::write(&at.path, &bytes[..bytes.len() - 40]).unwrap();
    let whole = lines::read(&at).map(|l| l.entries().iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let tail = read_tail(&at, 3).map(|r| r.lines.entries().iter().map(|s| s.to_string()).collect::<Vec<_>>());
    match (whole, tail) {
        (Ok(w), Ok(t)) => assert_eq!(t, w[w.len() - 3..].to_vec()),
        (Err(w), Err(t)) => assert_eq!(t.to_string(), w.to_string()),
        (w, t) => panic!("whole {w:?}, tail {t:?}"),
    }
}
