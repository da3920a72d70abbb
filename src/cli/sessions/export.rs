//! `glrs-sessions export`: a session's transcript as Markdown, HTML or
//! JSON Lines, on stdout or into a file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use anyhow::{Context, Result};

use super::ExportArgs;
use crate::exit::ExitCode;
use crate::export::{self, Format};
use crate::store::Store;

pub fn run(store: &Store, args: &ExportArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let loaded = store.read(&at)?;
    let format = args.format.or_else(|| args.output.as_deref().and_then(Format::from_path)).unwrap_or(Format::Md);
    let text = export::export(&loaded.file, format);
    match &args.output {
        // On a terminal, escapes in the transcript (a reply's OSC 52 that
        // would set the clipboard) are shown, not obeyed; a pipe and a
        // file get the transcript as it is.
        None => out.write_all(crate::output::shown(&text, crate::output::stdout_is_terminal()).as_bytes())?,
        Some(path) => {
            // 0600 like every file glrs writes: a transcript is private.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            file.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(ExitCode::Success)
}
