use super::*;

/// A bad hook is named by its key when the config is read (SPEC 15).
#[test]
fn bad_hooks_are_named_by_their_key() {
    use serde_json::json;
    for (bad, key) in [
        (json!({"tool_call": [{"command": "x", "matcher": "bash:["}]}), "hooks.tool_call[0].matcher: rule \"bash:[\""),
        (
            json!({"tool_call": [{"command": "x", "matcher": ":x"}]}),
            "hooks.tool_call[0].matcher: rule \":x\" names no tool",
        ),
        (json!({"turn_end": [{"command": "x", "timeout": 0}]}), "hooks.turn_end[0].timeout"),
        (json!({"turn_end": [{"command": " "}]}), "hooks.turn_end[0].command"),
    ] {
        let err = format!("{:#}", Config::parse(&json!({"hooks": bad}).to_string()).unwrap_err());
        assert!(err.contains(key), "{err}");
    }
}

#[test]
fn every_spec_key_parses() {
    let text = r#"{
      "model": "openai/gpt-4.1", "systemPrompt": "be brief", "compactAt": 0.5, "compactWindow": 200000,
      "compactModel": "azure/gpt-5.4-nano", "keepRecentTokens": 20000, "reserveTokens": 16384,
      "reserveTokensFloor": 20000, "parentForkMaxTokens": 100000,
      "memoryFlush": {"enabled": true, "softThresholdTokens": 4000, "prompt": "p", "systemPrompt": "s"},
      "session": {"reset": {"mode": "idle", "atHour": 4, "idleMinutes": 60},
                  "maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500,
                                  "maxDiskBytes": "1gb", "highWaterBytes": "800mb", "cronRetention": "24h"}},
      "providers": {"local": {"type": "openai", "baseUrl": "http://127.0.0.1:8080/v1", "apiKeyEnv": "LOCAL_KEY",
                              "models": {"qwen": {"metadata": {"context": 32768, "costPerMTokIn": 0.1, "costPerMTokOut": 0.2}}}},
                    "azure": {"endpoint": "https://x.openai.azure.com", "apiVersion": "2024-10-21", "apiKeyCommand": "pass azure"},
                    "anthropic": {"cache": "1h"}},
      "retry": {"attempts": 3, "baseDelayMs": 200}, "thinking": "medium",
      "contextPruning": {"mode": "cache-ttl", "ttl": "5m", "keepLastAssistants": 3, "softTrimRatio": 0.3,
                         "hardClearRatio": 0.5, "minPrunableToolChars": 50000,
                         "softTrim": {"maxChars": 4000, "headChars": 1500, "tailChars": 1500},
                         "hardClear": {"enabled": true, "placeholder": "[cleared]"},
                         "tools": {"allow": ["*"], "deny": ["memory_*"]}},
      "tools": {"enabled": true, "disabled": ["compaction_*"]},
      "permissions": {"allow": ["bash:git *", "edit:src/**"], "deny": ["bash:rm *"]},
      "redact": {"enabled": true, "patterns": ["corp-[0-9]+"]}
    }"#;
    let c = Config::parse(text).unwrap();
    assert_eq!(c.model_metadata("local", "qwen").unwrap().context, Some(32768));
    assert_eq!(c.session.reset.mode, Some(ResetMode::Idle));
}

