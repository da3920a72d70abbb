//! Shell completion in real bash (through bash-completion's lazy loading),
//! zsh (compinit from `fpath`, in a terminal) and fish: subcommands, flags,
//! `glrs NAME …`, and session ids with their titles where the shell shows
//! descriptions. The scripts are the committed ones in `completions/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

const U1: &str = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"fix the login test"}"#;
const U2: &str = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"plan the release"}"#;

fn completions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("completions")
}

/// A store with two sessions, and a PATH that finds this build's programs.
fn setup() -> (TestStore, String) {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/w", &[U2]);
    std::fs::write(ts.dir.path().join("somefile.txt"), "a file the shells must not offer").unwrap();
    let id = glrs::SessionId::parse("aaaa0001").unwrap();
    let mut info = glrs::compact::artifact::ArtifactInfo {
        file: Default::default(),
        session: id.to_string(),
        created_at: "2026-11-02T10:00:00.000Z".into(),
        label: "the login fix".into(),
        messages: 1,
        note: String::new(),
        entries: "1-1".into(),
    };
    let block = glrs::compact::plan::Block { tag: "user".into(), text: "x".into() };
    glrs::compact::artifact::write_new(&ts.store, &id, &mut info, &[block]).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_glrs-sessions")).parent().unwrap().display().to_string();
    (ts, format!("{bin}:/usr/bin:/bin"))
}

/// Each case's candidates, as a shell printed them between `---` lines.
fn blocks(out: &str) -> Vec<Vec<String>> {
    out.split("---\n").map(|b| b.lines().map(str::to_string).collect()).collect()
}

