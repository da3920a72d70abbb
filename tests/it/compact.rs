//! Compaction end to end with the mock model server: the request, the
//! artifact, the boundary, folding in a previous brief, pieces, races with a
//! writer, failures that must write nothing, and `--all` for cron.

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use glrs::SessionId;
use glrs::store::{Append, Entry, ToolCall};
use serde_json::{Value, json};

const BRIEF: &str =
    "fixed three failing auth tests\n## Goal\nmake `npm test` pass\n## Progress\n### Done\n- redirect fixed";

/// One turn: a question naming a file, a tool call and a long result.
fn turn(n: usize, result_chars: usize) -> Vec<Entry> {
    let at = glrs::time::now();
    let id = format!("call_{n}");
    vec![
        Entry::User {
            at: at.clone(),
            text: format!("turn {n}: look at src/auth/file{n}.ts and run `npm test -- {n}`"),
            steer: false,
            internal: None,
        },
        Entry::Assistant {
            at: at.clone(),
            text: format!("Reading file{n}.").into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read".into(),
                input: json!({"path": format!("src/auth/file{n}.ts")}),
            }],
            stop_reason: "tool_calls".into(),
        },
        Entry::Tool {
            at: at.clone(),
            id,
            name: "read".into(),
            input: json!({}),
            result: format!("R{n}:{}", "x".repeat(result_chars)),
            is_error: false,
        },
        Entry::Assistant {
            at,
            text: format!("Done with turn {n}.").into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        },
    ]
}

/// A session of `turns` turns, each about 2,500 tokens, using `model`.
fn big_session(ts: &TestStore, turns: usize, model: &str, context_tokens: u64) -> SessionId {
    let id = ts.store.create("/w").unwrap();
    add_turns(ts, &id, 0..turns);
    ts.store
        .update(&id, |f| {
            f.set("model", json!(model));
            f.set("contextTokens", json!(context_tokens));
            Ok(())
        })
        .unwrap();
    id
}

fn add_turns(ts: &TestStore, id: &SessionId, range: std::ops::Range<usize>) {
    let mut change = Append::new();
    for n in range {
        for e in turn(n, 10_000) {
            change = change.entry(&e).unwrap();
        }
    }
    ts.store.append(id, change).unwrap();
}

fn session_json(ts: &TestStore, id: &SessionId) -> Value {
    serde_json::from_slice(&std::fs::read(ts.store.session_path(id)).unwrap()).unwrap()
}

