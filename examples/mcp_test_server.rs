//! An MCP server for glrs's tests (SPEC 15), built with `rmcp`'s server
//! side. Two tools: `echo` (answers `echo: TEXT`) and `fail` (answers an
//! error result, `isError: true`).
//!
//! Modes:
//! - no arguments: stdio, as `mcpServers.<name>.command` starts it;
//! - `--http`: streamable HTTP on 127.0.0.1, printing its port on stdout;
//!   `echo` then also says the `X-Test` header its requests carried.
//!
//! With `MCP_TEST_PIDS=FILE` it writes its pid to FILE (and with
//! `--spawn-child` it starts a `sleep` and writes that pid too), so tests
//! can kill it mid-session and check nothing is left once the chat ends.
//! `cargo test` builds it (target/debug/examples/mcp_test_server).

use std::io::Write;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoRequest {
    /// The text to send back.
    text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct FailRequest {
    /// Why it fails.
    reason: String,
}

#[derive(Clone)]
struct TestServer {
    tool_router: ToolRouter<Self>,
    /// The last `X-Test` header seen (HTTP mode).
    header: Arc<Mutex<Option<String>>>,
}

#[tool_router]
impl TestServer {
    #[tool(description = "Send the text back, prefixed with 'echo: '")]
    fn echo(&self, Parameters(EchoRequest { text }): Parameters<EchoRequest>) -> String {
        match self.header.lock().ok().and_then(|h| h.clone()) {
            Some(header) => format!("echo: {text} (X-Test: {header})"),
            None => format!("echo: {text}"),
        }
    }

    #[tool(description = "Always fail, giving the reason")]
    fn fail(&self, Parameters(FailRequest { reason }): Parameters<FailRequest>) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!("failed: {reason}"))])
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl TestServer {
    fn new(header: Arc<Mutex<Option<String>>>) -> TestServer {
        TestServer { tool_router: Self::tool_router(), header }
    }
}

fn write_pids(spawn_child: bool) -> anyhow::Result<Option<std::process::Child>> {
    let Some(file) = std::env::var_os("MCP_TEST_PIDS") else { return Ok(None) };
    let child = if spawn_child { Some(std::process::Command::new("sleep").arg("300").spawn()?) } else { None };
    let mut pids = std::process::id().to_string();
    if let Some(child) = &child {
        pids.push_str(&format!(" {}", child.id()));
    }
    // Written whole, then renamed: a reader never sees half of it.
    let tmp = std::path::PathBuf::from(format!("{}.tmp", file.to_string_lossy()));
    std::fs::write(&tmp, pids)?;
    std::fs::rename(&tmp, &file)?;
    Ok(child)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let _child = write_pids(args.iter().any(|a| a == "--spawn-child"))?;
    let header: Arc<Mutex<Option<String>>> = Arc::default();
    if !args.iter().any(|a| a == "--http") {
        let running = TestServer::new(header).serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        return Ok(());
    }
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let for_sessions = header.clone();
    let service: StreamableHttpService<TestServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(TestServer::new(for_sessions.clone())),
        Default::default(),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        let header = header.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let service = service.clone();
                if let Some(value) = request.headers().get("x-test").and_then(|v| v.to_str().ok())
                    && let Ok(mut seen) = header.lock()
                {
                    *seen = Some(value.to_string());
                }
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await;
        });
    }
}
