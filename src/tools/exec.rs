//! Executable tools (SPEC 15): each executable file in
//! `$XDG_CONFIG_HOME/glrs/tools/` is a tool. `FILE --describe` prints
//! `{"name", "description", "parameters"}`; a call runs the file in the
//! session's cwd with the input JSON on stdin and `GLRS_SESSION_ID`,
//! `GLRS_SESSION_FILE` in its environment. Stdout is the result; a
//! non-zero exit makes it an error result carrying stderr. It runs like
//! `bash` (own process group, killed on timeout or Esc, long output cut
//! to its end with the whole kept in a file), through the same code.
//!
//! All files are described at once, in parallel, each with a short
//! timeout: a broken tool costs start-up at most that, and is reported by
//! its file name and left out while the others load.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::bash;
use super::{Tool, ToolContext, ToolFuture, ToolOutput};
use crate::process::{self, Ending, Spawn};
use crate::provider::ToolSpec;

/// How long `--describe` may take.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a call may run (the `bash` default: the tool's schema is its
/// own, so the model cannot ask for another).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(bash::DEFAULT_TIMEOUT);

/// The folder executable tools are read from, under a config home.
pub fn tools_dir(config_home: &Path) -> PathBuf {
    config_home.join("glrs").join("tools")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Description {
    name: String,
    description: String,
    parameters: Value,
}

/// One executable tool.
pub struct ExecTool {
    path: PathBuf,
    spec: ToolSpec,
}

/// The tools in `dir` (sorted by file name), and one line for each file
/// left out, naming it. `taken` are names already in use (the built-in
/// tools): a tool claiming one is left out too. A missing folder is no
/// tools and no problem.
pub async fn load(dir: &Path, taken: &[String]) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    load_in(dir, taken, &crate::limits::output_dir()).await
}

/// [`load`], the `--describe` outputs going through files under `output_dir`.
async fn load_in(dir: &Path, taken: &[String], output_dir: &Path) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_executable(p)).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![format!("cannot read the tools folder {}: {e}", dir.display())]),
    };
    files.sort();
    let described = futures_util::future::join_all(files.iter().map(|f| describe(f, output_dir))).await;
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut problems = Vec::new();
    let mut names: Vec<String> = taken.to_vec();
    for (path, result) in files.into_iter().zip(described) {
        let shown = path.display();
        match result {
            Ok(spec) if names.contains(&spec.name) => {
                problems.push(format!("tool {shown} left out: the name {:?} is already taken", spec.name))
            }
            Ok(spec) => {
                names.push(spec.name.clone());
                tools.push(Arc::new(ExecTool { path, spec }));
            }
            Err(why) => problems.push(format!("tool {shown} left out: {why}")),
        }
    }
    (tools, problems)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    // Follows links: a link to a script is a tool.
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The most `--describe` may print: a description is a small JSON document.
const DESCRIBE_MAX_BYTES: u64 = 1024 * 1024;

/// Run `FILE --describe` and check what it prints. It runs like a call
/// (the runner `bash` uses: own process group, killed with all it started
/// when it exits or times out, dying with the chat), outside the sandbox,
/// so in `/`, not the chat's cwd, where the model may have planted what it
/// would load ([`crate::paths::OWN_PROGRAMS_CWD`]); it is done when the
/// file itself exits, whatever it left behind.
async fn describe(path: &Path, output_dir: &Path) -> Result<ToolSpec, String> {
    let cwd = Path::new(crate::paths::OWN_PROGRAMS_CWD);
    let spawn = Spawn { stderr_apart: true, ..Spawn::new(path.as_os_str(), &["--describe"], cwd) };
    let ran = process::run_process(&spawn, DESCRIBE_TIMEOUT, output_dir, "describe")
        .await
        .map_err(|e| format!("--describe could not run: {e}"))?;
    // Read, then removed: neither file is named to anyone.
    let stdout = ran.output.read_from(0, DESCRIBE_MAX_BYTES + 1);
    // Only its first line is shown.
    let stderr = ran.stderr.as_ref().and_then(|p| p.read_from(0, 64 * 1024 + 1).ok()).unwrap_or_default();
    for p in std::iter::once(&ran.output).chain(&ran.stderr) {
        p.remove();
    }
    let failed = |how: String| {
        let stderr = crate::limits::one_line(String::from_utf8_lossy(&stderr).trim(), 200);
        format!("--describe failed ({how}){}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })
    };
    match ran.ending {
        Ending::Exit(0) => {}
        Ending::Exit(code) => return Err(failed(format!("exit code {code}"))),
        Ending::Signal(sig) => return Err(failed(format!("killed by signal {sig}"))),
        Ending::TimedOut(s) => return Err(format!("--describe did not finish in {s} s")),
    }
    let stdout = stdout.map_err(|e| format!("--describe: cannot read its output back: {e}"))?;
    if stdout.len() as u64 > DESCRIBE_MAX_BYTES {
        return Err(format!("--describe printed more than {DESCRIBE_MAX_BYTES} bytes"));
    }
    let d: Description = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&stdout))
        .map_err(|e| format!("--describe printed bad JSON (at {}): {}", e.path(), e.inner()))?;
    let valid_name = !d.name.is_empty()
        && d.name.len() <= 64
        && d.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(format!("--describe gave the name {:?}: use 1 to 64 letters, digits, _ or -", d.name));
    }
    if !d.parameters.is_object() {
        return Err("--describe gave \"parameters\" that is not a JSON Schema object".into());
    }
    Ok(ToolSpec { name: d.name, description: d.description, parameters: d.parameters })
}