#[test]
fn a_compaction_lands_a_brief_and_an_artifact_and_moves_the_boundary() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts, 20, "openai/gpt-4.1", 50_000);
    server.push(Reply::sse(openai_text(&[BRIEF], 9_000, 200, 0)));
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "--instruction", "the auth module"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let session = session_json(&ts, &id);
    let events = session["events"].as_array().unwrap();
    let compacted = events.last().unwrap();
    assert_eq!(compacted["type"], "compacted");
    let first_kept = compacted["firstKept"].as_u64().unwrap() as usize;
    assert_eq!(events[first_kept - 1]["type"], "user", "the cut lands on a user entry");
    // The larger of the recorded usage and the estimate of the file.
    let before = compacted["tokensBefore"].as_u64().unwrap();
    assert!((50_000..60_000).contains(&before), "{before}");
    assert_eq!(compacted["model"], "openai/gpt-4.1");
    assert_eq!(compacted["instruction"], "the auth module");
    assert_eq!(session["contextTokens"], compacted["tokensAfter"]);
    let artifact = ts.store.paths.artifacts_of(&id).join(compacted["artifact"].as_str().unwrap());
    assert_eq!(
        stdout_of(&out),
        format!(
            "{id}: compacted, {} → {} tokens, artifact {}\n",
            grouped(before),
            grouped(compacted["tokensAfter"].as_u64().unwrap()),
            artifact.display()
        )
    );

    // The brief: the model's words, then the exact references of the replaced part.
    let brief = compacted["brief"].as_str().unwrap();
    assert!(brief.starts_with(BRIEF), "{brief}");
    let replaced_turns = events[..first_kept - 1].iter().filter(|e| e["type"] == "user").count();
    assert!(replaced_turns >= 5);
    for n in 0..replaced_turns {
        assert!(brief.contains(&format!("- `src/auth/file{n}.ts`")), "file{n} missing:\n{brief}");
        assert!(brief.contains(&format!("- `npm test -- {n}`")), "command {n} missing");
    }
    assert!(!brief.contains(&format!("file{}.ts", replaced_turns + 1)), "kept turns are not references");

    // The request: tool results cut, the instruction at the end.
    let request = &server.model_requests()[0].body;
    let text = request["messages"][1]["content"].as_str().unwrap();
    assert_eq!(request["messages"][0]["role"], "system");
    assert!(text.contains("[tool-result read]\nR0:"), "{}", &text[..300]);
    assert!(text.contains("[… 8003 more characters cut from this request; the artifact keeps them whole]"));
    assert!(text.ends_with("Additional focus: the auth module"));

    // The artifact: front matter, and every replaced message in full.
    let body = std::fs::read_to_string(&artifact).unwrap();
    let head = format!(
        "---\nlabel: fixed three failing auth tests\ncreatedAt: {}\nmessages: {}\nnote:\nsession: {id}\nentries: 1-{}\n---\n[user]\nturn 0: look at",
        compacted["at"].as_str().unwrap(),
        replaced_turns * 5,
        first_kept - 1
    );
    assert!(body.starts_with(&head), "{}", &body[..300]);
    assert!(body.contains(&format!("[tool-result read]\nR0:{}\n", "x".repeat(10_000))));
    assert!(body.contains("[tool-call read]\n{\"path\":\"src/auth/file0.ts\"}\n"));
    assert_eq!(std::fs::metadata(&artifact).unwrap().permissions().mode() & 0o777, 0o600);

    // The next chat turn starts from the wrapped brief and the kept entries.
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    ts.chat().args(["--resume", id.as_str(), "-p", "carry on"]).assert().success();
    let messages = server.model_requests()[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": format!("<earlier-conversation>\n{brief}\n</earlier-conversation>")})
    );
    assert_eq!(messages[1]["content"], events[first_kept - 1]["text"]);
    assert_eq!(messages.last().unwrap()["content"], "carry on");
}

use std::os::unix::fs::PermissionsExt;

/// `n` with a comma before its last three digits: this test's counts are
/// under a million (worked out here, not with the product's formatter).
fn grouped(n: u64) -> String {
    assert!(n < 1_000_000, "{n}");
    if n < 1_000 { n.to_string() } else { format!("{},{:03}", n / 1_000, n % 1_000) }
}

#[test]
fn a_second_compaction_folds_in_the_previous_brief() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    server.push(Reply::sse(openai_text(&[BRIEF], 1, 1, 0)));
    ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).assert().success();
    add_turns(&ts, &id, 100..112);
    server.push(Reply::sse(openai_text(&["second label\n## Goal\nstill auth"], 1, 1, 0)));
    ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).assert().success();
    let text = server.model_requests()[1].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(text.contains(&format!("<previous-brief>\n{BRIEF}")), "{}", &text[..400]);
    let session = session_json(&ts, &id);
    let last = session["events"].as_array().unwrap().last().unwrap().clone();
    let brief = last["brief"].as_str().unwrap();
    assert!(brief.starts_with("second label"));
    assert!(brief.contains("- `src/auth/file0.ts`"), "references carry over:\n{brief}");
    let artifacts = glrs::compact::artifact::list(&ts.store, &id).unwrap();
    assert_eq!(artifacts.len(), 2);
    let second = std::fs::read_to_string(&artifacts[1].file).unwrap();
    assert!(second.contains(&format!("---\n[brief]\n{BRIEF}")), "{}", &second[..400]);
}

#[test]
fn a_failed_empty_or_killed_compaction_writes_nothing() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    let before = ts.snapshot();
    server.push(Reply::json(400, r#"{"error":{"message":"model not found"}}"#));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out)
            .contains("the compact model openai/gpt-4.1 failed (HTTP 400: model not found); nothing was written"),
        "{}",
        stderr_of(&out)
    );
    server.push(Reply::sse(openai_text(&["  "], 1, 1, 0)));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("empty brief"), "{}", stderr_of(&out));

    let events: Vec<String> =
        (0..50).map(|_| "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n".to_string()).collect();
    server.push(Reply::slow_sse(events, 100));
    let mut child = ts
        .std_cmd(env!("CARGO_BIN_EXE_glrs-compact"))
        .arg(id.as_str())
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .spawn()
        .unwrap();
    // Killed while the summary is on its way: nothing may be written.
    server.wait_for_model_requests(3, "the slow summary request");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut after = ts.snapshot();
    // The listing index is a cache, and `<id>.compact` an empty lock file
    // (one compaction of a session at a time): neither is the session.
    after.retain(|(p, _)| {
        !p.ends_with(glrs::store::listing::INDEX_FILE) && p.extension().is_none_or(|e| e != "compact")
    });
    assert_eq!(after, before, "the session and artifacts folder are exactly as before");
}

