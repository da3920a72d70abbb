//! Request bodies as sent: whole literal bodies for every kind of message,
//! byte-for-byte equality with the old `json!` builders (`wire_reference`)
//! over generated contexts, and a memory guard: building the body holds
//! about one copy of the context, where the old builders held two or more.

use serde_json::{Value, json};

use super::cache::{CacheTtl, Thinking};
use super::wire_reference;
use super::{Message, Protocol, Provider, Reasoning, Request, ToolSpec};
use crate::alloc_probe::peak_during;
use crate::config::Config;
use crate::message::ToolCall;

/// The body `provider` sends, as bytes, with prompt caching `ttl`.
fn sent(provider: &mut Provider, request: &Request<'_>, ttl: CacheTtl) -> Vec<u8> {
    provider.cache = ttl;
    provider.request_body(request).unwrap()
}

fn sent_value(protocol: Protocol, request: &Request<'_>, ttl: CacheTtl) -> Value {
    serde_json::from_slice(&sent(&mut provider(protocol), request, ttl)).unwrap()
}

/// A provider of `protocol` with caching off (`sent` sets it per body).
fn provider(protocol: Protocol) -> Provider {
    let kind = if protocol == Protocol::OpenAi { "openai" } else { "anthropic" };
    let config =
        format!(r#"{{"providers": {{"x": {{"type": "{kind}", "baseUrl": "http://127.0.0.1:9", "cache": "off"}}}}}}"#);
    Provider::from_config(&Config::parse(&config).unwrap(), "x").unwrap()
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec { name: name.into(), description: format!("{name} a file"), parameters: json!({"type": "object"}) }
}

fn call(id: &str, input: Value) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), input }
}

fn result(id: &str, content: &str, is_error: bool) -> Message {
    Message::Tool { tool_call_id: id.into(), name: "read".into(), content: content.into(), is_error }
}

fn user(text: &str) -> Message {
    Message::User { content: text.into() }
}

/// Every kind of message: blank and empty text, reasoning with and without
/// a signature, tool input that is an object and input that never parsed,
/// a failed tool, and a steer after tool results.
fn conversation() -> Vec<Message> {
    vec![
        user("q \"quoted\"\n"),
        user("  "),
        Message::Assistant {
            content: "".into(),
            reasoning: vec![Reasoning { text: "th".into(), signature: Some("sg".into()) }],
            tool_calls: vec![call("c1", json!({"path": "a"})), call("c2", Value::String("{oops".into()))],
        },
        result("c1", "r1", true),
        result("c2", "", false),
        user("steer"),
        Message::Assistant {
            content: "done".into(),
            reasoning: vec![Reasoning { text: "unsigned".into(), signature: None }],
            tool_calls: vec![call("c3", json!(7))],
        },
        result("c3", "r3", false),
        Message::Assistant { content: "ok".into(), reasoning: vec![], tool_calls: vec![] },
        user("next"),
    ]
}