impl Tool for ExecTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let stdin = input.to_string();
            let env: [(&str, &OsStr); 2] =
                [("GLRS_SESSION_ID", OsStr::new(ctx.session_id)), ("GLRS_SESSION_FILE", ctx.session_file.as_os_str())];
            // SPEC 17: executable tools run inside the sandbox too (they
            // still ask: every extension tool does).
            let confinement = match ctx.sandbox.confinement() {
                Ok(c) => c,
                Err(e) => {
                    return ToolOutput::error(format!("the sandbox could not be set up, so the tool was not run: {e}"));
                }
            };
            let mut env = env.to_vec();
            env.extend(confinement.iter().flat_map(|c| c.env()));
            let spawn = Spawn {
                env: &env,
                unset: confinement.as_ref().map_or(&[], |c| c.unset()),
                stdin: Some(stdin.as_bytes()),
                stderr_apart: true,
                confine: confinement.as_ref().map(|c| c.confine.clone()),
                ..Spawn::new(self.path.as_os_str(), &[], ctx.cwd)
            };
            let ran = match process::run_process(&spawn, CALL_TIMEOUT, ctx.output_dir, &self.spec.name).await {
                Ok(ran) => ran,
                Err(e) => return ToolOutput::error(e),
            };
            let stdout = process::output_text(&ran.output, ctx.redactor);
            let stderr = ran.stderr.as_ref().map(|p| process::output_text(p, ctx.redactor)).unwrap_or_default();
            let failed = |what: String| {
                let mut text = stdout.clone();
                for part in [stderr.as_str(), what.as_str()] {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(part);
                }
                ToolOutput::error(text)
            };
            match ran.ending {
                Ending::Exit(0) => ToolOutput::ok(stdout),
                Ending::Exit(code) => failed(format!("exit code {code}")),
                Ending::Signal(sig) => failed(format!("killed by signal {sig}")),
                Ending::TimedOut(s) => {
                    failed(format!("timed out after {s} s: the tool and everything it started were killed"))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Cancel;
    use serde_json::json;

    fn script(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn good_tools_load_and_broken_ones_are_named_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir(&tools).unwrap();
        let describe = r#"echo '{"name": "shout", "description": "upper-case", "parameters": {"type": "object"}}'"#;
        // Its --describe leaves a child holding stdout: done when the file
        // exits, not at the timeout (which would leave the tool out).
        script(
            &tools,
            "shout",
            &format!("[ \"$1\" = --describe ] && {{ sleep 100 & {describe}; exit 0; }}\ntr a-z A-Z"),
        );
        script(&tools, "fails", "echo nope >&2; exit 1");
        script(&tools, "garbage", "echo '{not json'");
        script(&tools, "builtin", r#"echo '{"name": "bash", "description": "x", "parameters": {}}'"#);
        std::fs::write(tools.join("README"), "not executable: not a tool").unwrap();
        let rt = crate::runtime::build().unwrap();
        let out_dir = dir.path().join("out");
        let (loaded, problems) = rt.block_on(load_in(&tools, &["bash".to_string()], &out_dir));
        assert_eq!(loaded.iter().map(|t| t.name().to_string()).collect::<Vec<_>>(), ["shout"]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("builtin") && problems[0].contains("already taken"), "{problems:?}");
        assert!(problems[1].contains("fails") && problems[1].contains("nope"), "{problems:?}");
        assert!(problems[2].contains("garbage") && problems[2].contains("bad JSON"), "{problems:?}");
        assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0, "--describe leaves no file");
        assert!(rt.block_on(load_in(&dir.path().join("none"), &[], &out_dir)).1.is_empty(), "no folder: no problem");

        let cancel = Cancel::default();
        let ctx = ToolContext {
            cwd: dir.path(),
            cancel: &cancel,
            session_id: "s1",
            session_file: dir.path(),
            output_dir: &out_dir,
            judged: crate::tools::Judged::default(),
            redactor: &crate::redact::Redactor::off(),
            sandbox: crate::sandbox::Sandbox::off(),
            model: "",
            entries: 0,
        };
        let out = rt.block_on(loaded[0].run(&json!({"text": "hi"}), &ctx));
        assert_eq!(out, ToolOutput::ok("{\"TEXT\":\"HI\"}"));
    }
}
