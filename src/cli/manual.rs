//! The prose of the man pages: what clap cannot know (DESCRIPTION beyond the
//! one-paragraph summary, FILES, ENVIRONMENT, EXIT STATUS, EXAMPLES, SEE
//! ALSO), put around clap's own NAME, SYNOPSIS, OPTIONS and COMMANDS. The
//! examples are the README's recipes.

use roff::{Roff, bold, italic, roman};

/// What one program's page says beyond its arguments.
struct Page {
    program: &'static str,
    /// Paragraphs after clap's description.
    description: &'static [&'static str],
    /// Exit codes beyond the common ones, `(code, meaning)`.
    exit: &'static [(&'static str, &'static str)],
    /// `(what it does, the command)`.
    examples: &'static [(&'static str, &'static str)],
}

const PAGES: &[Page] = &[
    Page {
        program: "glrs",
        description: &[
            "Its own commands: glrs man and glrs completions SHELL print (or with --dir, install) the man pages \
             and shell completions; glrs config path and glrs config show print the config file's path and its \
             contents with secrets as ***; glrs models lists the providers and models that can be used, their \
             context windows, and the key each needs and whether it is set; glrs help NAME prints a program's help.",
        ],
        exit: &[],
        examples: &[
            ("Start the REPL (with no model set up, it says how to set one up):", "glrs"),
            ("One turn from a script: the reply on stdout, the session id on stderr:", "glrs -p \"name three primes\""),
            ("Install the man pages for your user:", "glrs man --dir ~/.local/share/man/man1"),
            (
                "Install bash completions where bash-completion finds them:",
                "glrs completions bash --dir ~/.local/share/bash-completion/completions",
            ),
            ("Fish completions:", "glrs completions fish --dir ~/.config/fish/completions"),
            ("What can be used, and which keys are missing:", "glrs models"),
        ],
    },
    Page {
        program: "glrs-chat",
        description: &[
            "With -p PROMPT, a positional PROMPT, or a prompt on a non-terminal stdin, glrs-chat runs one turn: \
             the reply is streamed to stdout and nothing else, and the session id is printed as the last line on \
             stderr. When a prompt argument is given and stdin is not a terminal, stdin's text is attached to the \
             message after the prompt. An empty prompt is refused (exit 2). A new session whose first model call \
             fails is not kept; a resumed session keeps an error entry.",
            "In the REPL, the prompt shows the session id, the model and how full the context is. Replies stream \
             as they arrive; Esc or Ctrl-C stops a turn and keeps what arrived; a line typed during a turn joins it \
             as a steer. Slash commands: /help, /status, /sessions, /resume [ID], /model [M], /thinking [LEVEL], \
             /sandbox [MODE], /new, /reset, /fork [N], /rewind, /compact [instruction], /clear, /artifacts, /export [FILE], /mcp, /quit.",
        ],
        exit: &[
            ("130", "a one-shot turn was stopped with Ctrl-C (what arrived is kept)"),
            ("129", "a turn was stopped by SIGHUP (what arrived is kept)"),
            ("143", "a turn was stopped by SIGTERM (what arrived is kept)"),
        ],
        examples: &[
            (
                "One turn, the reply on stdout:",
                "echo \"summarise README.md\" | glrs-chat -m anthropic/claude-sonnet-4-5",
            ),
            ("Attach a file to a prompt:", "cat notes.txt | glrs-chat -p \"summarise this\""),
            ("Keep the id (it is on stderr):", "id=$(glrs-chat -p \"name three primes\" 2>&1 >/dev/null | tail -1)"),
            ("Go on with it from a script:", "glrs-chat --resume \"$id\" -p \"and their sum?\" --json | jq -r .reply"),
            ("A session per key, reset daily:", "glrs-chat --key work"),
        ],
    },
    Page {
        program: "glrs-sessions",
        description: &[
            "grep searches what a person reads (user and assistant text, tool calls and results, reasoning, \
             notices, errors, briefs) with Rust regex syntax and exits 1 when nothing matched, 2 for an invalid \
             pattern, like grep(1). A corrupt or newer-schema file never hides the others: it is named in a warning.",
        ],
        exit: &[("1", "also: grep found nothing")],
        examples: &[
            ("Pick a session with a preview:", "glrs-sessions ls | fzf --preview 'glrs-sessions show {1}'"),
            ("Sessions that mention something:", "glrs-sessions grep -i 'redirect' | cut -f1 | sort -u"),
            ("Token and cost totals:", "glrs-sessions status 3f9a --json | jq .usage"),
            ("See what cleanup would remove:", "glrs-sessions cleanup --dry-run"),
        ],
    },
    Page {
        program: "glrs-fork",
        description: &[
            "The new id is printed on stdout. N is an entry number as glrs-sessions show prints it; an N of 0, past \
             the end, or between a tool call and its result is refused with the numbers that would work.",
        ],
        exit: &[],
        examples: &[
            ("Copy a whole session:", "glrs-fork 3f9a"),
            ("Try another direction from entry 12:", "glrs-chat --resume \"$(glrs-fork 3f9a 12)\""),
        ],
    },
    Page {
        program: "glrs-compact",
        description: &[
            "glrs-compact ID prints one line: ID: compacted, BEFORE → AFTER tokens, artifact PATH (or ID: nothing to \
             compact). With --all it prints such a line per session acted on, a progress bar only when stderr is a \
             terminal, skips sessions open in a chat, and exits 1 only when one failed. With --quiet it prints \
             nothing at all unless something failed, so cron mails only failures.",
            "Under cron, PATH is /usr/bin:/bin and the login shell's environment is absent: name the program by \
             its full path, and give the key through providers.ID.apiKeyCommand in the config (or a variable set \
             in the crontab).",
        ],
        exit: &[],
        examples: &[
            ("Compact one session now:", "glrs-compact 3f9a"),
            ("Steer what the brief keeps:", "glrs-compact 3f9a --instruction \"keep the deploy steps\""),
            (
                "Crontab line: compact overnight, mail only failures:",
                "0 3 * * *  $HOME/.cargo/bin/glrs-compact --all --quiet",
            ),
        ],
    },
    Page {
        program: "glrs-artifacts",
        description: &[
            "Artifacts are plain Markdown with front matter (session, createdAt, entries, messages, label, note), \
             one file per compaction, made 0600 in folders made 0700.",
        ],
        exit: &[],
        examples: &[
            ("Every session's artifacts:", "glrs-artifacts ls --all"),
            ("The newest artifact of a session:", "glrs-artifacts cat 3f9a"),
            ("Artifacts are plain Markdown:", "grep -rl 'redirect.ts' \"$(glrs-artifacts path)\""),
        ],
    },
];