#[test]
fn errors_name_the_key() {
    let cases = [
        (r#"{"modle": "x/y"}"#, "unknown field `modle`"),
        (r#"{"memoryFlush": {"enabled": "yes"}}"#, "memoryFlush.enabled: invalid type"),
        (r#"{"providers": {"x": {"type": "openai", "bogus": 1}}}"#, "providers.x.bogus: unknown field `bogus`"),
        (r#"{"compactAt": 1.5}"#, "compactAt: must be between 0 and 1"),
        (r#"{"model": "gpt-4.1"}"#, "model: a model is named provider/model-id"),
        (r#"{"session": {"reset": {"mode": "weekly"}}}"#, "session.reset.mode: unknown variant `weekly`"),
        (r#"{"session": {"maintenance": {"pruneAfter": "soon"}}}"#, "session.maintenance.pruneAfter"),
        (r#"{"providers": {"vllm": {"baseUrl": "http://h/v1"}}}"#, "providers.vllm.type: required"),
        (r#"{"providers": {"vllm": {"type": "openai", "baseUrl": "h/v1"}}}"#, "providers.vllm.baseUrl"),
        (r#"{"permissions": {"allow": ["bash:["]}}"#, "permissions.allow[0]"),
        (r#"{"redact": {"patterns": ["("]}}"#, "redact.patterns[0]"),
        (r#"{"sandbox": {"mode": "strict"}}"#, "sandbox.mode: unknown variant `strict`"),
        (r#"{"sandbox": {"writableRoots": ["build"]}}"#, "sandbox.writableRoots[0]"),
        (r#"{"sandbox": {"denyRead": ["~user/x"]}}"#, "sandbox.denyRead[0]"),
        (r#"{"tools": {"disabled": ["["]}}"#, "tools.disabled[0]"),
        (r#"{"hooks": {"on_save": []}}"#, "hooks.on_save: unknown field `on_save`"),
        (r#"{"hooks": {"tool_call": [{"command": "x", "when": 1}]}}"#, "hooks.tool_call[0].when"),
        ("{", "EOF"),
        (r#"{"model": "openai/gpt-4.1",}"#, "trailing comma at line 1"),
    ];
    for (text, expected) in cases {
        let err = format!("{:#}", Config::parse(text).unwrap_err());
        assert!(err.contains(expected), "{text}: {err}");
    }
}

#[test]
fn numbers_out_of_range_name_their_key() {
    for (text, expected) in [
        (r#"{"session": {"reset": {"idleMinutes": 1000000000000}}}"#, "session.reset.idleMinutes: must be from 1 to"),
        (r#"{"session": {"reset": {"idleMinutes": 18446744073709551615}}}"#, "session.reset.idleMinutes"),
        (r#"{"session": {"reset": {"idleMinutes": 0}}}"#, "session.reset.idleMinutes"),
        (r#"{"retry": {"baseDelayMs": 18446744073709551615}}"#, "retry.baseDelayMs: must be from 0 to 120000"),
        (r#"{"retry": {"attempts": 0}}"#, "retry.attempts: must be from 1 to 100"),
        (r#"{"retry": {"attempts": 4294967295}}"#, "retry.attempts"),
        (r#"{"compactWindow": 0}"#, "compactWindow: must be from 1000 to 100000000, got 0"),
        (r#"{"compactWindow": 18446744073709551615}"#, "compactWindow"),
        (r#"{"keepRecentTokens": 18446744073709551615}"#, "keepRecentTokens"),
        (r#"{"reserveTokens": 18446744073709551615}"#, "reserveTokens"),
        (r#"{"reserveTokensFloor": 18446744073709551615}"#, "reserveTokensFloor"),
        (r#"{"parentForkMaxTokens": 18446744073709551615}"#, "parentForkMaxTokens"),
        (r#"{"memoryFlush": {"softThresholdTokens": 18446744073709551615}}"#, "memoryFlush.softThresholdTokens"),
        (r#"{"maxStepsPerTurn": 0}"#, "maxStepsPerTurn: must be from 1"),
        (
            r#"{"contextPruning": {"softTrim": {"headChars": 18446744073709551615}}}"#,
            "contextPruning.softTrim.headChars: must be from 0 to 1000000000",
        ),
        (
            r#"{"contextPruning": {"softTrim": {"tailChars": 18446744073709551615}}}"#,
            "contextPruning.softTrim.tailChars",
        ),
        (r#"{"contextPruning": {"keepLastAssistants": 18446744073709551615}}"#, "contextPruning.keepLastAssistants"),
        (
            r#"{"contextPruning": {"minPrunableToolChars": 18446744073709551615}}"#,
            "contextPruning.minPrunableToolChars",
        ),
        (
            r#"{"providers": {"openai": {"models": {"m": {"metadata": {"context": 0}}}}}}"#,
            "providers.openai.models.m.metadata.context",
        ),
        (
            r#"{"providers": {"openai": {"models": {"m": {"metadata": {"costPerMTokIn": -1}}}}}}"#,
            "providers.openai.models.m.metadata.costPerMTokIn",
        ),
        (r#"{"providers": {"openai": {"models": {"m": {"metadata": {"costPerMTokOut": 1e300}}}}}}"#, "costPerMTokOut"),
        (r#"{"maxStepsPerTurn": -1}"#, "maxStepsPerTurn: invalid value"),
    ] {
        let err = format!("{:#}", Config::parse(text).unwrap_err());
        assert!(err.contains(expected), "{text}: {err}");
    }
    let edges = r#"{"compactWindow": 1000, "session": {"reset": {"idleMinutes": 52560000}},
                    "retry": {"attempts": 100, "baseDelayMs": 120000}, "maxStepsPerTurn": 1}"#;
    assert!(Config::parse(edges).is_ok());
}

#[test]
fn zero_and_huge_durations_are_errors_never_wrapped_values() {
    // SPEC 16: 0 is an error that says to use false; issue 14: values that
    // once wrapped through `as i64` (and deleted every session).
    for (text, expected) in [
        (r#"{"session": {"maintenance": {"pruneAfter": 0}}}"#, "pruneAfter: 0 is not a duration here: use false"),
        (r#"{"session": {"maintenance": {"pruneAfter": "0d"}}}"#, "use false"),
        (r#"{"session": {"maintenance": {"cronRetention": "0"}}}"#, "cronRetention"),
        (r#"{"session": {"maintenance": {"checkEvery": "0h"}}}"#, "checkEvery"),
        (r#"{"session": {"maintenance": {"maxEntries": 0}}}"#, "maxEntries: 0 would remove every session"),
        (r#"{"session": {"maintenance": {"pruneAfter": 18446744073709551615}}}"#, "longer than 100 years"),
        (r#"{"session": {"maintenance": {"pruneAfter": "99999999999999999w"}}}"#, "longer than 100 years"),
        (r#"{"session": {"maintenance": {"pruneAfter": "1e400"}}}"#, "not a duration"),
        (r#"{"session": {"maintenance": {"pruneAfter": true}}}"#, "false to turn the rule off"),
        (r#"{"contextPruning": {"softTrimRatio": 2}}"#, "contextPruning.softTrimRatio: must be between 0 and 1"),
        (r#"{"contextPruning": {"ttl": 0}}"#, "contextPruning.ttl"),
        (r#"{"contextPruning": {"mode": "adaptive"}}"#, "contextPruning.mode: unknown variant"),
    ] {
        let err = format!("{:#}", Config::parse(text).unwrap_err());
        assert!(err.contains(expected), "{text}: {err}");
    }
    let off = Config::parse(
        r#"{"session": {"maintenance": {"pruneAfter": false, "maxEntries": false, "cronRetention": false, "checkEvery": false}}}"#,
    )
    .unwrap();
    assert_eq!(off.session.maintenance.max_entries, Some(Amount::Switch(false)));
}