#[test]
fn bash_loads_lazily_and_completes_subcommands_flags_and_ids() {
    require("bash");
    require_file("/usr/share/bash-completion/bash_completion", "bash-completion");
    let (ts, path) = setup();
    // bash-completion looks in $BASH_COMPLETION_USER_DIR/completions/NAME.
    let user_dir = ts.dir.path().join("bash-completion");
    std::fs::create_dir_all(user_dir.join("completions")).unwrap();
    for entry in std::fs::read_dir(completions().join("bash")).unwrap().flatten() {
        std::fs::copy(entry.path(), user_dir.join("completions").join(entry.file_name())).unwrap();
    }
    let script = r#"
source /usr/share/bash-completion/bash_completion
t() {
    __load_completion "$1" || { echo "nothing loaded for $1"; return; }
    local spec func; spec=$(complete -p "$1") || return
    func=${spec#*-F }; func=${func%% *}
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
    COMPREPLY=()
    "$func" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\n' "${COMPREPLY[@]}"
    echo ---
}
t glrs-sessions ls --j
t glrs sessions ''
t glrs-sessions show ''
t glrs-chat --resume b
t glrs sessions export a
t glrs-fork ''
t glrs-artifacts cat ''
t glrs-artifacts rm a
t glrs-artifacts annotate ''
"#;
    let mut cmd = ts.std_cmd("bash");
    cmd.args(["--norc", "--noprofile", "-c", script]).env("PATH", &path).env("BASH_COMPLETION_USER_DIR", &user_dir);
    let out = run_bounded(&mut cmd, Duration::from_secs(60), "bash completing");
    let text = stdout_of(&out);
    let b = blocks(&text);
    assert_eq!(b[0], ["--json", "--jsonl"], "{text}");
    assert!(b[1].contains(&"ls".to_string()) && b[1].contains(&"export".to_string()), "{text}");
    assert!(!b[1].iter().any(|c| c.contains("somefile")), "{text}");
    assert_eq!(b[2][..2], ["bbbb0002", "aaaa0001"], "ids, newest first: {text}");
    assert_eq!(b[3], ["bbbb0002"], "{text}");
    assert_eq!(b[4], ["aaaa0001"], "{text}");
    assert!(b[5].contains(&"aaaa0001".to_string()), "{text}");
    // Artifacts (issue 24.11): ID/NAME.md, and for cat the session too.
    let artifact = format!("aaaa0001/{}", artifact_name(&ts));
    assert_eq!(b[6][..2], ["aaaa0001", artifact.as_str()], "{text}");
    assert_eq!(b[7], [artifact.as_str()], "{text}");
    assert_eq!(b[8][..1], [artifact.as_str()], "{text}");
}

/// The file name of the one artifact `setup` writes.
fn artifact_name(ts: &TestStore) -> String {
    let dir = ts.sessions_dir().join("artifacts/aaaa0001");
    let names: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn fish_completes_ids_with_their_titles() {
    require("fish");
    let (ts, path) = setup();
    let script = format!(
        "set -p fish_complete_path {}; \
         for line in 'glrs-sessions show ' 'glrs sessions ' 'glrs-sessions ls --j' 'glrs-chat --resume a' \
         'glrs-artifacts cat ' 'glrs-artifacts annotate a'; \
         complete -C $line; echo ---; end",
        completions().join("fish").display()
    );
    let mut cmd = ts.std_cmd("fish");
    cmd.args(["--no-config", "-c", &script]).env("PATH", &path);
    let out = run_bounded(&mut cmd, Duration::from_secs(60), "fish completing");
    let text = stdout_of(&out);
    let b = blocks(&text);
    assert!(b[0].contains(&"bbbb0002\tplan the release".to_string()), "{text}");
    assert!(b[0].contains(&"aaaa0001\tfix the login test".to_string()), "{text}");
    assert!(b[1].iter().any(|c| c.starts_with("show\t")) && !b[1].iter().any(|c| c.contains("somefile")), "{text}");
    assert_eq!(b[2].iter().map(|c| c.split('\t').next().unwrap()).collect::<Vec<_>>(), ["--json", "--jsonl"]);
    assert_eq!(b[3], ["aaaa0001\tfix the login test"], "{text}");
    let artifact = format!("aaaa0001/{}\tthe login fix", artifact_name(&ts));
    assert_eq!(b[4][..2], ["aaaa0001\tits newest artifact", artifact.as_str()], "{text}");
    assert_eq!(b[5], [artifact.as_str()], "{text}");
}

#[test]
fn zsh_completes_from_fpath_with_descriptions() {
    require("zsh");
    let (ts, path) = setup();
    let mut cmd = ts.std_cmd("zsh");
    cmd.args(["-f", "-i"]).env("PATH", &path).env("TERM", "xterm").env("HOME", ts.dir.path());
    // Escapes are kept (zsh's are not all ones rexpect can strip); the
    // listing lines themselves are plain.
    let mut p = rexpect::session::spawn_with_options(cmd, rexpect::reader::Options::new().timeout_ms(Some(20_000)))
        .expect("zsh in a pty");
    let fpath = completions().join("zsh");
    p.send_line(&format!("fpath=({} $fpath); autoload -U compinit; compinit -u -D; PS1='READY%% '", fpath.display()))
        .unwrap();
    p.exp_string("READY% ").expect("zsh's prompt after compinit");
    p.send("glrs-sessions show \t").unwrap();
    p.flush().unwrap();
    p.exp_regex(r"bbbb0002\s+-- plan the release").expect("an id with its title");
    p.exp_regex(r"aaaa0001\s+-- fix the login test").expect("the other id with its title");
    p.send("\x03").unwrap();
    p.flush().unwrap();
    p.exp_string("READY% ").unwrap();
    p.send("glrs sessions \t").unwrap();
    p.flush().unwrap();
    let (before, _) = p.exp_regex(r"cleanup\s+-- ").expect("glrs-sessions' subcommands after glrs sessions");
    assert!(!before.contains("somefile"), "{before}");
    p.send("\x03").unwrap();
    p.flush().unwrap();
    p.exp_string("READY% ").unwrap();
    p.send_line("exit").unwrap();
    p.exp_eof().expect("zsh to exit");
}
