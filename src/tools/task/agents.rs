//! Named agents (SPEC 20): `$XDG_CONFIG_HOME/glrs/agents/NAME.md` and
//! `<repository>/.glrs/agents/NAME.md`, Markdown with a front matter of
//! `description`, `model` and `tools` (globs over tool names) whose body is
//! the child's system prompt. The repository's file wins over the user's of
//! the same name (it is the more specific).
//!
//! A repository's agent comes with the repository, so it is read as its
//! `AGENTS.md` is (issue 20): a link leading out of the repository is not
//! read, nor anything but a regular file, and at most 64 KB of it. What it
//! can do is bounded anyway: a child runs under the parent's permissions,
//! never more, whatever its `tools` say.
//!
//! The front matter is the small subset of YAML such files use (`key:
//! value`, a list as `[a, b]`, `a, b` or `- a` lines), read here rather
//! than with a YAML parser: three keys do not earn a dependency.

use std::path::{Path, PathBuf};

use crate::tools::fs::open::{open_regular, read_capped};
use crate::tools::fs::real::real_path;

/// The most of one agent file that is read.
const AGENT_BYTES: u64 = 64 * 1024;

/// One named agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedAgent {
    /// Its name: the file's name without `.md`.
    pub name: String,
    /// What it is for, as the model is told.
    pub description: String,
    /// Its model (`provider/model-id`), else the parent's.
    pub model: Option<String>,
    /// Globs over tool names: the only tools it is offered (`None`: all).
    pub tools: Option<Vec<String>>,
    /// Its system prompt (the file's body).
    pub system: String,
    /// The file it came from.
    pub file: PathBuf,
}

/// The folders agents are read from, the user's first: a later one's agent
/// replaces an earlier one's of the same name.
pub fn agent_dirs(config_home: Option<&Path>, cwd: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut dirs = Vec::new();
    if let Some(home) = config_home {
        dirs.push((home.join("glrs").join("agents"), None));
    }
    let root = cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd);
    let scope = real_path(root).unwrap_or_else(|_| root.to_path_buf());
    dirs.push((root.join(".glrs").join("agents"), Some(scope)));
    dirs
}

/// The named agents in `dirs` (from [`agent_dirs`]), sorted by name, and a
/// line for each file left out, naming it and why.
pub fn load(dirs: &[(PathBuf, Option<PathBuf>)]) -> (Vec<NamedAgent>, Vec<String>) {
    let mut agents: Vec<NamedAgent> = Vec::new();
    let mut problems = Vec::new();
    for (dir, scope) in dirs {
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(format!("cannot read the agents folder {}: {e}", dir.display()));
                continue;
            }
        };
        files.sort();
        for file in files {
            match read_agent(&file, scope.as_deref()) {
                Ok(agent) => {
                    agents.retain(|a| a.name != agent.name);
                    agents.push(agent);
                }
                Err(why) => problems.push(format!("agent {} left out: {why}", file.display())),
            }
        }
    }
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    (agents, problems)
}

/// Read one agent file: the whole agent, or why it was left out.
fn read_agent(file: &Path, scope: Option<&Path>) -> Result<NamedAgent, String> {
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let valid =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(format!("its name {name:?} is not 1 to 64 letters, digits, _ or -"));
    }
    let real = real_path(file).map_err(|e| e.to_string())?;
    if let Some(scope) = scope
        && !real.starts_with(scope)
    {
        return Err(format!("it links outside the repository (to {})", real.display()));
    }
    let (bytes, more) = open_regular(&real)
        .map_err(|e| match e {
            crate::tools::fs::open::OpenError::NotRegular(kind) => format!("it is {kind}, not a regular file"),
            crate::tools::fs::open::OpenError::Io(e) => e.to_string(),
        })
        .and_then(|(mut f, size)| read_capped(&mut f, AGENT_BYTES, size).map_err(|e| e.to_string()))?;
    if more {
        return Err("it is over 64 KB".into());
    }
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    parse(&name, &text, file)
}