#[test]
fn a_write_racing_a_compaction_is_kept_and_a_replaced_file_aborts() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    let slow = |server: &MockServer| {
        let mut events = openai_text(&[BRIEF], 1, 1, 0);
        events.insert(0, ": keep-alive\n\n".into());
        server.push(Reply::slow_sse(events, 150));
    };
    slow(&server);
    let child = spawn_compact(&ts, &id);
    server.wait_for_model_requests(1, "the summary request");
    // A chat appends while the brief is being written.
    let note = Entry::Notice { at: glrs::time::now(), text: "written during the compaction".into() };
    ts.store.append(&id, Append::new().entry(&note).unwrap()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = session_json(&ts, &id);
    let events = session["events"].as_array().unwrap();
    let n = events.len();
    assert_eq!(events[n - 2]["text"], "written during the compaction");
    assert_eq!(events[n - 1]["type"], "compacted");

    // Now a compaction whose session is shortened meanwhile: abort.
    add_turns(&ts, &id, 200..212);
    let before_artifacts = glrs::compact::artifact::list(&ts.store, &id).unwrap().len();
    slow(&server);
    let child = spawn_compact(&ts, &id);
    server.wait_for_model_requests(2, "the second summary request");
    ts.store
        .update(&id, |f| {
            f.events.truncate(5);
            Ok(())
        })
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("replaced or shortened"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(session_json(&ts, &id)["events"].as_array().unwrap().len(), 5);
    assert_eq!(
        glrs::compact::artifact::list(&ts.store, &id).unwrap().len(),
        before_artifacts,
        "no artifact left behind"
    );
}

fn spawn_compact(ts: &TestStore, id: &SessionId) -> std::process::Child {
    ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"))
        .arg(id.as_str())
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn nothing_to_compact_and_the_compact_model_window_check() {
    let (ts, server) = store_and_server();
    let small = ts.session("/w", &[user("hi"), notice("n")]);
    ts.cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .arg(small.as_str())
        .assert()
        .success()
        .stdout(format!("{small}: nothing to compact\n"));
    ts.cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([small.as_str(), "--json"])
        .assert()
        .success()
        .stdout(format!("{{\"outcome\":\"nothing\",\"id\":\"{small}\"}}\n"));
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    ts.config(
        json!({"compactModel": "openai/gpt-4o", "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}),
        // The flush is on here: it must not run when the compaction cannot.
    );
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out)
            .contains("compactModel openai/gpt-4o has a window of 128000 tokens, smaller than compactWindow (256000)"),
        "{}",
        stderr_of(&out)
    );
    assert!(server.model_requests().is_empty());
    // --if-needed: under the trigger, nothing happens.
    ts.config_for(&server);
    ts.cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "--if-needed"])
        .assert()
        .success()
        .stdout(format!("{id}: 30,000 tokens, under its trigger 192,000; nothing to do\n"));
}

#[test]
fn a_part_too_large_for_one_request_is_summarised_in_pieces_and_merged() {
    let (ts, server) = store_and_server();
    ts.config(json!({
        "keepRecentTokens": 2000,
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "models": {"tiny": {"metadata": {"context": 16000}}}}},
    }));
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    for i in 0..20 {
        server.push(Reply::sse(openai_text(&[&format!("part label {i}\n## Goal\npiece {i}")], 1, 1, 0)));
    }
    ts.cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "--model", "openai/tiny"])
        .assert()
        .success();
    let requests = server.model_requests();
    assert!(requests.len() >= 3, "{} requests", requests.len());
    for r in &requests {
        let chars = r.body["messages"][1]["content"].as_str().unwrap().len();
        assert!(chars <= 4 * 16_000, "a request of {chars} characters does not fit");
        assert_eq!(r.body["model"], "tiny");
    }
    let merge = requests.last().unwrap().body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(merge.contains("<partial-brief part=\"1\">\npart label 0"), "{merge}");
    let last = session_json(&ts, &id)["events"].as_array().unwrap().last().unwrap().clone();
    assert!(last["brief"].as_str().unwrap().starts_with(&format!("part label {}", requests.len() - 1)));
    // More replies were scripted than pieces taken: exactly the surplus is unused.
    assert_eq!(server.take_report().len(), 20 - requests.len());
}