const FILES: &[(&str, &str)] = &[
    ("$XDG_DATA_HOME/glrs/sessions/ID.json", "A session (else under ~/.local/share/glrs/sessions/). Made 0600."),
    ("$XDG_DATA_HOME/glrs/sessions/prompts.json", "Prompt history of all sessions, the REPL's Up arrow."),
    ("$XDG_DATA_HOME/glrs/sessions/artifacts/ID/", "Compaction artifacts of session ID, one Markdown file each."),
    ("$XDG_DATA_HOME/glrs/sessions/keys.json", "Session keys: which session each key continues."),
    ("$XDG_DATA_HOME/glrs/sessions/.index", "A cache of session summaries for fast listing; safe to delete."),
    ("$XDG_DATA_HOME/glorious/sessions/", "Legacy sessions: listed and read, never written."),
    (
        "$XDG_CONFIG_HOME/glrs/config.json",
        "The config (else ~/.config/glrs/config.json); GLRS_CONFIG names another file.",
    ),
];

const ENVIRONMENT: &[(&str, &str)] = &[
    ("GLRS_MODEL", "The model, as provider/model-id, over the config's model."),
    ("GLRS_CONFIG", "The config file to read instead of $XDG_CONFIG_HOME/glrs/config.json."),
    ("XDG_DATA_HOME", "Where the store is (glrs/sessions under it); else ~/.local/share. A relative value is ignored."),
    ("XDG_CONFIG_HOME", "Where the config is (glrs/config.json under it); else ~/.config."),
    ("NO_COLOR", "When set, no colour, even on a terminal."),
    ("OPENAI_API_KEY", "The key of the openai provider."),
    ("ANTHROPIC_API_KEY", "The key of the anthropic provider."),
    ("AZURE_OPENAI_API_KEY", "The key of the azure provider."),
];

const COMMON_EXIT: &[(&str, &str)] = &[
    ("0", "success"),
    ("1", "failure (the error on stderr names the file or id)"),
    ("2", "usage error, or an argument that is not a session id"),
    ("4", "the session is open in another program (the error names its pid)"),
];

const PROGRAMS: &[&str] = &["glrs", "glrs-chat", "glrs-sessions", "glrs-fork", "glrs-compact", "glrs-artifacts"];

/// Render `roff` without the preamble every `Roff` writes first, for a
/// section placed after the page's first.
fn section(roff: &Roff) -> Vec<u8> {
    let text = roff.render();
    let body: Vec<&str> =
        text.lines().skip_while(|l| l.starts_with(".ie \\n(.g") || l.starts_with(".el .ds")).collect();
    let mut out = body.join("\n").into_bytes();
    out.push(b'\n');
    out
}

fn clap_part(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>, first: bool) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = render(&mut out);
    if first {
        return out;
    }
    let text = String::from_utf8_lossy(&out);
    let mut body: String = text
        .lines()
        .skip_while(|l| l.starts_with(".ie \\n(.g") || l.starts_with(".el .ds"))
        .collect::<Vec<_>>()
        .join("\n");
    body.push('\n');
    body.into_bytes()
}

