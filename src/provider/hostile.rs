//! Attacks by a hostile server, reproduced against a raw HTTP server on
//! 127.0.0.1 that writes exactly the bytes each attack needs: huge and
//! endless lines, trickles, silence, absurd `Retry-After`s and block
//! indexes, error bodies that echo the key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use super::*;

const KEY: &str = "sk-hostile/Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8Dc7Ba6";

type Script = Box<dyn FnOnce(&mut TcpStream) -> std::io::Result<()> + Send>;

/// A server that answers one connection per script, in order, then stops.
fn serve(scripts: Vec<Script>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for script in scripts {
            let Ok((mut stream, _)) = listener.accept() else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            if read_request(&stream).is_ok() {
                // A write fails once the client gives up: the script ends.
                let _ = script(&mut stream);
            }
        }
    });
    url
}

fn read_request(stream: &TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    reader.read_exact(&mut vec![0; length])
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn provider(url: &str, protocol: Protocol) -> Provider {
    Provider {
        id: "hostile".into(),
        protocol,
        base_url: url.to_string(),
        azure_version: None,
        key: Some(Secret::new(KEY.into())),
        client: super::http_client().build().unwrap(),
        attempts: 1,
        base_delay: Duration::from_millis(10),
        timeout: Duration::from_millis(600),
        costs: Default::default(),
        cache: Default::default(),
    }
}

async fn call(provider: &Provider, cancel: &Cancel) -> Result<Response, CallError> {
    let messages = [Message::User { content: "hi".into() }];
    let request = Request { model: "m", system: None, messages: &messages, tools: &[], thinking: Default::default() };
    provider.complete(&request, &mut |_| {}, cancel).await
}

fn openai_text(text: &str) -> String {
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    format!("data: {chunk}\n\ndata: [DONE]\n\n")
}

fn cut_message(result: Result<Response, CallError>) -> String {
    match result {
        Err(CallError::Cut { message, .. }) => message,
        other => panic!("expected a cut stream, got {other:?}"),
    }
}

#[tokio::test]
async fn a_16_mb_line_arrives_whole() {
    let text = "x".repeat(16 << 20);
    let body = openai_text(&text);
    let url = serve(vec![Box::new(move |s| {
        s.write_all(SSE_HEAD.as_bytes())?;
        s.write_all(body.as_bytes())
    })]);
    // Time is the benchmark's to measure (benches/stream.rs): a generous timeout here.
    let p = provider(&url, Protocol::OpenAi).with_timeout(Duration::from_secs(60));
    let response = call(&p, &Cancel::default()).await.unwrap();
    assert_eq!(response.text.len(), text.len());
}

#[tokio::test]
async fn a_line_past_the_cap_is_an_error_not_memory() {
    let url = serve(vec![Box::new(|s| {
        s.write_all(SSE_HEAD.as_bytes())?;
        s.write_all(b"data: ")?;
        let block = vec![b'y'; 1 << 20];
        // Endless: only the client's giving up ends it.
        loop {
            s.write_all(&block)?;
        }
    })]);
    // A timeout long enough for a debug build to take 64 MB.
    let p = provider(&url, Protocol::OpenAi).with_timeout(Duration::from_secs(60));
    let message = cut_message(call(&p, &Cancel::default()).await);
    assert!(message.contains("longer than 64 MB"), "{message}");
}

#[tokio::test]
async fn a_trickled_line_still_times_out() {
    let url = serve(vec![Box::new(|s| {
        s.write_all(SSE_HEAD.as_bytes())?;
        s.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"")?;
        loop {
            s.write_all(b"a")?;
            s.flush()?;
            std::thread::sleep(Duration::from_millis(20));
        }
    })]);
    let message = cut_message(call(&provider(&url, Protocol::OpenAi), &Cancel::default()).await);
    assert!(message.contains("no line ended for 0.6 s"), "{message}");
}

