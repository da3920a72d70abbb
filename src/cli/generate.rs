//! Man pages and shell completions, generated from the programs' argument
//! definitions (the same ones that parse arguments, so they cannot drift).
//! `glrs man` and `glrs completions SHELL` print or install them; the
//! copies committed in `man/` and `completions/` come from here too, and a
//! test fails while they are stale.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::manual;

/// The shells glrs writes completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// GNU Bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

impl Shell {
    /// Every shell completions are made for.
    pub const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    /// The file a program's completion goes in, named as each shell's
    /// loader looks for it: bash-completion loads `completions/NAME` when
    /// NAME is first completed, zsh autoloads `_NAME` from `$fpath`, fish
    /// loads `NAME.fish`.
    pub fn file_name(self, program: &str) -> String {
        match self {
            Shell::Bash => program.to_string(),
            Shell::Zsh => format!("_{program}"),
            Shell::Fish => format!("{program}.fish"),
        }
    }

    /// The shell's name, as `glrs completions` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }
}

/// Every program's command definition, `glrs` first.
pub fn programs() -> Vec<clap::Command> {
    vec![
        super::front::command(),
        super::chat::Args::command(),
        super::sessions::Args::command(),
        super::fork::Args::command(),
        super::compact::Args::command(),
        super::artifacts::Args::command(),
    ]
}

/// One program's completion script for `shell`: it calls the program back
/// to answer each request (see [`super::complete`]).
pub fn completion(shell: Shell, cmd: &clap::Command) -> Vec<u8> {
    super::complete::script(shell.name(), cmd.get_name()).unwrap_or_default().into_bytes()
}

/// Every completion file, by its path under `completions/`
/// (`bash/glrs-sessions`, `zsh/_glrs-sessions`, `fish/glrs-sessions.fish`).
pub fn completions() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for cmd in programs() {
        for shell in Shell::ALL {
            let path = Path::new(shell.name()).join(shell.file_name(cmd.get_name()));
            files.push((path, completion(shell, &cmd)));
        }
    }
    files
}

/// Every man page, by file name (`glrs-sessions.1`, `glrs-sessions-ls.1`).
/// A program's page has clap's NAME, SYNOPSIS, OPTIONS and COMMANDS with
/// the sections of [`manual`] around them; a subcommand's page is clap's
/// with a SEE ALSO naming its program.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let mut pages = Vec::new();
    for cmd in programs() {
        let name = cmd.get_name().to_string();
        let mut cmd = cmd.disable_help_subcommand(true);
        cmd.build();
        pages.push((format!("{name}.1"), manual::program_page(&cmd)));
        // `glrs`'s subcommands are other programs (their own pages) or
        // described on its page; the others get a page each.
        if name != "glrs" {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                pages.push(manual::subcommand_page(sub.clone(), &name));
            }
        }
    }
    pages
}

/// Write files into `dir` (created when missing).
pub fn write_all(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