/// A program's page: clap's sections with this module's around them.
pub fn program_page(cmd: &clap::Command) -> Vec<u8> {
    let name = cmd.get_name();
    let page = PAGES.iter().find(|p| p.program == name);
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = clap_part(|w| man.render_title(w), true);
    out.extend(clap_part(|w| man.render_name_section(w), false));
    out.extend(clap_part(|w| man.render_synopsis_section(w), false));
    out.extend(clap_part(|w| man.render_description_section(w), false));
    let mut prose = Roff::new();
    for paragraph in page.map_or(&[][..], |p| p.description) {
        prose.control("PP", []).text([roman(*paragraph)]);
    }
    out.extend(section(&prose));
    out.extend(clap_part(|w| man.render_options_section(w), false));
    if cmd.get_subcommands().next().is_some() {
        out.extend(clap_part(|w| man.render_subcommands_section(w), false));
    }
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    let extra = page.map_or(&[][..], |p| p.exit);
    for (code, meaning) in COMMON_EXIT.iter().chain(extra) {
        r.control("TP", []).text([bold(*code)]).text([roman(*meaning)]);
    }
    r.control("SH", ["ENVIRONMENT"]);
    for (var, meaning) in ENVIRONMENT {
        r.control("TP", []).text([bold(*var)]).text([roman(*meaning)]);
    }
    r.control("PP", []).text([roman("A provider configured with apiKeyEnv reads its key from that variable; with apiKeyCommand, from the command's output.")]);
    r.control("SH", ["FILES"]);
    for (path, meaning) in FILES {
        r.control("TP", []).text([italic(*path)]).text([roman(*meaning)]);
    }
    r.control("PP", []).text([roman("Folders are made 0700 and files 0600: sessions hold private conversations.")]);
    let examples = page.map_or(&[][..], |p| p.examples);
    if !examples.is_empty() {
        r.control("SH", ["EXAMPLES"]);
        for (what, command) in examples {
            r.control("PP", []).text([roman(*what)]);
            r.control("RS", ["4"]).control("nf", []).text([bold(*command)]).control("fi", []).control("RE", []);
        }
    }
    see_also(&mut r, name);
    out.extend(section(&r));
    out.extend(clap_part(|w| man.render_version_section(w), false));
    out
}

/// A subcommand's page (`glrs-sessions-ls.1`): clap's, plus SEE ALSO.
pub fn subcommand_page(sub: clap::Command, program: &str) -> (String, Vec<u8>) {
    let man = clap_mangen::Man::new(sub);
    let name = man.get_filename();
    let mut out = clap_part(|w| man.render(w), true);
    let mut r = Roff::new();
    see_also(&mut r, program);
    out.extend(section(&r));
    (name, out)
}

fn see_also(r: &mut Roff, name: &str) {
    r.control("SH", ["SEE ALSO"]);
    let others: Vec<String> = PROGRAMS.iter().filter(|p| **p != name).map(|p| format!("{p}(1)")).collect();
    r.text([roman(format!(
        "{}. GUIDE.md (beside the README) tells how to use glrs, docs/config.md every config key, docs/store.md the session files.",
        others.join(", ")
    ))]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_has_its_page_and_the_sections_are_there() {
        for program in PROGRAMS {
            assert!(PAGES.iter().any(|p| p.program == *program), "{program} has no page text");
        }
        let page =
            String::from_utf8(program_page(&<crate::cli::compact::Args as clap::CommandFactory>::command())).unwrap();
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"]
        {
            assert!(
                page.contains(&format!(".SH {heading}")) || page.contains(&format!(".SH \"{heading}\"")),
                "{heading}"
            );
        }
        assert!(page.contains(".SH \"SEE ALSO\""), "{page}");
        assert!(page.contains("glrs\\-compact \\-\\-all \\-\\-quiet"), "the cron line: {page}");
        assert_eq!(page.matches(".ie \\n(.g").count(), 1, "one preamble");
    }

    #[test]
    fn the_chat_page_names_every_slash_command_and_exit_status_and_no_paragraph_twice() {
        // Issue 24.12: the page agrees with the program.
        let chat = PAGES.iter().find(|p| p.program == "glrs-chat").unwrap();
        let text = chat.description.join(" ");
        for command in crate::chat::slash::Command::LISTED.map(crate::chat::slash::Command::name) {
            let named = [" ", ",", "."].iter().any(|after| text.contains(&format!("{command}{after}")));
            assert!(named, "{command}");
        }
        let codes: Vec<&str> = chat.exit.iter().map(|(c, _)| *c).collect();
        for code in ["129", "130", "143"] {
            assert!(codes.contains(&code), "{code}");
        }
        for page in PAGES {
            let command = crate::cli::generate::programs().into_iter().find(|c| c.get_name() == page.program);
            let about = command.and_then(|c| c.get_long_about().map(|a| a.to_string())).unwrap_or_default();
            for paragraph in page.description {
                let first = paragraph.split(". ").next().unwrap_or_default();
                assert!(!about.contains(first), "{}: said by clap already: {first}", page.program);
            }
        }
    }
}