#[test]
fn openai_bodies_whole() {
    let messages = conversation();
    let tools = [tool("read")];
    let claude = Request {
        model: "anthropic/claude-3.7-sonnet",
        system: Some("sys"),
        messages: &messages,
        tools: &tools,
        thinking: Thinking::Medium,
    };
    let mark = json!({"type": "ephemeral"});
    let part = |text: &str| json!([{"type": "text", "text": text, "cache_control": mark}]);
    let call = |id: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": "read", "arguments": arguments}});
    let messages_with = |system: Value, steer: Value, r3: Value, next: Value| {
        json!([
            {"role": "system", "content": system},
            {"role": "user", "content": "q \"quoted\"\n"},
            {"role": "user", "content": "  "},
            {"role": "assistant", "content": null, "tool_calls": [call("c1", r#"{"path":"a"}"#), call("c2", "{oops")]},
            {"role": "tool", "tool_call_id": "c1", "content": "r1"},
            {"role": "tool", "tool_call_id": "c2", "content": ""},
            {"role": "user", "content": steer},
            {"role": "assistant", "content": "done", "tool_calls": [call("c3", "7")]},
            {"role": "tool", "tool_call_id": "c3", "content": r3},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": next},
        ])
    };
    // A Claude model behind an OpenAI-compatible server: cache marks on the
    // system prompt and the newest two user or tool messages with text, and
    // the unified reasoning budget.
    let expected = json!({
        "model": "anthropic/claude-3.7-sonnet",
        "messages": messages_with(part("sys"), json!("steer"), part("r3"), part("next")),
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": [{"type": "function", "function": {"name": "read", "description": "read a file", "parameters": {"type": "object"}}}],
        "reasoning": {"max_tokens": 12000},
    });
    assert_eq!(sent_value(Protocol::OpenAi, &claude, CacheTtl::FiveMinutes), expected);
    // An OpenAI reasoning model: no marks, `reasoning_effort`; no tools.
    let o3 = Request { model: "o3", tools: &[], thinking: Thinking::High, ..claude };
    let expected = json!({
        "model": "o3",
        "messages": messages_with(json!("sys"), json!("steer"), json!("r3"), json!("next")),
        "stream": true,
        "stream_options": {"include_usage": true},
        "reasoning_effort": "high",
    });
    assert_eq!(sent_value(Protocol::OpenAi, &o3, CacheTtl::OneHour), expected);
}

#[test]
fn anthropic_bodies_whole() {
    let messages = conversation();
    let tools = [tool("read"), tool("list")];
    let request = Request {
        model: "claude-x",
        system: Some("sys"),
        messages: &messages,
        tools: &tools,
        thinking: Thinking::High,
    };
    let mark = json!({"type": "ephemeral", "ttl": "1h"});
    let text = |t: &str| json!({"type": "text", "text": t});
    let marked = |t: &str| json!({"type": "text", "text": t, "cache_control": mark});
    let tool_use = |id: &str, input: Value| json!({"type": "tool_use", "id": id, "name": "read", "input": input});
    let messages_with = |steer: Value, next: Value| {
        json!([
            // The blank user text is left out; its neighbour keeps the role.
            {"role": "user", "content": [text("q \"quoted\"\n")]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "th", "signature": "sg"},
                tool_use("c1", json!({"path": "a"})),
                tool_use("c2", json!({})),
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "r1", "is_error": true},
                {"type": "tool_result", "tool_use_id": "c2", "content": ""},
                steer,
            ]},
            // Unsigned reasoning (another provider's) is not sent.
            {"role": "assistant", "content": [text("done"), tool_use("c3", json!({}))]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c3", "content": "r3"}]},
            {"role": "assistant", "content": [text("ok")]},
            {"role": "user", "content": [next]},
        ])
    };
    let tools_with = |last: Value| {
        json!([
            {"name": "read", "description": "read a file", "input_schema": {"type": "object"}},
            last,
        ])
    };
    let list = json!({"name": "list", "description": "list a file", "input_schema": {"type": "object"}});
    let mut list_marked = list.clone();
    list_marked["cache_control"] = mark.clone();
    // Four marks: the last tool, the system prompt, the last block of the
    // newest two user-role messages; the thinking budget on top of the
    // answer's tokens.
    let expected = json!({
        "model": "claude-x",
        "max_tokens": 32000 + 8192,
        "messages": messages_with(text("steer"), marked("next")),
        "stream": true,
        "system": [marked("sys")],
        "tools": tools_with(list_marked),
        "thinking": {"type": "enabled", "budget_tokens": 32000},
    });
    let mut with_r3_marked = expected.clone();
    with_r3_marked["messages"][4]["content"][0]["cache_control"] = mark.clone();
    assert_eq!(sent_value(Protocol::Anthropic, &request, CacheTtl::OneHour), with_r3_marked);
    let plain = Request { thinking: Thinking::Off, ..request };
    let expected = json!({
        "model": "claude-x",
        "max_tokens": 8192,
        "messages": messages_with(text("steer"), text("next")),
        "stream": true,
        "system": "sys",
        "tools": tools_with(list),
    });
    assert_eq!(sent_value(Protocol::Anthropic, &plain, CacheTtl::Off), expected);
}

/// A small deterministic generator (xorshift), so a failure repeats.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }

    fn text(&mut self) -> String {
        self.pick(&["", " ", "\n\t", "hi", "a \"quote\" and a \\ backslash\n", "control \u{1}\u{1f} é 🦀", "x"])
            .repeat(1 + self.below(3))
    }

    fn input(&mut self) -> Value {
        let options = [
            json!({}),
            json!({"path": "src/a.rs", "n": [1, 2.5, null, true], "deep": {"k": "v\n"}}),
            Value::String("{not json".into()),
            Value::String(String::new()),
            json!(42),
            Value::Null,
            json!(["a"]),
        ];
        self.pick(&options)
    }

    fn message(&mut self, n: usize) -> Message {
        match self.below(3) {
            0 => Message::User { content: self.text() },
            1 => Message::Assistant {
                content: self.text().into(),
                reasoning: (0..self.below(3))
                    .map(|_| Reasoning {
                        text: self.text(),
                        signature: (self.below(2) == 0).then(|| format!("sig{n}")),
                    })
                    .collect(),
                tool_calls: (0..self.below(3))
                    .map(|i| ToolCall { id: format!("c{n}_{i}"), name: self.text(), input: self.input() })
                    .collect(),
            },
            _ => Message::Tool {
                tool_call_id: format!("c{n}"),
                name: "t".into(),
                content: self.text(),
                is_error: self.below(2) == 0,
            },
        }
    }
}