#[test]
fn all_compacts_exactly_those_over_their_trigger_and_skips_open_ones() {
    let (ts, server) = store_and_server();
    let over_a = big_session(&ts, 12, "openai/gpt-4.1", 300_000);
    let under = big_session(&ts, 12, "openai/gpt-4.1", 1_000);
    let open = big_session(&ts, 12, "openai/gpt-4.1", 300_000);
    let over_b = big_session(&ts, 12, "openai/gpt-4o", 100_000);
    let failing = big_session(&ts, 12, "anthropic/claude-sonnet-4-5", 190_000);
    let under_before = std::fs::read(ts.store.session_path(&under)).unwrap();
    let held = ts.store.open_lock(&open).unwrap();
    server.push(Reply::sse(openai_text(&[BRIEF], 1, 1, 0)));
    server.push(Reply::sse(openai_text(&[BRIEF], 1, 1, 0)));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).args(["--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "one failed: {}", stderr_of(&out));
    let stdout = stdout_of(&out);
    let acted: Vec<&str> = stdout.lines().map(|l| &l[..8]).collect();
    let mut expected = vec![over_a.as_str(), over_b.as_str()];
    expected.sort();
    let mut acted_sorted = acted.clone();
    acted_sorted.sort();
    assert_eq!(acted_sorted, expected, "{stdout}");
    let err = stderr_of(&out);
    assert!(err.contains(&format!("note: skipped {open}: open in a chat (pid {})", std::process::id())), "{err}");
    assert!(err.contains(&format!("error: {failing}: ")) && err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("1 of 4 sessions could not be compacted"), "{err}");
    assert_eq!(std::fs::read(ts.store.session_path(&under)).unwrap(), under_before);
    assert!(glrs::compact::artifact::list(&ts.store, &open).unwrap().is_empty());
    // Again with the missing key, quietly: only the failed one was still
    // over its trigger (the open one is still open, skipped without a note),
    // and nothing is printed: cron mails any output.
    server.push(Reply::sse(anthropic_text(&[BRIEF])));
    ts.cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .args(["--all", "--quiet"])
        .assert()
        .success()
        .stdout("")
        .stderr("");
    assert_eq!(session_json(&ts, &failing)["events"].as_array().unwrap().last().unwrap()["type"], "compacted");
    assert_eq!(server.model_requests().last().unwrap().path, "/v1/messages");
    drop(held);
}

#[test]
fn glrs_artifacts_lists_reads_annotates_and_removes() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts, 12, "openai/gpt-4.1", 30_000);
    server.push(Reply::sse(openai_text(&[BRIEF], 1, 1, 0)));
    ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id.as_str()).assert().success();
    let art = glrs::compact::artifact::list(&ts.store, &id).unwrap().remove(0);
    let a = |args: &[&str]| ts.cmd("glrs-artifacts").args(args).output().unwrap();

    let out = a(&["ls", "--json"]);
    assert_eq!(
        json_of(&out),
        json!([{"file": art.file, "session": id.as_str(), "createdAt": art.created_at, "label": "fixed three failing auth tests", "messages": art.messages, "note": ""}])
    );
    let out = a(&["ls", &id.as_str()[..5]]);
    assert_eq!(
        stdout_of(&out),
        format!(
            "{}\t{id}\t{}\tfixed three failing auth tests\t{}\t\n",
            art.file.display(),
            art.created_at,
            art.messages
        )
    );
    let whole = std::fs::read_to_string(&art.file).unwrap();
    assert_eq!(stdout_of(&a(&["cat", id.as_str()])), whole);
    assert_eq!(stdout_of(&a(&["cat", &format!("{id}:1")])), whole);
    assert_eq!(stdout_of(&a(&["cat", &art.file.to_string_lossy()])), whole);
    let rel = format!("{id}/{}", art.file.file_name().unwrap().to_string_lossy());
    assert_eq!(stdout_of(&a(&["cat", &rel])), whole);
    assert!(stderr_of(&a(&["cat", &format!("{id}:2")])).contains("has 1 artifact;"));
    assert_eq!(stdout_of(&a(&["path", id.as_str()])), format!("{}\n", ts.store.paths.artifacts_of(&id).display()));

    let missing = stderr_of(&a(&["annotate", &format!("{id}/nope.md"), "x"]));
    assert_eq!(missing.matches("No such file").count(), 1, "the OS error once: {missing}");
    let note = "checked: \"all\" good\nsecond line";
    assert!(a(&["annotate", &art.file.to_string_lossy(), note]).status.success());
    let out = a(&["ls", "--json"]);
    assert_eq!(json_of(&out)[0]["note"], note);
    let after = std::fs::read_to_string(&art.file).unwrap();
    assert_eq!(after.split("\n---\n").nth(1), whole.split("\n---\n").nth(1), "the body is untouched");

    // Files outside the artifacts folder are refused, and left alone.
    let outside = ts.sessions_dir().join(format!("{id}.json"));
    std::fs::write(ts.dir.path().join("x.md"), "x").unwrap();
    for bad in [
        outside.to_string_lossy().into_owned(),
        ts.dir.path().join("x.md").to_string_lossy().into_owned(),
        format!("{id}/../../{id}.json"),
        "/etc/passwd".into(),
    ] {
        let out = a(&["rm", &bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(stderr_of(&out).contains("glrs-artifacts: error: "), "{bad}: {}", stderr_of(&out));
    }
    assert!(outside.exists() && ts.dir.path().join("x.md").exists());
    assert!(a(&["rm", &rel]).status.success());
    assert!(!art.file.exists());
    assert_eq!(stdout_of(&a(&["ls"])), "");
}

#[test]
fn all_shows_a_progress_bar_only_on_a_terminal() {
    let (ts, server) = store_and_server();
    let ids: Vec<SessionId> = (0..2).map(|_| big_session(&ts, 12, "openai/gpt-4.1", 300_000)).collect();
    for _ in 0..2 {
        server.push(Reply::slow_sse(openai_text(&[BRIEF], 1, 1, 0), 60));
    }
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"));
    cmd.arg("--all").env("OPENAI_API_KEY", OPENAI_KEY).env("TERM", "xterm-256color");
    let options = rexpect::reader::Options::new().timeout_ms(Some(20_000)).strip_ansi_escape_codes(true);
    let mut p = rexpect::session::spawn_with_options(cmd, options).unwrap();
    p.exp_string("[                    ] 0/2").unwrap();
    p.exp_string("[##########          ] 1/2").unwrap();
    let rest = p.exp_eof().unwrap();
    for id in &ids {
        assert_eq!(session_json(&ts, id)["events"].as_array().unwrap().last().unwrap()["type"], "compacted", "{rest}");
    }
    // Piped (the other tests), stderr has no bar: checked by their exact stderr.
}

#[test]
fn an_empty_store_says_no_artifacts_yet_and_its_folder_exists_for_grep() {
    let ts = TestStore::new();
    let out = ts.cmd("glrs-artifacts").arg("ls").output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!((stdout_of(&out).as_str(), stderr_of(&out).as_str()), ("", "no artifacts yet\n"));
    let id = ts.session("/w", &[user("hello")]);
    let out = ts.cmd("glrs-artifacts").args(["ls", id.as_str()]).output().unwrap();
    assert_eq!(stderr_of(&out), format!("no artifacts yet for session {id}\n"));
    let out = ts.cmd("glrs-artifacts").args(["ls", "--json"]).output().unwrap();
    assert_eq!((stdout_of(&out).as_str(), stderr_of(&out).as_str()), ("[]\n", ""));

    // The README's recipe, on a store with no artifacts: no match, no error.
    let out = ts.cmd("glrs-artifacts").arg("path").output().unwrap();
    let dir = std::path::PathBuf::from(stdout_of(&out).trim());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let grep = std::process::Command::new("grep").args(["-rl", "redirect.ts"]).arg(&dir).output().unwrap();
    assert_eq!(grep.status.code(), Some(1), "{}", stderr_of(&grep));
    assert_eq!(stderr_of(&grep), "");
}
