//! The tool registry: what the model may call during a turn. Later issues
//! add tools (memory, compaction artifacts); a call to a tool that is not
//! here gets an error result, never a crash, so the conversation goes on.

use serde_json::Value;

use crate::provider::ToolSpec;
use crate::store::ToolCall;

/// What a tool run gives back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result text the model gets.
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// One tool.
pub trait Tool: Send + Sync {
    /// The tool's name, description and input schema, as offered to the model.
    fn spec(&self) -> ToolSpec;
    /// Run the tool on the model's input.
    fn run(&self, input: &Value) -> ToolOutput;
}

#[derive(Default)]
/// The tools the model may call, by name.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolRegistry {
    /// Offer one more tool.
    pub fn add(&mut self, tool: Box<dyn Tool>) {
        self.tools.push(tool);
    }

    /// The specs offered to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Run a call; an unknown tool or input that is not JSON is an error
    /// result for the model to read.
    pub fn run(&self, call: &ToolCall) -> ToolOutput {
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == call.name) else {
            let known: Vec<String> = self.tools.iter().map(|t| t.spec().name).collect();
            let offer = if known.is_empty() {
                "no tools are available".to_string()
            } else {
                format!("available: {}", known.join(", "))
            };
            return ToolOutput { content: format!("unknown tool {:?}: {offer}", call.name), is_error: true };
        };
        if let Value::String(raw) = &call.input {
            return ToolOutput { content: format!("the input is not valid JSON: {raw}"), is_error: true };
        }
        tool.run(&call.input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Echo;
    impl Tool for Echo {
        fn spec(&self) -> ToolSpec {
            ToolSpec { name: "echo".into(), description: "echo".into(), parameters: json!({"type": "object"}) }
        }
        fn run(&self, input: &Value) -> ToolOutput {
            ToolOutput { content: input.to_string(), is_error: false }
        }
    }

    #[test]
    fn known_unknown_and_bad_input() {
        let mut registry = ToolRegistry::default();
        let call = |name: &str, input: Value| ToolCall { id: "c".into(), name: name.into(), input };
        assert!(registry.run(&call("echo", json!({}))).content.contains("no tools are available"));
        registry.add(Box::new(Echo));
        assert_eq!(
            registry.run(&call("echo", json!({"a": 1}))),
            ToolOutput { content: "{\"a\":1}".into(), is_error: false }
        );
        let out = registry.run(&call("nope", json!({})));
        assert!(out.is_error && out.content.contains("available: echo"), "{out:?}");
        assert!(registry.run(&call("echo", Value::String("{oops".into()))).is_error);
    }
}