/// An agent from its file's text.
pub fn parse(name: &str, text: &str, file: &Path) -> Result<NamedAgent, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it has no front matter (a first line ---, then description: …, then ---)")?;
    let (front, body) = match rest.find("\n---") {
        Some(at) => {
            let after = &rest[at + 4..];
            let body = after.split_once('\n').map_or("", |(_, body)| body);
            (&rest[..at], body)
        }
        None => return Err("its front matter does not end (no closing --- line)".into()),
    };
    let mut agent = NamedAgent {
        name: name.to_string(),
        description: String::new(),
        model: None,
        tools: None,
        system: body.trim().to_string(),
        file: file.to_path_buf(),
    };
    let mut list_of: Option<&str> = None;
    for (n, line) in front.lines().enumerate() {
        let at = n + 2;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            match list_of {
                Some("tools") => agent.tools.get_or_insert_default().push(unquote(item).to_string()),
                _ => return Err(format!("line {at}: a list item outside tools:")),
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(format!("line {at}: not key: value"));
        };
        let value = value.trim();
        list_of = None;
        match key.trim() {
            "description" => agent.description = unquote(value).to_string(),
            "model" if !value.is_empty() => agent.model = Some(unquote(value).to_string()),
            "tools" if value.is_empty() => {
                list_of = Some("tools");
                agent.tools = Some(Vec::new());
            }
            "tools" => agent.tools = Some(list(value)),
            // Other agents' files name themselves or pick a colour.
            "name" | "color" | "model" => {}
            other => return Err(format!("line {at}: unknown key {other:?} (description, model and tools are read)")),
        }
    }
    if agent.description.trim().is_empty() {
        return Err("its front matter has no description (the model is told it, to choose the agent)".into());
    }
    if let Some(model) = &agent.model {
        crate::provider::select::ModelRef::parse(model).map_err(|e| format!("model: {e:#}"))?;
    }
    for glob in agent.tools.iter().flatten() {
        globset::Glob::new(glob).map_err(|e| format!("tools: {glob:?}: {e}"))?;
    }
    Ok(agent)
}

/// `[a, b]` or `a, b`: the items, unquoted.
fn list(value: &str) -> Vec<String> {
    let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(value);
    inner.split(',').map(|item| unquote(item.trim()).to_string()).filter(|item| !item.is_empty()).collect()
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_keys_lists_and_bad_files() {
        let file = Path::new("/a/reviewer.md");
        let agent = parse(
            "reviewer",
            "---\ndescription: Reviews a diff\nmodel: openai/gpt-4.1-mini\ntools: [read, 'grep']\n---\nYou review.\n",
            file,
        )
        .unwrap();
        assert_eq!(agent.description, "Reviews a diff");
        assert_eq!(agent.model.as_deref(), Some("openai/gpt-4.1-mini"));
        assert_eq!(agent.tools, Some(vec!["read".to_string(), "grep".to_string()]));
        assert_eq!(agent.system, "You review.");
        let agent =
            parse("r", "---\ndescription: \"x\"\ntools:\n  - read\n  - mcp__*\nname: r\n---\nbody", file).unwrap();
        assert_eq!(agent.tools, Some(vec!["read".to_string(), "mcp__*".to_string()]));
        assert_eq!(
            parse("r", "---\ndescription: x\ntools: ls, find\n---\n", file).unwrap().tools.unwrap(),
            ["ls", "find"]
        );
        for (text, why) in [
            ("no front matter", "no front matter"),
            ("---\ndescription: x\n", "does not end"),
            ("---\nmodel: a/b\n---\nbody", "no description"),
            ("---\ndescription: x\nsecret: y\n---\n", "unknown key \"secret\""),
            ("---\ndescription: x\nmodel: nope\n---\n", "model:"),
            ("---\ndescription: x\ntools: [\"[\"]\n---\n", "tools:"),
        ] {
            let err = parse("r", text, file).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_repository_wins_and_links_out_of_it_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("config");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(home.join("glrs/agents")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".glrs/agents")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        let agent = |d: &str| format!("---\ndescription: {d}\n---\nprompt of {d}\n");
        std::fs::write(home.join("glrs/agents/review.md"), agent("user's")).unwrap();
        std::fs::write(home.join("glrs/agents/tests.md"), agent("tests")).unwrap();
        std::fs::write(repo.join(".glrs/agents/review.md"), agent("repo's")).unwrap();
        std::fs::write(dir.path().join("outside.md"), agent("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.md"), repo.join(".glrs/agents/sneaky.md")).unwrap();
        std::fs::write(repo.join(".glrs/agents/notes.txt"), "not an agent").unwrap();
        let (agents, problems) = load(&agent_dirs(Some(&home), &repo.join("src")));
        let found: Vec<(&str, &str)> = agents.iter().map(|a| (a.name.as_str(), a.description.as_str())).collect();
        assert_eq!(found, [("review", "repo's"), ("tests", "tests")]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("sneaky.md") && problems[0].contains("outside the repository"), "{problems:?}");
        assert!(load(&agent_dirs(None, &dir.path().join("none"))).0.is_empty(), "no folder: no agents");
    }
}