#[test]
fn bodies_match_the_old_builders_byte_for_byte() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let all_tools = [
        tool("read"),
        tool("write"),
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters: json!({"properties": {"a": {"type": "string"}}}),
        },
    ];
    let models = ["claude-sonnet-4-5", "anthropic/claude-3.7-sonnet", "gpt-5", "o3", "gpt-4.1", "llama3"];
    let systems = [None, Some(""), Some("you are \"terse\"\n")];
    let levels = [Thinking::Off, Thinking::Low, Thinking::Medium, Thinking::High];
    let ttls = [CacheTtl::Off, CacheTtl::FiveMinutes, CacheTtl::OneHour];
    let mut providers = [Protocol::OpenAi, Protocol::Anthropic].map(provider);
    for case in 0..400 {
        let messages: Vec<Message> = (0..g.below(12)).map(|n| g.message(n)).collect();
        let request = Request {
            model: g.pick(&models),
            system: g.pick(&systems),
            messages: &messages,
            tools: &all_tools[..g.below(4)],
            thinking: g.pick(&levels),
        };
        let ttl = g.pick(&ttls);
        for provider in &mut providers {
            let protocol = provider.protocol;
            let old = wire_reference::body(protocol, &request, ttl);
            let new = sent(provider, &request, ttl);
            assert_eq!(serde_json::from_slice::<Value>(&new).unwrap(), old, "case {case}, {protocol:?}");
            // Same keys in the same order, same escapes: the same bytes.
            assert_eq!(String::from_utf8(new).unwrap(), old.to_string(), "case {case}, {protocol:?}");
        }
    }
}

/// A context of about `bytes` bytes, shaped like a real session: turns of
/// a question, a tool call, a file read back (code: newlines, quotes), and
/// an answer. Returns the messages and their text's size.
fn context(bytes: usize) -> (Vec<Message>, usize) {
    let file = "    let name = \"value\"; // a line of code\n".repeat(150);
    let mut messages = Vec::new();
    let mut size = 0;
    let mut n = 0;
    while size < bytes {
        let question = format!("step {n}: fix src/module{n}/lib.rs {}", "please ".repeat(20));
        let answer = format!("Fixed module{n}. {}", "Details follow. ".repeat(10));
        size += question.len() + file.len() + answer.len();
        messages.push(Message::User { content: question });
        messages.push(Message::Assistant {
            content: "Reading it.".into(),
            reasoning: vec![],
            tool_calls: vec![call(&format!("c{n}"), json!({"path": format!("src/module{n}/lib.rs")}))],
        });
        messages.push(result(&format!("c{n}"), &file, false));
        messages.push(Message::Assistant { content: answer.into(), reasoning: vec![], tool_calls: vec![] });
        n += 1;
    }
    (messages, size)
}

