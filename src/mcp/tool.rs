//! An MCP server's tool in the registry: offered as `mcp__<server>__<tool>`
//! (shortened and cleaned to what providers accept), with the server's
//! input schema; a call is a `tools/call` whose result becomes text: text
//! content joined, other content described in a line, `isError` an error
//! result, and output past the limits cut to its end with the whole kept
//! in a file, as for `bash`.

use serde_json::Value;

use super::Handle;
use crate::limits;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// The longest tool name providers accept.
const MAX_NAME: usize = 64;

/// The name a server's tool is offered under: `mcp__<server>__<tool>`,
/// characters providers refuse replaced by `_`, at most 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    name.chars().take(MAX_NAME).collect()
}

/// What the model is offered for a server's tool.
pub(super) fn spec(server: &str, tool: &rmcp::model::Tool) -> ToolSpec {
    let description = match (&tool.description, &tool.title) {
        (Some(d), _) if !d.trim().is_empty() => d.to_string(),
        (_, Some(title)) => title.clone(),
        _ => format!("The {} tool of the MCP server {server}.", tool.name),
    };
    let mut parameters = Value::Object((*tool.input_schema).clone());
    if parameters.get("type").is_none() {
        parameters["type"] = Value::from("object");
    }
    ToolSpec { name: tool_name(server, &tool.name), description, parameters }
}

/// One MCP tool.
pub struct McpTool {
    handle: Handle,
    server: String,
    tool: String,
    spec: ToolSpec,
}

impl McpTool {
    pub(super) fn new(handle: Handle, server: &str, tool: &str, spec: ToolSpec) -> McpTool {
        McpTool { handle, server: server.to_string(), tool: tool.to_string(), spec }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let arguments = match input {
                Value::Object(map) => Some(map.clone()),
                Value::Null => None,
                other => return ToolOutput::error(format!("the input must be a JSON object, got {other}")),
            };
            let peer = match self.handle.peer(&self.server) {
                Ok(peer) => peer,
                Err(why) => return ToolOutput::error(why),
            };
            let mut params = rmcp::model::CallToolRequestParams::new(self.tool.clone());
            if let Some(arguments) = arguments {
                params = params.with_arguments(arguments);
            }
            let server = &self.server;
            let timeout = self.handle.tool_timeout(server);
            // Dropping the call (its timeout, Esc, a message too long) sends
            // the server `notifications/cancelled` (rmcp does, on drop).
            let call = tokio::time::timeout(timeout, peer.call_tool(params));
            let answered = match self.handle.oversized(server) {
                Some(mut too_long) => tokio::select! {
                    answered = call => answered,
                    Ok(()) = too_long.changed() => return ToolOutput::error(format!(
                        "the MCP server {server} answered with a message over {} MB, more than the MCP SDK reads: \
                         the call failed (ask it for less)",
                        super::stdio::MAX_MESSAGE >> 20
                    )),
                },
                None => call.await,
            };
            // What the call made the server start outside its group.
            crate::process::escaped::sweep();
            match answered {
                Err(_) => ToolOutput::error(format!(
                    "the MCP server {server} did not answer within {} s (mcpServers.{server}.toolTimeoutSec)",
                    timeout.as_secs_f64()
                )),
                Ok(Err(e)) => {
                    if matches!(e, rmcp::ServiceError::TransportSend(_) | rmcp::ServiceError::TransportClosed) {
                        self.handle.unreachable(server, format!("a call could not reach it: {e}"));
                    }
                    let gone = if self.handle.running(server) { "" } else { "; the server is not running" };
                    ToolOutput::error(format!("the MCP server {server} failed the call: {e}{gone}"))
                }
                Ok(Ok(result)) => {
                    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                    let (text, is_error) = result_text(&value);
                    let text = limits::within_limits(text, ctx.output_dir, &self.spec.name, ctx.redactor);
                    ToolOutput { content: text, is_error }
                }
            }
        })
    }
}

/// A `tools/call` result (as JSON, the protocol's shape) as the model reads
/// it, and whether it is an error.
pub fn result_text(result: &Value) -> (String, bool) {
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut parts: Vec<String> = blocks.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    (parts.join("\n"), is_error)
}

fn size_of(base64: Option<&str>) -> String {
    match base64 {
        Some(data) => format!("{} bytes", data.trim_end_matches('=').len() * 3 / 4),
        None => "no data".into(),
    }
}

/// One content block: text as it is, anything else described.
fn block_text(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let mime = field("mimeType").unwrap_or("unknown type");
    match field("type").unwrap_or("") {
        "text" => field("text").unwrap_or("").to_string(),
        "image" => format!("[image content: {mime}, {} (not shown)]", size_of(field("data"))),
        "audio" => format!("[audio content: {mime}, {} (not shown)]", size_of(field("data"))),
        "resource_link" => {
            format!("[resource link: {} <{}>]", field("name").unwrap_or(""), field("uri").unwrap_or(""))
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let get = |name: &str| resource.get(name).and_then(Value::as_str);
            let uri = get("uri").unwrap_or("");
            match (get("text"), get("blob")) {
                (Some(text), _) => format!("[resource {uri}]\n{text}"),
                (None, blob) => format!(
                    "[resource {uri}: {}, {} (not shown)]",
                    get("mimeType").unwrap_or("unknown type"),
                    size_of(blob)
                ),
            }
        }
        other => format!("[{} content (not shown)]", if other.is_empty() { "unknown" } else { other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_what_providers_accept() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(tool_name("fs", "read.file/v2"), "mcp__fs__read_file_v2");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
    }

    #[test]
    fn results_become_text() {
        let result = json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAAAAAA", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "hologram"}
        ]});
        let (text, is_error) = result_text(&result);
        assert!(!is_error);
        assert_eq!(
            text,
            "one\n[image content: image/png, 3 bytes (not shown)]\n[resource file:///a]\nbody\n\
             [resource file:///b: application/zip, 6 bytes (not shown)]\n[resource link: c <file:///c>]\n\
             [audio content: audio/wav, 3 bytes (not shown)]\n[hologram content (not shown)]"
        );
        assert_eq!(
            result_text(&json!({"content": [{"type": "text", "text": "no"}], "isError": true})),
            ("no".into(), true)
        );
        let (text, _) = result_text(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(text, "{\n  \"a\": 1\n}");
    }
}
