//! The turn loop driven in-process (issue 26): an `Agent` of the library,
//! no binary and no terminal, against the mock model server. What the
//! programs' tests see only from outside is checked here where it happens:
//! the steps a turn takes, each tool call paired with its result in the
//! next request, a call no one can allow denied with the reason, a turn
//! cancelled mid-stream keeping what arrived, and the write points that
//! put each of them in the session file.

use std::path::Path;
use std::sync::Arc;

use glrs::agent::{Agent, TurnKind, TurnOutcome, TurnUi, Unattended};
use glrs::config::Config;
use glrs::provider::select::ModelRef;
use glrs::provider::{Cancel, Delta};
use glrs::store::ToolCall;
use glrs::tools::ToolOutput;
use serde_json::json;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;

/// What a turn showed, in order.
#[derive(Default)]
struct Recorder {
    steps: usize,
    text: String,
    tools: Vec<(String, String, bool)>,
    notices: Vec<String>,
    /// Cancelled once this text has arrived (as Esc would be pressed).
    cancel_after: Option<(String, Arc<Cancel>)>,
}

impl TurnUi for Recorder {
    fn step_start(&mut self) {
        self.steps += 1;
    }
    fn delta(&mut self, delta: &Delta) {
        if let Delta::Text(t) = delta {
            self.text.push_str(t);
        }
        if let Some((after, cancel)) = &self.cancel_after
            && self.text.contains(after.as_str())
        {
            cancel.cancel();
        }
    }
    fn tool(&mut self, call: &ToolCall, output: &ToolOutput) {
        self.tools.push((call.name.clone(), output.content.clone(), output.is_error));
    }
    fn notice(&mut self, text: &str) {
        self.notices.push(text.to_string());
    }
}

/// An agent on `ts`'s store in `cwd`, against the mock (its key from a
/// command, so no variable of this test process is touched).
fn agent(ts: &TestStore, server: &MockServer, cwd: &Path, allow_all: bool) -> Agent {
    let config = json!({
        "memoryFlush": {"enabled": false},
        "checkpoints": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "apiKeyCommand": "echo sk-inprocess-test"}},
        "retry": {"attempts": 1},
    });
    let config = Config::parse(&config.to_string()).expect("the test's config");
    let model = ModelRef::parse("openai/gpt-4.1").expect("model");
    let mut agent = Agent::start(ts.store.clone(), config, model, None, cwd.to_string_lossy().into_owned())
        .expect("an agent on the test store");
    agent.set_permissions(&[], allow_all).expect("permissions");
    agent
}

fn turn(agent: &mut Agent, text: &str, cancel: &Cancel) -> (TurnOutcome, Recorder) {
    turn_showing(agent, text, cancel, Recorder::default())
}

fn turn_showing(agent: &mut Agent, text: &str, cancel: &Cancel, mut ui: Recorder) -> (TurnOutcome, Recorder) {
    let runtime = glrs::runtime::build().expect("runtime");
    let outcome = runtime.block_on(agent.turn_with(text, TurnKind::Normal, &mut ui, cancel, &mut Unattended));
    glrs::runtime::shut_down(runtime);
    (outcome, ui)
}

#[test]
fn a_turn_takes_a_step_per_model_call_and_pairs_each_call_with_its_result() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let cwd = ts.dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let input = json!({"path": "notes.txt", "content": "written in-process\n"}).to_string();
    server.push(Reply::sse(openai_tool_call("call_1", "write", &[&input])));
    server.push(Reply::sse(openai_text(&["Wrote ", "it."], 40, 3, 0)));
    let mut agent = agent(&ts, &server, &cwd, true);
    let (outcome, ui) = turn(&mut agent, "write the notes", &Cancel::default());
    assert_eq!(outcome.error, None);
    assert_eq!(ui.steps, 2, "one step for the call, one for the answer");
    assert_eq!(ui.text, "Wrote it.");
    assert_eq!(ui.tools.len(), 1);
    assert!(!ui.tools[0].2, "{:?}", ui.tools[0]);
    assert_eq!(std::fs::read_to_string(cwd.join("notes.txt")).unwrap(), "written in-process\n");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(crate::support::mock::pairing_problem(&r.path, &r.body), None);
    }
    let second = requests[1].body.to_string();
    assert!(second.contains("call_1") && second.contains("\"role\":\"tool\""), "{second}");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-inprocess-test"));
    // The write points: the message, each step's answer and usage, the
    // call's result, the turn's end.
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "tool", "assistant", "usage", "turn"]);
}

#[test]
fn a_call_no_one_can_allow_is_denied_with_the_reason_and_the_turn_goes_on() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let cwd = ts.dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let input = json!({"command": "touch made.txt"}).to_string();
    server.push(Reply::sse(openai_tool_call("call_1", "bash", &[&input])));
    server.push(Reply::sse(openai_text(&["Could not."], 40, 3, 0)));
    // The sandbox off: bash asks, and this UI cannot.
    let mut agent = agent(&ts, &server, &cwd, false);
    agent.set_sandbox_mode(glrs::sandbox::Mode::Off);
    let (outcome, ui) = turn(&mut agent, "make a file", &Cancel::default());
    assert_eq!(outcome.error, None);
    assert!(ui.tools[0].2 && ui.tools[0].1.contains("no terminal"), "{:?}", ui.tools[0]);
    assert!(!cwd.join("made.txt").exists());
    let requests = server.model_requests();
    let second = requests[1].body.to_string();
    assert!(second.contains("no terminal"), "the model is told why: {second}");
    assert_eq!(ui.steps, 2, "the turn went on to the answer");
}

#[test]
fn a_cancelled_turn_keeps_what_arrived_and_the_next_request_is_valid() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let cwd = ts.dir.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    // Pieces 100 ms apart; cancelled as soon as "two " has arrived.
    server.push(Reply::slow_sse(openai_text(&["one ", "two ", "three ", "four"], 40, 4, 0), 100));
    server.push(Reply::sse(openai_text(&["Again."], 40, 2, 0)));
    let mut agent = agent(&ts, &server, &cwd, false);
    let cancel = Arc::new(Cancel::default());
    let ui = Recorder { cancel_after: Some(("two ".into(), cancel.clone())), ..Recorder::default() };
    let (outcome, ui) = turn_showing(&mut agent, "count slowly", &cancel, ui);
    assert!(outcome.stopped(), "{:?}", outcome.error);
    assert!(ui.text.starts_with("one ") && !ui.text.contains("four"), "{:?}", ui.text);
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "notice", "turn"], "what arrived is saved");
    assert_eq!(session["events"][1]["text"], "one two ", "{session}");
    assert_eq!(session["events"][1]["stopReason"], "aborted");
    let (outcome, _) = turn(&mut agent, "again", &Cancel::default());
    assert_eq!(outcome.error, None);
    let requests = server.model_requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].body.to_string();
    assert!(body.contains("one ") && body.contains("again"), "the kept part is sent: {body}");
    assert_eq!(crate::support::mock::pairing_problem(&requests[1].path, &requests[1].body), None);
}