#[tokio::test]
async fn a_silent_stream_says_no_data() {
    // Each script holds its connection silent until the test ends (and
    // drops the senders), bounded should it not.
    let (end_first, first_ended) = std::sync::mpsc::channel::<()>();
    let (end_second, second_ended) = std::sync::mpsc::channel::<()>();
    let url = serve(vec![
        Box::new(move |s| {
            s.write_all(SSE_HEAD.as_bytes())?;
            s.write_all(openai_text("partial").split("\n\n").next().unwrap_or("").as_bytes())?;
            s.write_all(b"\n\n")?;
            let _ = first_ended.recv_timeout(Duration::from_secs(60));
            Ok(())
        }),
        // No answer at all, not even headers.
        Box::new(move |_| {
            let _ = second_ended.recv_timeout(Duration::from_secs(60));
            Ok(())
        }),
    ]);
    let p = provider(&url, Protocol::OpenAi);
    match call(&p, &Cancel::default()).await {
        Err(CallError::Cut { partial, message }) => {
            assert_eq!(message, "no data for 0.6 s");
            assert_eq!(partial.text, "partial", "what arrived is kept");
        }
        other => panic!("{other:?}"),
    }
    match call(&p, &Cancel::default()).await {
        Err(CallError::Failed(message)) => {
            assert!(message.starts_with("hostile sent no answer for 0.6 s"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // The scripts end: the server thread goes.
    drop((end_first, end_second));
}

#[tokio::test]
async fn absurd_retry_after_values_do_not_panic() {
    let mut scripts: Vec<Script> = Vec::new();
    for value in ["inf", "1e30", "NaN", "-1"] {
        scripts.push(Box::new(move |s| {
            write!(s, "HTTP/1.1 429 Slow\r\nretry-after: {value}\r\ncontent-length: 4\r\nconnection: close\r\n\r\nslow")
        }));
    }
    let url = serve(scripts);
    let p = provider(&url, Protocol::OpenAi);
    for _ in 0..4 {
        let result = call(&p, &Cancel::default()).await;
        assert!(
            matches!(&result, Err(CallError::Http { status: 429, message }) if message.contains("HTTP 429")),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn anthropic_block_indexes_beyond_what_was_opened() {
    let mut body = String::from(SSE_HEAD);
    for index in [u64::MAX, 1 << 40, 30_000_000] {
        body.push_str(&format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"text_delta\",\"text\":\"h\"}}}}\n\n"
        ));
    }
    body.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":99,\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n\n");
    body.push_str(
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n",
    );
    body.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    let url = serve(vec![Box::new(move |s| s.write_all(body.as_bytes()))]);
    let response = call(&provider(&url, Protocol::Anthropic), &Cancel::default()).await.unwrap();
    assert_eq!(response.text, "hhh");
}

#[tokio::test]
async fn error_bodies_that_echo_the_key_leave_no_part_of_it() {
    let escaped = KEY.replace('/', "\\/");
    let plain = format!("{}{KEY} is not a valid key", "e".repeat(256));
    let json = format!(r#"{{"error":{{"message":"Incorrect API key provided: {escaped}"}}}}"#);
    let raw_json = format!(r#"{{"detail":"bad key {escaped}"}}"#);
    let encoded = format!("bad key in ?key={}", KEY.replace('/', "%2F"));
    let endless = format!("{KEY} ");
    let mut scripts: Vec<Script> = Vec::new();
    for (content_type, body) in
        [("text/plain", plain), ("application/json", json), ("application/json", raw_json), ("text/plain", encoded)]
    {
        scripts.push(Box::new(move |s| {
            write!(s, "HTTP/1.1 401 No\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
        }));
    }
    // An endless error body: only its start is read.
    scripts.push(Box::new(move |s| {
        s.write_all(b"HTTP/1.1 401 No\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n")?;
        loop {
            s.write_all(endless.as_bytes())?;
        }
    }));
    let url = serve(scripts);
    let p = provider(&url, Protocol::OpenAi);
    for _ in 0..5 {
        let message = match call(&p, &Cancel::default()).await {
            Err(CallError::Http { status: 401, message }) => message,
            other => panic!("{other:?}"),
        };
        assert!(message.starts_with("HTTP 401"), "{message}");
        assert!(!message.contains(&KEY[..8]) && !message.contains("Zq8Xw7Vu"), "{message}");
        assert!(message.contains("[redacted]"), "{message}");
        assert!(message.chars().count() <= 320, "{message}");
    }
}