/// The most bytes held at once while building the body, old and new, and
/// the body's own size, as multiples of the context's size.
fn peaks(protocol: Protocol, bytes: usize) -> (f64, f64, f64) {
    let (messages, size) = context(bytes);
    let tools = [tool("read")];
    let request =
        Request { model: "claude-x", system: Some("sys"), messages: &messages, tools: &tools, thinking: Thinking::Low };
    let mut provider = provider(protocol);
    provider.cache = CacheTtl::FiveMinutes;
    // The old path: the `json!` value, then `.json(&body)`'s `to_vec`.
    let (old, old_peak) =
        peak_during(|| serde_json::to_vec(&wire_reference::body(protocol, &request, provider.cache)).unwrap());
    let (new, new_peak) = peak_during(|| provider.request_body(&request).unwrap());
    assert_eq!(old, new);
    let ratio = |n: usize| n as f64 / size as f64;
    (ratio(old_peak), ratio(new_peak), ratio(new.len()))
}

#[test]
fn a_body_holds_one_copy_of_the_context_where_the_old_builders_held_two() {
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let (old, new, _) = peaks(protocol, 8 << 20);
        assert!(new < 1.2, "{protocol:?}: building the body held {new:.2} times the context");
        // The guard catches the old builders.
        assert!(old > 1.9, "{protocol:?}: the old builders held {old:.2} times the context");
    }
}

/// A line of `/proc/self/status`, in bytes (Linux).
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line[key.len()..].trim().trim_end_matches(" kB").parse::<usize>().unwrap() * 1024
}

/// The resident memory (Linux's high-water mark, reset first) that
/// building the body added, new then old (so the new path cannot reuse
/// pages the old one left), as multiples of the context's size.
fn resident_peaks(protocol: Protocol, bytes: usize) -> (f64, f64) {
    let (messages, size) = context(bytes);
    let tools = [tool("read")];
    let request =
        Request { model: "claude-x", system: Some("sys"), messages: &messages, tools: &tools, thinking: Thinking::Low };
    let mut provider = provider(protocol);
    provider.cache = CacheTtl::FiveMinutes;
    let added = |build: &dyn Fn() -> Vec<u8>| {
        let before = status_bytes("VmRSS:");
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        drop(std::hint::black_box(build()));
        (status_bytes("VmHWM:") - before) as f64 / size as f64
    };
    let new = added(&|| provider.request_body(&request).unwrap());
    let old = added(&|| serde_json::to_vec(&wire_reference::body(protocol, &request, provider.cache)).unwrap());
    (old, new)
}

/// The numbers for a 100 MB context: `cargo test --lib -- --ignored
/// wire_tests::measure_a --nocapture`.
#[test]
#[ignore = "a measurement, not a check: 100 MB, several seconds"]
fn measure_a_100_mb_context() {
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let (old, new, body) = peaks(protocol, 100 << 20);
        println!(
            "{protocol:?}: peak while building the body: old {old:.2}x the context, new {new:.2}x (the body itself: {body:.2}x)"
        );
    }
}

/// Resident memory for a 100 MB context, one protocol a process (memory
/// the old path freed stays resident and would be reused by whatever runs
/// next): `cargo test --lib -- --ignored --exact --nocapture
/// provider::wire_tests::resident_openai` (or `resident_anthropic`).
fn measure_resident(protocol: Protocol) {
    let (old, new) = resident_peaks(protocol, 100 << 20);
    println!("{protocol:?}: resident memory added while building the body: old {old:.2}x the context, new {new:.2}x");
}

#[test]
#[ignore = "a measurement, not a check: 100 MB, run alone"]
fn resident_openai() {
    measure_resident(Protocol::OpenAi);
}

#[test]
#[ignore = "a measurement, not a check: 100 MB, run alone"]
fn resident_anthropic() {
    measure_resident(Protocol::Anthropic);
}
