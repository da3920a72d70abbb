//! The system prompt (SPEC 14): a default part naming the tools, the cwd,
//! the date and the platform (replaced by `--system` or `systemPrompt`),
//! then every `AGENTS.md`: `$XDG_CONFIG_HOME/glrs/AGENTS.md`, then each one
//! from the repository root (the nearest folder above the cwd holding
//! `.git`, else `/`) down to the cwd. With the built-in tools off and no
//! replacement the default part is left out: a plain chat sends no system
//! prompt of its own.

use std::path::{Path, PathBuf};

/// The default part.
pub fn default_part(tools: &[String], cwd: &str, date: &str) -> String {
    let tools = if tools.is_empty() { "none".to_string() } else { tools.join(", ") };
    format!(
        "You are glrs, a coding agent working in the user's terminal. You can act on the user's machine through \
tools: {tools}. Use read, grep, find and ls to look before you change anything; use edit for changes to \
existing files and write for new ones; use bash to build, test and run commands. Calls that change things may \
need the user's permission; a denied call comes back as an error with the reason, so adjust rather than retry \
it. Keep answers short and concrete, and say what you changed.\n\n\
Working directory: {cwd}\nDate: {date}\nPlatform: {} ({})",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The `AGENTS.md` files that apply in `cwd`, in the order they are appended.
pub fn agents_files(config_home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = config_home {
        let global = home.join("glrs").join("AGENTS.md");
        if global.is_file() {
            files.push(global);
        }
    }
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    let root = ancestors.iter().position(|dir| dir.join(".git").exists()).unwrap_or(ancestors.len() - 1);
    for dir in ancestors[..=root].iter().rev() {
        let file = dir.join("AGENTS.md");
        if file.is_file() {
            files.push(file);
        }
    }
    files
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))
}

/// The text the `AGENTS.md` files add, each under a line naming it.
pub fn agents_text(files: &[PathBuf]) -> String {
    let mut out = String::new();
    for file in files {
        if let Ok(text) = std::fs::read_to_string(file)
            && !text.trim().is_empty()
        {
            out.push_str(&format!("\n\n# Instructions from {}\n\n{}", file.display(), text.trim()));
        }
    }
    out
}

/// The whole prompt, or `None` when there is nothing to send.
pub fn assemble(
    replacement: Option<&str>,
    builtin_tools: Option<&[String]>,
    cwd: &str,
    agents: &str,
) -> Option<String> {
    let base = match (replacement, builtin_tools) {
        (Some(text), _) => text.to_string(),
        (None, Some(tools)) => default_part(tools, cwd, &jiff::Zoned::now().strftime("%Y-%m-%d (%A)").to_string()),
        (None, None) => String::new(),
    };
    let whole = format!("{base}{agents}");
    let whole = whole.trim_start();
    (!whole.is_empty()).then(|| whole.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_files_from_the_config_then_root_down_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cwd = d.join("repo/app/src");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(d.join("repo/.git")).unwrap();
        std::fs::create_dir_all(d.join("conf/glrs")).unwrap();
        for (path, text) in [
            ("conf/glrs/AGENTS.md", "global"),
            ("AGENTS.md", "above the repo"),
            ("repo/AGENTS.md", "repo"),
            ("repo/app/src/AGENTS.md", "here"),
        ] {
            std::fs::write(d.join(path), text).unwrap();
        }
        let files = agents_files(Some(&d.join("conf")), &cwd);
        let names: Vec<String> = files.iter().map(|f| f.strip_prefix(d).unwrap().display().to_string()).collect();
        assert_eq!(names, ["conf/glrs/AGENTS.md", "repo/AGENTS.md", "repo/app/src/AGENTS.md"]);
        let text = agents_text(&files);
        assert!(text.find("global").unwrap() < text.find("repo").unwrap() && text.ends_with("here"));
        let tools = vec!["read".to_string(), "bash".to_string()];
        let prompt = assemble(None, Some(&tools), "/w", &text).unwrap();
        assert!(
            prompt.starts_with("You are glrs")
                && prompt.contains("tools: read, bash")
                && prompt.contains("Working directory: /w")
        );
        assert!(prompt.contains(std::env::consts::OS) && prompt.ends_with("here"));
        assert_eq!(assemble(Some("be brief"), Some(&tools), "/w", "").as_deref(), Some("be brief"));
        assert_eq!(assemble(None, None, "/w", ""), None);
        assert_eq!(assemble(None, None, "/w", "\n\n# x").as_deref(), Some("# x"));
    }
}
